"""The candidate's process is forked from the judge's with torch and triton imported (issue 43,
`runner.child.fork`): it spends no CPU on imports, and it starts as a fresh one would: only its socket to the
judge open, its own folder, environment and user, nothing of the judge's job in reach."""

from __future__ import annotations

import json

import pytest

from runner.options import EvalOptions
from runner.sandbox.run import close_spares, evaluate_in_sandbox
from tests.programs import BASE

REPORT = BASE + '''

import json
import os


class ModelNew(nn.Module):
    def forward(self, a, b):
        fds = {}
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                fds[fd] = "?"
        seen = {"fds": fds, "uid": os.getuid(), "cwd": os.getcwd(), "home": os.environ.get("HOME")}
        raise RuntimeError("SEEN " + json.dumps(seen))
'''


@pytest.fixture(autouse=True)
def _spares():
    yield
    close_spares()


def test_the_forked_candidate_starts_clean_and_warm(tmp_path):
    r = evaluate_in_sandbox(REPORT, EvalOptions(device="cpu", timeout_s=120, trials=1, work_root=str(tmp_path)),
                            result_id="fork")
    assert "SEEN " in r.message, r.message
    seen = json.loads(r.message.split("SEEN ", 1)[1].rstrip(")").split(" (interpreted")[0])
    extra = {fd: target for fd, target in seen["fds"].items() if int(fd) > 2}
    # its end of the socket pair, and the descriptor listdir itself opened: no pipe (spec, verdict), no lock
    assert sum(t.startswith("socket:") for t in extra.values()) == 1, extra
    assert not [t for t in extra.values() if t.startswith("pipe:")], extra
    assert seen["cwd"].endswith("/candidate") and seen["home"] == seen["cwd"], seen
    # the imports came with the fork: the candidate's warm-up CPU is its own CUDA warm-up only (none here)
    assert r.cpu_s["candidate_warm"] < 0.5, r.cpu_s
    assert r.warm_up_s["candidate_imports"] < 0.5, r.warm_up_s
