"""The parent's end of a job's result channel (`runner.sandbox.run.ChannelReader`): gate requests are answered once
held, and a job's claim on the GPU runs from its first request to its end, once, however the job ends."""

from __future__ import annotations

import json
import os
import threading

from runner.gpu.gate import EXCLUSIVE, RELEASE, SHARED
from runner.sandbox.run import ChannelReader


class RecordingGate:
    """A gate that grants at once and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def claim(self, on: bool) -> None:
        self.calls.append(("claim", on))

    def acquire(self, mode: str, abort: threading.Event | None = None) -> bool:
        self.calls.append(("acquire", mode))
        return True

    def release(self, mode: str) -> None:
        self.calls.append(("release", mode))


def _channel(events: list[dict], ended_first: bool = False) -> tuple[RecordingGate, bytes]:
    """Feeds `events` to a channel as a child would (after the job's end when `ended_first`), then ends the
    child's stream and the job (`close_gate`)."""
    gate = RecordingGate()
    result_r, result_w = os.pipe()
    control_r, control_w = os.pipe()
    channel = ChannelReader(result_r, "key", gate, control_w)
    if ended_first:
        channel.close_gate()
    channel.start()
    with os.fdopen(result_w, "w") as child:
        for event in events:
            child.write(json.dumps(event) + "\n")
    channel.join(10)
    channel.close_gate()  # the job's end, after the stream's: nothing is released or unclaimed twice
    os.close(control_w)
    with os.fdopen(control_r, "rb") as answers:
        return gate, answers.read()


def test_a_job_claims_the_gpu_from_its_first_request_to_its_end():
    gate, answers = _channel([{"event": "stage", "stage": "load"}, {"event": "gate", "mode": SHARED},
                              {"event": "gate", "mode": RELEASE}, {"event": "gate", "mode": EXCLUSIVE}])
    assert gate.calls == [("claim", True), ("acquire", SHARED), ("release", SHARED), ("acquire", EXCLUSIVE),
                          ("release", EXCLUSIVE), ("claim", False)]
    assert answers == b"go\ngo\n"


def test_a_job_that_never_asks_claims_nothing():
    gate, answers = _channel([{"event": "stage", "stage": "load"}])
    assert gate.calls == [] and answers == b""


def test_a_request_after_the_job_ended_is_neither_claimed_nor_granted():
    gate, answers = _channel([{"event": "gate", "mode": SHARED}, {"event": "gate", "mode": EXCLUSIVE}],
                             ended_first=True)
    assert gate.calls == [] and answers == b""
