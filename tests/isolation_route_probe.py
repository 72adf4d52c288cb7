"""What a route program's ModelNew does (appended after `ROUTES` by tests/test_isolation.py's `program`): try
every route, then fail with what each gave, as JSON in the message (`OUTCOMES {...}`)."""

import json
import subprocess

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        outcomes = {}
        for name, route in ROUTES.items():
            try:
                route()
                outcomes[name] = "done"
            except subprocess.CalledProcessError as exc:
                outcomes[name] = f"exit {exc.returncode}: {exc.stderr.decode(errors='replace').strip()[-120:]}"
            except Exception as exc:
                outcomes[name] = f"{type(exc).__name__}: {exc}"[:160]
        raise RuntimeError("OUTCOMES " + json.dumps(outcomes))
