"""The variant registries, read from the compiled core's tables.

This is the only list of variants in Python: the API, the CLI, the
benchmark and the tests all ask :func:`variants`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from . import _core

FAMILIES = _core.families()  # from the core's one list
# the fastest general variant of each family
# (scan: decoupled_lookback, faster than warp_shuffle from 2^20 up on an
# H100 and an H200; warp_shuffle is faster at a few thousand elements;
# bench/results/scan-*)
AUTO = {"reduce": "single_pass", "scan": "decoupled_lookback", "transpose": "tiled_wide"}


@dataclass(frozen=True)
class Variant:
    """One step of a family's journey."""

    family: str
    index: int  # position in the core's table
    name: str  # stable snake_case id, what variant= takes
    title: str
    source: str  # which seed kernel or published technique
    description: str
    limits: dict = field(default_factory=dict)  # {"max_n": int, "dtypes": (names)}; empty: none
    block_size: int = 0
    where: str = "device"  # "device" or "host"
    backends: tuple = ("cuda", "emulator")  # which backends run it (CUB/cuBLAS: cuda only)

    @property
    def max_n(self):
        return self.limits.get("max_n")

    @property
    def dtypes(self):
        """The dtype names this variant accepts, or None for all of its family's."""
        return self.limits.get("dtypes")

    @property
    def is_baseline(self) -> bool:
        return self.name in ("cub", "cublas", "copy", "cpu")


@lru_cache(maxsize=None)
def _table(family: str) -> tuple:
    rows = _core.variants(family)
    def limits(max_n, dtypes):
        out = {}
        if max_n is not None:
            out["max_n"] = max_n
        if dtypes is not None:
            out["dtypes"] = tuple(dtypes.split(","))
        return out

    return tuple(
        Variant(family, i, name, title, source, desc, limits(max_n, dtypes), block, where, backends)
        for i, (name, title, source, desc, max_n, dtypes, block, where, backends) in enumerate(rows)
    )


_BY_NAME: dict = {}  # family -> {name: Variant}, filled on first lookup


def _by_name(family: str) -> dict:
    table = _BY_NAME.get(family)
    if table is None:
        table = _BY_NAME[family] = {v.name: v for v in _table(family)}
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
    v = _by_name(family).get(AUTO[family] if name == "auto" else name)
    if v is not None:
        return v
    names = ", ".join(["auto"] + [v.name for v in _table(family)])
    raise ValueError(f"unknown {family} variant {name!r}; choose one of: {names}")


def check_limit(v: Variant, n: int, dtype=None) -> None:
    """ValueError naming the limit and a variant without it (TypeError for
    a dtype the variant does not take)."""
    if v.dtypes is not None and dtype is not None and dtype.name not in v.dtypes:
        raise TypeError(
            f"{v.family} variant {v.name!r} takes only {', '.join(v.dtypes)}, not {dtype.name}; "
            f"use variant='auto' ({AUTO[v.family]}), which takes every supported dtype"
        )
    if v.max_n is not None and n > v.max_n:
        # Name the multi-block form of a single-block step where there is one.
        multi = _by_name(v.family).get(v.name.replace("_double_buffer", "").replace("_padded", "")
                                       + "_multiblock")
        other = (f"variant={multi.name!r} or variant='auto' ({AUTO[v.family]})" if multi
                 else f"variant='auto' ({AUTO[v.family]})")
        raise ValueError(
            f"{v.family} variant {v.name!r} handles at most max_n = {v.max_n} elements, got {n}; "
            f"use {other}, which has no such limit"
        )
