"""Write the row-id lists that `scripts/gpu_session.sh` reads from var/gpu/ (run here, before the device call).

From the sample's current labels: ids_pass.txt (rows with a measured y: the correct candidates),
ids_fail.txt (failing rows but the hangs) and ids_hang.txt (the hangs, run with a short timeout).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from make_sample import build_rows  # noqa: E402


def main() -> None:
    out = REPO / "var" / "gpu"
    out.mkdir(parents=True, exist_ok=True)
    labelled = {}
    for split in ("train", "test"):
        ys = pq.read_table(REPO / "data" / "sample" / f"{split}.parquet", columns=["y"])["y"].to_pylist()
        labelled.update({f"{split}/{i:06d}": y for i, y in enumerate(ys)})
    rows = build_rows()
    hang = {r.id for r in rows if r.candidate.kind == "hang"}
    lists = {
        "ids_pass.txt": [r.id for r in rows if labelled[r.id] is not None],
        "ids_fail.txt": [r.id for r in rows if labelled[r.id] is None and r.id not in hang],
        "ids_hang.txt": sorted(hang),
    }
    for old in out.glob("ids_*.txt"):
        old.unlink()
    for name, chosen in lists.items():
        (out / name).write_text("".join(f"{row_id}\n" for row_id in chosen))
        print(f"{out / name}: {len(chosen)} rows")


if __name__ == "__main__":
    main()
