"""`program_sha256`: how the project names a program's text (the index column, the run results' field, the
runner's job key and Triton cache folder).

The hash is of the text's UTF-8 bytes. Every program read from a store is valid UTF-8; a `str` that is not
(a lone surrogate such as "\\ud800", which JSON can carry) is hashed through `surrogatepass`, so hashing never
raises: whether such a program is accepted is the caller's decision (`is_utf8`; the service refuses it with a
400). Standard library only.
"""

from __future__ import annotations

import hashlib


def program_sha256(program: str | bytes | memoryview) -> str:
    """Lowercase hex sha256 of the program's UTF-8 bytes (bytes as given)."""
    data = program.encode("utf-8", errors="surrogatepass") if isinstance(program, str) else program
    return hashlib.sha256(data).hexdigest()


def is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
