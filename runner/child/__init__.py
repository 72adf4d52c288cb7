"""The sandboxed child: runs inside the job's isolation (its main, evaluation, timing, comparison, guard)."""
