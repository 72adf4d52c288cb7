"""`evaluate_cancellable`: `runner.sandbox.evaluate_in_sandbox` plus a way to kill the sandbox from another thread.

The sandbox has no cancel hook, so each call gets its own scratch folder as `EvalOptions.work_root`; the sandbox
child's command line names its program file inside that folder. When the `cancel` event is set, a watcher finds
the `runner.child` process whose arguments point into the folder and kills its process group (the child leads its
own session), retrying until the evaluation returns so that a cancel that races the child's start still lands.
The evaluation then ends with the sandbox's own `crashed` verdict, which the caller discards.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

WATCH_S = 0.2


def kill_sandboxes_under(folder: Path) -> int:
    """SIGKILL the process group of every `runner.child` whose arguments point into `folder`; returns the count."""
    prefix = (str(folder) + os.sep).encode()
    killed = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if b"runner.child" not in args or not any(a.startswith(prefix) for a in args):
                continue
            if os.getpgid(int(pid)) == int(pid):  # a group leader: the sandbox child itself
                os.killpg(int(pid), signal.SIGKILL)
                killed += 1
        except (OSError, ProcessLookupError):
            continue
    return killed


def evaluate_cancellable(
    program: str, settings: dict[str, Any], *, result_id: str, row_id: str | None,
    visible_devices: str | None, cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """One sandboxed evaluation of `program` with run settings (`run_keys.run_settings`); a result dict."""
    from runner.options import EvalOptions
    from runner.sandbox import evaluate_in_sandbox

    options = EvalOptions.from_dict({**settings, "visible_devices": visible_devices})
    if cancel is None:
        return evaluate_in_sandbox(program, options, result_id=result_id, row_id=row_id).to_dict()
    scratch = Path(tempfile.mkdtemp(prefix="tlx-job-", dir=options.work_root))
    done = threading.Event()

    def watch() -> None:
        while not done.wait(WATCH_S):
            if cancel.is_set():
                kill_sandboxes_under(scratch)

    watcher = threading.Thread(target=watch, name="sandbox-cancel", daemon=True)
    watcher.start()
    try:
        options = dataclasses.replace(options, work_root=str(scratch))
        return evaluate_in_sandbox(program, options, result_id=result_id, row_id=row_id).to_dict()
    finally:
        done.set()
        watcher.join()
        shutil.rmtree(scratch, ignore_errors=True)
