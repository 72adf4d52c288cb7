"""Command-line text output is inert (issue 45): a program's message wrote the operator's clipboard (OSC 52),
cleared the screen and faked `status: ok` with a carriage return through `runner eval` and `runner submit --wait`."""

from __future__ import annotations

import os
import subprocess
import sys

from common.terminal import inert
from runner.__main__ import summary
from runner.result import RunResult
from runner.service.client import _print_job
from tests.programs import BASE, HERE

HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\u202egnp.exe\rstatus: ok"
CONTROLS = ("\x1b", "\x07", "\r", "\x9b", "\u202e")


def _assert_inert(text: str) -> None:
    assert not any(c in text for c in CONTROLS), repr(text)
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b31m\\u202egnp.exe\\x0dstatus: ok" in text, repr(text)


def test_inert_keeps_newlines_and_tabs_and_shows_the_rest():
    assert inert("a\n\tb") == "a\n\tb"
    _assert_inert(inert(HOSTILE))


def test_eval_summary_is_inert():
    r = RunResult.failed("runtime_error", HOSTILE, traceback=f"Traceback\nRuntimeError: {HOSTILE}").completed(
        id="x", row_id=None, program_sha256="0" * 64, duration_s=1.0)
    _assert_inert(summary(r))


def test_submit_output_is_inert(capsys):
    _print_job({"id": "j1", "state": "done", "result": {"status": "failed", "error_type": "runtime_error",
                                                       "message": HOSTILE}}, as_json=False)
    _assert_inert(capsys.readouterr().out)


def test_runner_eval_prints_a_programs_escapes_inert(tmp_path):
    program = tmp_path / "hostile.py"
    program.write_text(BASE + f"\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                              f"        raise RuntimeError({HOSTILE!r})\n")
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "TLX_RUNNER_PREWARM": "0"}
    done = subprocess.run([sys.executable, "-m", "runner", "eval", str(program), "--device", "cpu", "--trials", "1"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    _assert_inert(done.stdout)


def test_the_services_request_log_is_inert(capsys):
    """A client's request line reaches the service's stderr (the operator's terminal) inert."""
    from runner.service.http import Handler

    handler = object.__new__(Handler)
    handler.client_address = ("127.0.0.1", 40000)
    handler.log_message('"%s" %s %s', f"GET /{HOSTILE} HTTP/1.1", "404", "-")
    _assert_inert(capsys.readouterr().err)
