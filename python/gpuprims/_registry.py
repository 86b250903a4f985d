"""The variant registries, read from the compiled core's tables.

This is the only list of variants in Python: the API, the CLI, the
benchmark and the tests all ask :func:`variants`.  Each row's role (the one
variant="auto" runs, a baseline, the production library) and the variant an
over-limit error names come from the core's table too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from . import _core

FAMILIES = _core.families()  # from the core's one list


@dataclass(frozen=True)
class Variant:
    """One step of a family's journey."""

    family: str
    index: int  # position in the core's table
    name: str  # stable snake_case id, what variant= takes
    title: str
    source: str  # which published work it follows (book and chapter, paper, blog, library)
    description: str
    limits: dict = field(default_factory=dict)  # {"max_n": int, "dtypes": (names)}; empty: none
    block_size: int = 0
    where: str = "device"  # "device" or "host"
    backends: tuple = ("cuda", "emulator")  # which backends run it (CUB/cuBLAS: cuda only)
    auto: bool = False  # the row variant="auto" runs (one per family)
    baseline: bool = False  # not a journey step: a library, the copy roof or the host reference
    library: bool = False  # the production library the journey is measured against
    instead: str | None = None  # for a row with max_n: the variant without the limit
    batched: bool = False  # takes an axis of an N-D array (outer x len x inner problems)
    segmented: bool = False  # takes ragged segments (offsets)
    auto_batched: bool = False  # the row variant="auto" runs for an axis or segments
    matrix: bool = False  # transpose: takes matrices only (2-D work), not every rank
    reproducible: bool = False  # a float sum's bits depend on the inputs only (determinism="gpu_to_gpu")
    narrow_in: bool = False  # reduce: reads bool, int8/16, uint8..64 and float16 without converting them first

    @property
    def max_n(self):
        return self.limits.get("max_n")

    @property
    def dtypes(self):
        """The dtype names this variant accepts, or None for all of its family's."""
        return self.limits.get("dtypes")

    @property
    def is_baseline(self) -> bool:
        return self.baseline

    def skip_reason(self, n: int, dtype) -> str:
        """Why an input of n elements of dtype is outside this variant's
        declared limits ("" when it is within them)."""
        if self.dtypes is not None and dtype.name not in self.dtypes:
            return f"takes {', '.join(self.dtypes)} only"
        if self.max_n is not None and n > self.max_n:
            return f"n > max_n {self.max_n}"
        return ""


def _limits(max_n, dtypes, matrix=False) -> dict:
    out = {}
    if matrix:
        out["ndim"] = 2
    if max_n is not None:
        out["max_n"] = max_n
    if dtypes is not None:
        out["dtypes"] = tuple(dtypes.split(","))
    return out


@lru_cache(maxsize=None)
def _table(family: str) -> tuple:
    return tuple(
        Variant(family, i, name, title, source, desc, _limits(max_n, dtypes, "matrix" in roles), block, where,
                tuple(backends), "auto" in roles, "baseline" in roles, "library" in roles, instead,
                "batched" in roles, "segmented" in roles, "auto_batched" in roles, "matrix" in roles,
                "reproducible" in roles, "narrow_in" in roles)
        for i, (name, title, source, desc, max_n, dtypes, block, where, backends, roles, instead)
        in enumerate(_core.variants(family))
    )


@lru_cache(maxsize=None)
def _by_name(family: str) -> dict:
    """{name: Variant}, with "auto" for the row the core marks auto."""
    table = {v.name: v for v in _table(family)}
    table["auto"] = next(v for v in _table(family) if v.auto)
    return table


def variants(family: str) -> list[Variant]:
    """The variants of `family` ("reduce", ...) in journey order, ending with
    the production baseline and the host reference."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return list(_table(family))


def lookup(family: str, name: str) -> Variant:
    """The variant called `name` ("auto" picks the fastest general one)."""
    if not isinstance(name, str):
        raise TypeError(f"variant must be a string, not {type(name).__name__}")
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    v = _by_name(family).get(name)
    if v is not None:
        return v
    names = ", ".join(["auto"] + [v.name for v in _table(family)])
    raise ValueError(f"unknown {family} variant {name!r}; choose one of: {names}")
