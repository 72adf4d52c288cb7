"""Write the row-id lists that `scripts/gpu_session.sh` reads from var/gpu/ (run here, before the device call).

ids_main.txt: every sample row but the hangs; ids_hang.txt: the hangs (run with a short timeout);
ids_tp24.txt: 24 rows of mixed outcome for the 1-GPU vs 2-GPU throughput comparison;
ids_tf32.txt: the 1x1-convolution rows whose reference needs TF32 off (re-labelled after that change).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from make_sample import build_rows  # noqa: E402

THROUGHPUT_KINDS = {"fast", "slow", "dup_whitespace", "dup_comments", "wrong_output", "no_triton", "compile_error"}
TF32_PROBLEMS = {"1_14", "2_3"}
PASSING = {"fast", "slow", "dup_whitespace", "dup_comments"}


def main() -> None:
    out = REPO / "var" / "gpu"
    out.mkdir(parents=True, exist_ok=True)
    rows = build_rows()
    lists = {
        "ids_main.txt": [r for r in rows if r.candidate.kind != "hang"],
        "ids_hang.txt": [r for r in rows if r.candidate.kind == "hang"],
        "ids_tp24.txt": [r for r in rows if r.candidate.kind in THROUGHPUT_KINDS][:24],
        "ids_tf32.txt": [r for r in rows if r.candidate.problem.problem_id in TF32_PROBLEMS
                         and r.candidate.kind in PASSING],
    }
    for name, chosen in lists.items():
        (out / name).write_text("".join(f"{r.split}/{r.row:06d}\n" for r in chosen))
        print(f"{out / name}: {len(chosen)} rows")


if __name__ == "__main__":
    main()
