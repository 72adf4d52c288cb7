"""Cheat probe (issue 42: with Python under /root the candidate ran as root, read the verdict channel's key from
`/proc/<judge>/mem` and wrote its own verdict): opens the judge's (its parent's) and, without a PID namespace,
the runner's (its grandparent's; in a namespace that is the namespace's init, which holds no key) `mem`, `maps`,
`environ` and every descriptor (the result pipe among them). It answers wrongly whenever one of them opened, so `correct` says every one was refused: the judge and the runner are non-dumpable and a root
candidate holds no capabilities (`runner.child.separation`; flag `candidate_same_user` where it runs as the
judge's user, as on a host whose Python lives under /root)."""

import os

import torch.nn as nn


def _reachable():
    opened = []
    parent = os.getppid()
    with open(f"/proc/{parent}/stat") as fh:
        grandparent = int(fh.read().rsplit(")", 1)[1].split()[1])
    for pid in (parent, grandparent) if grandparent != 1 else (parent,):
        names = ["mem", "maps", "environ"]
        try:
            names += [f"fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]  # listed (root owns the folder), not opened
        except OSError:
            pass
        for name in names:
            try:
                with open(f"/proc/{pid}/{name}", "rb" if not name.startswith("fd/") else "ab"):
                    opened.append(f"{pid}/{name}")
            except OSError:
                pass
    return opened


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.opened = _reachable()

    def forward(self, a, b):
        out = triton_add(a, b)
        return out + 1.0 if self.opened else out
