"""A process's /proc/PID/stat, read by every wing of the runner (the sandbox, the judge, the triage worker)."""

from __future__ import annotations


def stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (which may hold spaces and parentheses): state, ppid,
    pgrp, ... (`man 5 proc`, from field 3: [19] is the start time). OSError where there is no such process."""
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()
