"""Secrets out of results: the runner's token and every secret-looking value of the runner's environment are
replaced by `[redacted]` in every string of a result before it is logged or served (issue 27: a program that raised
with the token in its message had it written to the results log, which the explorer shows to everyone).

A variable is secret-looking when its name has one of SECRET_WORDS in it (TLX_RUNNER_TOKEN, TORCH_HUB_TOKEN,
AWS_SECRET_ACCESS_KEY, HF_TOKEN, GITHUB_PAT, DATABASE_PASSWORD, ...) or starts with a cloud's prefix; values
shorter than MIN_CHARS are left (they would match ordinary text). `register` adds a value the environment does
not hold (the token a loopback service generates)."""

from __future__ import annotations

import os
import re
import threading
from typing import Any

SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "KEY", "CREDENTIAL", "AUTH", "COOKIE", "SESSION",
                "PRIVATE", "SIGNATURE", "PAT", "DSN", "APIKEY", "WEBHOOK")
SECRET_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "HF_", "HUGGING", "OPENAI_", "ANTHROPIC_", "GH_",
                   "GITHUB_", "WANDB_", "RAY_REDIS", "SSH_")
MIN_CHARS = 8
REDACTED = "[redacted]"
_registered: set[str] = set()
_lock = threading.Lock()


def register(value: str | None) -> None:
    if value and len(value) >= MIN_CHARS:
        with _lock:
            _registered.add(value)


def _secret_name(name: str) -> bool:
    """A word of SECRET_WORDS as a part of the name (`_`-separated), a long one anywhere in it (`HFTOKEN`), or a
    cloud's prefix."""
    upper = name.upper()
    parts = re.split(r"[^A-Z0-9]+", upper)
    return upper.startswith(SECRET_PREFIXES) or any(w in parts or (len(w) > 4 and w in upper) for w in SECRET_WORDS)


def secrets_now() -> list[str]:
    """The values to redact, longest first (a value inside another is replaced as part of it)."""
    with _lock:
        values = set(_registered)
    values |= {v for k, v in os.environ.items() if len(v) >= MIN_CHARS and _secret_name(k)}
    return sorted(values, key=len, reverse=True)


def scrub(obj: Any, values: list[str] | None = None) -> Any:
    """`obj` (a result's dict, or any JSON-like value) with every secret value replaced."""
    values = secrets_now() if values is None else values
    if not values:
        return obj
    if isinstance(obj, str):
        for v in values:
            if v in obj:
                obj = obj.replace(v, REDACTED)
        return obj
    if isinstance(obj, dict):
        return {k: scrub(v, values) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(scrub(v, values) for v in obj)
    return obj
