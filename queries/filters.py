"""`Filters`: the filter set every question accepts, validated and turned into bound SQL parameters."""

from __future__ import annotations

from dataclasses import dataclass

from common.triage_log import TRIAGE_ERROR_TYPES, TRIAGE_FILTER_STATUSES

STATUSES = ("ok", "failed")
ERROR_SOURCES = ("static", "triaged", "measured")  # in the order they are trusted, least first (design §3)


@dataclass(frozen=True)
class Filters:
    """Which rows a question looks at; `None` means "any".

    `status` is about the label (`ok`: `y` present, `failed`: `y` null). `error_type` matches the static error of
    the index, the error type of the latest CPU triage, the latest measured error of a run result, or any of them
    when `error_source` is None; `error_source` alone keeps rows with a static error other than `ok_static`
    (`static`), with a triage result (`triaged`) or with a run result (`measured`). `triage_status`: the row's
    latest CPU triage (`passed`, `failed`, `not_triaged`; `untriaged`: none), `triage_error`: its error type. `level`: the KernelBench level (1-3) of the row's problem id. `flag`: rows carrying this flag
    (an entry name of common/checks.py), a static flag or one of the latest run's.
    """

    split: str | None = None
    holdout_group: str | None = None
    problem_key: str | None = None
    status: str | None = None
    error_type: str | None = None
    error_source: str | None = None
    level: int | None = None
    flag: str | None = None
    triage_status: str | None = None
    triage_error: str | None = None

    def __post_init__(self) -> None:
        if self.level is not None and (isinstance(self.level, bool) or not isinstance(self.level, int)):
            raise TypeError(f"Filters.level must be an int or None, not {type(self.level).__name__}")
        if self.status is not None and self.status not in STATUSES:
            raise ValueError(f"Filters.status must be one of {STATUSES} or None, not {self.status!r}")
        if self.error_source is not None and self.error_source not in ERROR_SOURCES:
            raise ValueError(
                f"Filters.error_source must be one of {ERROR_SOURCES} or None, not {self.error_source!r}"
            )
        if self.triage_status is not None and self.triage_status not in TRIAGE_FILTER_STATUSES:
            raise ValueError(
                f"Filters.triage_status must be one of {TRIAGE_FILTER_STATUSES} or None, not {self.triage_status!r}"
            )
        if self.triage_error is not None and self.triage_error not in TRIAGE_ERROR_TYPES:
            raise ValueError(f"Filters.triage_error must be one of {TRIAGE_ERROR_TYPES} or None, not {self.triage_error!r}")
        for name in ("split", "holdout_group", "problem_key", "error_type", "flag"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Filters.{name} must be a string or None, not {type(value).__name__}")

    def params(self) -> dict[str, dict[str, str | int | None]]:
        """The one named parameter of the `filtered($filter)` table macro (see `sql/setup_filtered.sql`): a STRUCT
        of the filter's fields."""
        return {"filter": self.fields()}

    def fields(self) -> dict[str, str | int | None]:
        return {
            "split": self.split,
            "holdout": self.holdout_group,
            "problem": self.problem_key,
            "status": self.status,
            "error": self.error_type,
            "source": self.error_source,
            "level": self.level,
            "flag": self.flag,
            "triage": self.triage_status,
            "triage_error": self.triage_error,
        }

    @property
    def is_empty(self) -> bool:
        return all(value is None for value in self.fields().values())


NO_FILTERS = Filters()
LEVELS = (1, 2, 3)  # KernelBench's levels


@dataclass(frozen=True)
class Candidates:
    """The one candidate filter of every ranking (`is_candidate` in sql/setup_filtered.sql): by default Triton
    kernels only (`n_kernels` > 0) and no hack flag (static, or the latest run's); each toggle lets those in."""

    with_no_triton: bool = False
    with_flagged: bool = False

    def params(self) -> dict[str, bool]:
        return {"c_no_triton": bool(self.with_no_triton), "c_flagged": bool(self.with_flagged)}

    @property
    def is_default(self) -> bool:
        return not (self.with_no_triton or self.with_flagged)


HONEST = Candidates()
