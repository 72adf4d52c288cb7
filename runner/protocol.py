"""The runner's protocol between the sandbox (`runner.sandbox.run`, the parent) and its judge (`runner.child.main`,
the child), and between the judge and its candidate process (`runner.child.candidate_client`).

The result channel is a pipe of JSON lines, one object each, named by its `EVENT` field: `STAGE` (the judge's
current step, `{"event": "stage", "stage": text}`), `GATE` (a request for the GPU gate, `{"event": "gate", "mode":
SHARED | EXCLUSIVE | RELEASE}`, the judge's own or one it relays for the candidate) and one `RESULT` at the end
(`{"event": "result", "key": the job's channel key, "result": RunResult.to_dict()}`). Its two ends: the child's
`ChannelWriter` (`runner.child.main`) and the parent's `ChannelReader` (`runner.sandbox.run`). A gate request is
answered with a `GO` line on the child's spec pipe once the parent holds the gate (`runner.gpu.gate`).
`STACKS_SIGNAL` asks the judge and its candidate to print their Python stacks (faulthandler), sent before a
timeout kill."""

from __future__ import annotations

import signal

EVENT = "event"  # the field of a channel line that names its event
STAGE, GATE, RESULT = "stage", "gate", "result"  # the events
SHARED, EXCLUSIVE, RELEASE = "shared", "exclusive", "release"  # the modes of a gate request
GO = b"go"  # the answer to a gate request, one line on the spec pipe
STACKS_SIGNAL = signal.SIGUSR1
# The candidate's flag for a harness failure: its own warm-up (the CUDA context and a Triton kernel of the runner's,
# before any job) raised in its process, so a Triton launch of the program can fail there for the process's sake
# (on an H100, once in ~250 forked candidates, Triton's `cuda_utils.c` build failed under gcc). A failed job with
# it runs once more in fresh processes (`runner.gpu.oom_rerun`).
WARM_UP_FAILED_FLAG = "harness_warm_up_failed"
