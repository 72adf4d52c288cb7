"""Reading a latency model's predictions: Parquet, CSV or JSON Lines with `id` (a store row id), `score` (lower =
predicted faster) and optionally `p_correct` (predicted probability that the candidate is correct, 0..1).

Bad input is refused with a `PredictionsError` that names the file, the row (1-based, as an editor counts data
rows; CSV and JSONL: the line) and the field.
"""

from __future__ import annotations

import io
import json
import math
import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from common.errors import TlxError

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
           ".json": "jsonl"}
MAX_FILE_BYTES = 200 << 20  # as Streamlit's upload limit (server.maxUploadSize)
SCHEMA = pa.schema([("id", pa.string()), ("score", pa.float64()), ("p_correct", pa.float64())])


class PredictionsError(TlxError):
    """The predictions file cannot be scored; the message names the file, row and field."""


def read_file(path: str | Path) -> bytes:
    """A predictions file named by a path (the Score page's `path=`, the command line), read with bounded work: a
    regular file of at most `MAX_FILE_BYTES` (issue 45: `path=/dev/zero` read until memory ran out; a FIFO would
    block the page)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PredictionsError(f"{path}: not a regular file")
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise PredictionsError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB, the most a predictions file may be")
    return data


def format_of(name: str) -> str:
    fmt = FORMATS.get(Path(name).suffix.lower())
    if fmt is None:
        raise PredictionsError(f"{name}: unknown format; name the file *.parquet, *.csv or *.jsonl")
    return fmt


def _records(data: bytes, name: str, fmt: str) -> tuple[list[dict], int]:
    """The file's rows as dicts, and how many lines come before the first data row (the CSV header)."""
    if fmt == "jsonl":
        rows = []
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise PredictionsError(f"{name}: line {number}: not JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise PredictionsError(f"{name}: line {number}: not a JSON object")
            rows.append(value | {"__line": number})
        return rows, 0
    # one thread: a file of predictions reads in well under a second, and Arrow's pool threads, once started, can
    # abort the command at the interpreter's exit (CI: `score-predictions bad.csv` printed its error, then died with
    # "terminate called without an active exception", SIGABRT; apache/arrow#34314)
    try:
        if fmt == "csv":
            table = pacsv.read_csv(io.BytesIO(data), read_options=pacsv.ReadOptions(use_threads=False),
                                   convert_options=pacsv.ConvertOptions(
                                       column_types={"id": pa.string(), "score": pa.string(), "p_correct": pa.string()}))
        else:
            table = pq.read_table(io.BytesIO(data), use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise PredictionsError(f"{name}: cannot read it as {fmt}: {exc}") from None
    return table.to_pylist(), 1 if fmt == "csv" else 0


def _number(value, name: str, where: str, field: str, required: bool) -> float | None:
    if value is None or value == "":
        if required:
            raise PredictionsError(f"{name}: {where}: field '{field}' is missing")
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PredictionsError(f"{name}: {where}: field '{field}' is not a number ({str(value)[:40]!r})") from None
    if math.isnan(number) or math.isinf(number) or isinstance(value, bool):
        raise PredictionsError(f"{name}: {where}: field '{field}' must be a finite number, not {value!r}")
    return number


def read_predictions(data: bytes, name: str) -> pa.Table:
    """The predictions in `data` (the bytes of the file called `name`) as a table of `SCHEMA`."""
    fmt = format_of(name)
    records, header = _records(data, name, fmt)
    if not records:
        raise PredictionsError(f"{name}: no predictions in the file")
    missing = {"id", "score"} - set(records[0])
    if missing:
        raise PredictionsError(f"{name}: no column {', '.join(sorted(missing))} (needs id, score; optional "
                               "p_correct)")
    ids, scores, probs, seen = [], [], [], {}
    for i, record in enumerate(records, 1):
        where = f"line {record['__line']}" if "__line" in record else (
            f"line {i + header}" if header else f"row {i}")
        row_id = record.get("id")
        if not isinstance(row_id, str) or not row_id:
            raise PredictionsError(f"{name}: {where}: field 'id' must be a row id such as train/000123, not "
                                   f"{row_id!r}")
        if row_id in seen:
            raise PredictionsError(f"{name}: {where}: id {row_id!r} again (first at {seen[row_id]})")
        seen[row_id] = where
        p = _number(record.get("p_correct"), name, where, "p_correct", False)
        if p is not None and not 0 <= p <= 1:
            raise PredictionsError(f"{name}: {where}: field 'p_correct' must lie in [0, 1], not {p:g}")
        ids.append(row_id)
        scores.append(_number(record.get("score"), name, where, "score", True))
        probs.append(p)
    if any(p is None for p in probs) and any(p is not None for p in probs):
        first = next(i for i, p in enumerate(probs) if p is None)
        raise PredictionsError(f"{name}: {seen[ids[first]]}: field 'p_correct' is missing (give it for every row "
                               "or for none)")
    return pa.table([ids, scores, probs], schema=SCHEMA)
