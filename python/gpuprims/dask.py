"""gpuprims on Dask arrays: reduce, scan and transpose of arrays split into
chunks, on one GPU or on several (a dask-cuda LocalCUDACluster, one worker
per GPU).

    import dask.array as da, gpuprims.dask as gd
    x = da.random.random(1 << 24, chunks=1 << 22).astype("float32")
    gd.sum(x).compute()           # a lazy dask array, like dask.array.sum
    gd.cumsum(x).compute()
    gd.transpose(da.ones((4096, 2048), chunks=1024)).compute()

Each function returns a lazy dask array built with Dask's own generic
algorithms, gpuprims' kernels doing the work on each chunk:

- reductions: ``dask.array.reduction`` - gpuprims.reduce on every chunk,
  then the chunks' partial results combined by gpuprims.reduce in a tree
  whose shape Dask fixes from the chunking and ``split_every``;
- scans: ``dask.array.reductions.cumreduction`` - gpuprims.scan on every
  chunk, the chunks' totals scanned (``method="sequential"``: a chain of
  tasks; ``"blelloch"``: Blelloch's up-sweep and down-sweep over the
  chunks, the tree of GPU Gems 3 chapter 39 at the scale of chunks) and
  each chunk's carry added to it (the scan-then-fan of a multi-block scan);
- transpose: ``dask.array.blockwise`` - the chunk grid permuted,
  gpuprims.transpose on every chunk.

Chunks may be NumPy arrays (host data: each goes through gpuprims' host
pipeline) or CuPy arrays (device data, used in place); NumPy chunks give
NumPy chunks, CuPy chunks CuPy chunks.  Result dtypes, axis, keepdims and
dtype= are those of the single-array calls (gpuprims.sum, ...), and so are
their errors: what Dask can check when the graph is built (dtype, axis, op,
min/max of an empty array) raises then; an error in one chunk raises, at
compute(), the exception the single-array call raises on that chunk.

Determinism: "run_to_run" (the default) gives the same bits every time
for the same chunking (every kernel is run-to-run deterministic and the
order of the combining is fixed by the graph); "gpu_to_gpu" - the same bits
for any chunking and any number of GPUs - needs gpuprims' binned
reduction states (gpuprims._rfa) and is refused with ValueError where they
are missing.

Needs the ``dask`` extra: ``pip install "gpuprims[dask]"``.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

try:
    import dask.array as da
    from dask.array.reductions import cumreduction as _cumreduction
    from dask.array.utils import meta_from_array as _meta_from_array
    from dask.base import tokenize as _tokenize
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError(f"gpuprims.dask needs Dask: pip install \"gpuprims[dask]\" (or \"dask[array]\"); {e}") from e

from . import _axes
from ._arrays import DeviceArray, _check
from ._family import op_code

__all__ = ["reduce", "sum", "min", "max", "scan", "cumsum", "transpose"]

DETERMINISM = ("not_guaranteed", "run_to_run", "gpu_to_gpu")
METHODS = ("sequential", "blelloch")
_BINOPS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


# ------------------------------------------------------------ helpers


def _xp(chunk):
    """The array library of a chunk: NumPy, or CuPy for a CuPy chunk."""
    if isinstance(chunk, (np.ndarray, np.generic)):
        return np
    if type(chunk).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return np


def _like(result, chunk):
    """gpuprims' result of one chunk as the chunk's own kind of array: a
    DeviceArray as a CuPy array (no copy) for a CuPy chunk, a NumPy scalar
    (a full reduction) as a 0-d CuPy array."""
    xp = _xp(chunk)
    if xp is np:
        return result
    if isinstance(result, DeviceArray) or isinstance(result, (np.ndarray, np.generic)):
        return xp.asarray(result)
    return result


def _identity(op, dtype):
    """op's identity in dtype: what an empty chunk contributes and what a
    scan's first carry is (0 for sum; the largest value for min, the
    smallest for max: +-inf for floats, True/False for bool)."""
    dtype = np.dtype(dtype)
    if op == "sum":
        return dtype.type(0)
    if dtype.kind == "b":
        return np.bool_(op == "min")
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def _inter_dtype(plan):
    """The dtype the chunks' partial results travel in: the kernels'
    accumulator for a float result (float32 for a float16 sum, so that the
    combining loses nothing against the single-array call, which
    accumulates in float32 too), the result dtype otherwise (integer sums
    wrap modulo 2^bits whatever the order)."""
    return plan.acc if plan.result.kind == "f" else plan.result


def _take(x, who, dtypes=_axes.DTYPES):
    """x as a dask array; TypeError for anything else.  A chunk type that
    the single-array calls refuse (an ndarray subclass whose meaning would
    be lost, like a masked array) is refused now, with their message."""
    if not isinstance(x, da.Array):
        raise TypeError(f"gpuprims.dask.{who} takes a dask.array.Array, not {type(x).__name__}; "
                        f"for a NumPy or device array call gpuprims.{who}")
    meta = getattr(x, "_meta", None)
    if isinstance(meta, np.ndarray) and type(meta) is not np.ndarray:
        from ._arrays import take
        take(meta, who, dtypes, strided=True, allow_0d=True)  # raises gpuprims' TypeError
    _check(x.dtype, x.ndim, who, dtypes, allow_0d=True)
    return x


def _check_determinism(determinism, who):
    if determinism not in DETERMINISM:
        raise ValueError(f"gpuprims.dask.{who}: determinism must be one of {', '.join(map(repr, DETERMINISM))}, "
                         f"not {determinism!r}")
    if determinism == "gpu_to_gpu":
        _rfa(who)


def _rfa(who):
    """gpuprims' reproducible (binned) reduction states, which make a sum
    independent of the order of its additions (Ahrens, Demmel and Nguyen,
    ACM TOMS 2020); ValueError where this build has none."""
    try:
        from . import _rfa as rfa
    except ImportError:
        rfa = None
    if rfa is None or not all(hasattr(rfa, f) for f in ("states", "merge", "finalize")):
        raise ValueError(f"gpuprims.dask.{who}: determinism='gpu_to_gpu' needs gpuprims' binned reduction "
                         f"states (gpuprims._rfa: states, merge, finalize), which this build of gpuprims "
                         f"does not have; use determinism='run_to_run' (the same bits for a fixed chunking)")
    raise ValueError(f"gpuprims.dask.{who}: determinism='gpu_to_gpu' is not wired to gpuprims._rfa's "
                     f"states yet; use determinism='run_to_run' (the same bits for a fixed chunking)")


def _fill(chunk, shape, dtype, value):
    """An array of `shape` filled with value, of the chunk's library."""
    return _xp(chunk).full(shape, value, dtype=dtype)


# ------------------------------------------------------------ reductions


def _reduce_chunk(x, axis, keepdims, *, op, inter, who, computing_meta=False):
    """One chunk (or the concatenated partial results of several) reduced
    over `axis` by gpuprims.reduce, in the dtype `inter`.  An empty one
    gives the identity (its contribution; min/max of an empty array as a
    whole was refused when the graph was built) with no kernel launch."""
    shape = tuple(1 if i in axis else n for i, n in enumerate(x.shape)) if keepdims else \
        tuple(n for i, n in enumerate(x.shape) if i not in axis)
    if computing_meta or x.size == 0:
        return _fill(x, shape, inter, _identity(op, inter))
    r = _like(_reduce_call(x, op, axis, keepdims, inter, who), x)
    # a 0-d chunk (axis ()) comes back from gpuprims.reduce as shape (1,)
    return r.reshape(shape) if getattr(r, "shape", shape) != shape else r


def _reduce_call(x, op, axis, keepdims, inter, who):
    from . import _reduce
    return _reduce.reduce(x, op, axis=axis, keepdims=keepdims, dtype=inter if op == "sum" else None,
                          _who=who)


def _aggregate(x, axis, keepdims, *, op, inter, result, who, computing_meta=False):
    """The last combining step: as _reduce_chunk, then in the result dtype."""
    r = _reduce_chunk(x, axis, keepdims, op=op, inter=inter, who=who, computing_meta=computing_meta)
    if np.dtype(r.dtype) != result:
        r = r.astype(result)
    return r


def reduce(x, op: str = "sum", *, axis=None, keepdims=False, dtype=None, split_every=None,
           determinism: str = "run_to_run", _who="reduce"):
    """Reduce the dask array `x` with `op` ("sum", "min" or "max") over
    `axis`, as gpuprims.reduce (and numpy) would reduce the whole array:
    the same result dtype, axis (None, an int or a tuple of ints,
    negatives from the end), keepdims and dtype=.  Returns a lazy dask
    array (0-d for a full reduction; .compute() gives the value).

    Built on dask.array.reduction: gpuprims.reduce on every chunk, the
    partial results combined by gpuprims.reduce in a tree of at most
    `split_every` inputs a node (dask's default where None).  determinism:
    "run_to_run" (the same bits for the same chunking), "not_guaranteed"
    (the same here), or "gpu_to_gpu" (needs gpuprims._rfa; see the module's
    docstring).
    Errors when called: TypeError (not a dask array, dtype), ValueError (op,
    axis, determinism, min/max of an empty array); at compute(): what
    gpuprims.reduce raises on a chunk.
    """
    x = _take(x, _who)
    op_code(op)
    _check_determinism(determinism, _who)
    plan = _axes.DtypePlan(op, x.dtype, dtype, _who)
    axes = _axes.normalize_axes(axis, x.ndim, _who)
    kept = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    if op != "sum" and math.prod(x.shape[i] for i in axes) == 0 and math.prod(kept) > 0:
        raise _axes.identity_error(op, _who)
    inter = _inter_dtype(plan)
    out_ndim = x.ndim if keepdims else len(kept)
    kw = dict(op=op, inter=inter, who=_who)
    return da.reduction(
        x, partial(_reduce_chunk, **kw), partial(_aggregate, result=plan.result, **kw),
        combine=partial(_reduce_chunk, **kw), axis=axes, keepdims=keepdims, dtype=plan.result,
        split_every=split_every, name=f"gpuprims-{_who}",
        meta=_meta_from_array(x._meta, ndim=out_ndim, dtype=plan.result))


def sum(x, *, axis=None, keepdims=False, dtype=None, split_every=None,  # noqa: A001
        determinism: str = "run_to_run"):
    """Sum over axis of a dask array (numpy.sum's semantics and result dtype); see reduce."""
    return reduce(x, "sum", axis=axis, keepdims=keepdims, dtype=dtype, split_every=split_every,
                  determinism=determinism, _who="sum")


def min(x, *, axis=None, keepdims=False, split_every=None, determinism: str = "run_to_run"):  # noqa: A001
    """Smallest element over axis of a dask array (NaN if any is NaN); see reduce."""
    return reduce(x, "min", axis=axis, keepdims=keepdims, split_every=split_every,
                  determinism=determinism, _who="min")


def max(x, *, axis=None, keepdims=False, split_every=None, determinism: str = "run_to_run"):  # noqa: A001
    """Largest element over axis of a dask array (NaN if any is NaN); see reduce."""
    return reduce(x, "max", axis=axis, keepdims=keepdims, split_every=split_every,
                  determinism=determinism, _who="max")


# ------------------------------------------------------------ scans


class _ChunkScan:
    """gpuprims.scan of one chunk along `axis`, in `dtype`: cumreduction's
    `func` (called as func(chunk, axis=..., dtype=...)).  A class rather
    than a partial: cumreduction names its tasks after func.__name__."""

    def __init__(self, op, inclusive, who):
        self.op, self.inclusive, self.who = op, inclusive, who
        self.__name__ = f"gpuprims-{who}"

    def __call__(self, x, axis, dtype):
        if x.size == 0:
            return _xp(x).empty(x.shape, dtype=dtype)
        from . import _scan
        r = _scan.scan(x, self.op, axis=axis, inclusive=self.inclusive, dtype=dtype, _who=self.who)
        return _like(r, x)

    def __dask_tokenize__(self):
        return ("gpuprims.dask._ChunkScan", self.op, self.inclusive, self.who)

    def __reduce__(self):
        return (_ChunkScan, (self.op, self.inclusive, self.who))


class _ChunkTotal:
    """A chunk's total along `axis` (cumreduction's `preop` for
    method="blelloch", called as preop(chunk, axis=..., keepdims=True)):
    gpuprims.reduce in `inter`; the identity for an empty chunk."""

    def __init__(self, op, inter, who):
        self.op, self.inter, self.who = op, np.dtype(inter), who
        self.__name__ = f"gpuprims-{who}-total"

    def __call__(self, x, axis, keepdims=True):
        return _reduce_chunk(x, (axis,), keepdims, op=self.op, inter=self.inter, who=self.who)

    def __dask_tokenize__(self):
        return ("gpuprims.dask._ChunkTotal", self.op, self.inter.str, self.who)

    def __reduce__(self):
        return (_ChunkTotal, (self.op, self.inter, self.who))


def _last(b, axis):
    """A chunk's last slice along axis (its inclusive scan's carry)."""
    return b[(slice(None),) * axis + (slice(-1, None),)]


def _prepend(b, carry, axis):
    """carry, then the chunk without its last slice: an inclusive scan's
    chunk shifted by one along axis, which is the exclusive scan's chunk."""
    xp = _xp(b)
    return xp.concatenate([carry, b[(slice(None),) * axis + (slice(None, -1),)]], axis=axis)


def _shift(y, axis, ident):
    """The exclusive scan from the inclusive one y along axis (exact: each
    value moves one place, the identity comes first): every chunk takes the
    last slice of the chunk before it (y has no empty chunk along axis)."""
    if y.shape[axis] == 0:
        return y
    z = y
    n = z.numblocks[axis]
    ones = tuple((1,) * n if i == axis else c for i, c in enumerate(z.chunks))
    tails = z.map_blocks(_last, axis=axis, chunks=ones, dtype=z.dtype, meta=z._meta)
    first = (slice(None),) * axis
    head = da.full_like(tails[first + (slice(0, 1),)], ident, dtype=z.dtype)
    carry = da.concatenate([head, tails[first + (slice(0, n - 1),)]], axis=axis)
    return da.map_blocks(_prepend, z, carry, axis=axis, dtype=z.dtype, meta=z._meta)


def scan(x, op: str = "sum", *, axis=None, inclusive: bool = True, dtype=None, method: str = "sequential",
         determinism: str = "run_to_run", _who="scan"):
    """Prefix scan of the dask array `x` with `op` ("sum", "min" or "max")
    along `axis`, as gpuprims.scan (and numpy.cumsum,
    numpy.minimum.accumulate ...): axis None scans the flattened data (C
    order), an int one axis; inclusive or exclusive (the identity first);
    the same result dtype and dtype=.  Returns a lazy dask array.

    Built on dask.array.reductions.cumreduction: gpuprims.scan on every
    chunk, then each chunk's carry - the op of all the chunks before it
    along the axis - combined with it.  method="sequential" carries from
    chunk to chunk (a chain of tasks); "blelloch" takes each chunk's total
    (gpuprims.reduce) and scans the totals with Blelloch's up-sweep and
    down-sweep over the chunks (2 log2(chunks) levels of tasks).  An
    exclusive scan with "sequential" is the inclusive one shifted by one
    place; with "blelloch", each chunk's exclusive scan plus its carry.
    determinism: as for reduce.
    Errors when called: TypeError (not a dask array, dtype, a tuple axis),
    ValueError (op, axis, method, determinism); at compute(): what
    gpuprims.scan raises on a chunk.
    """
    x = _take(x, _who)
    op_code(op)
    if method not in METHODS:
        raise ValueError(f"gpuprims.dask.{_who}: method must be 'sequential' or 'blelloch', not {method!r}")
    _check_determinism(determinism, _who)
    plan = _axes.DtypePlan(op, x.dtype, dtype, _who)
    if isinstance(axis, tuple):
        raise TypeError(f"gpuprims.{_who}: axis must be None or an int, not a tuple")
    ax = None if axis is None else _axes.normalize_axes(axis, x.ndim, _who)[0]
    if ax is None:  # the flattened data, chunked as cumreduction chunks it
        x = x.flatten().rechunk(chunks=x.npartitions) if x.ndim != 1 else x
        ax = 0
    chunks = x.chunks[ax]
    # Empty chunks along the axis merged away (a carry passes through them),
    # put back at the end: the output has the input's chunks.
    packed = 0 in chunks and x.shape[ax] > 0
    if packed:
        x = x.rechunk({ax: tuple(c for c in chunks if c)})
    inter = _inter_dtype(plan)
    ident = _identity(op, inter)
    binop = _BINOPS[op]
    if method == "blelloch":
        y = _cumreduction(_ChunkScan(op, bool(inclusive), _who), binop, ident, x, axis=ax, dtype=inter,
                          method="blelloch", preop=_ChunkTotal(op, inter, _who))
    else:
        y = _cumreduction(_ChunkScan(op, True, _who), binop, ident, x, axis=ax, dtype=inter,
                          method="sequential")
        if not inclusive:
            y = _shift(y, ax, ident)
    if packed:
        y = y.rechunk({ax: chunks})
    if y.dtype != plan.result:
        y = y.astype(plan.result)
    return y


def cumsum(x, *, axis=None, dtype=None, method: str = "sequential", determinism: str = "run_to_run"):
    """Inclusive sum scan of a dask array, as numpy.cumsum(x, axis) (same result dtype); see scan."""
    return scan(x, "sum", axis=axis, inclusive=True, dtype=dtype, method=method, determinism=determinism,
                _who="cumsum")


# ------------------------------------------------------------ transpose


def _transpose_chunk(x, axes):
    if x.size == 0:
        return _xp(x).empty(tuple(x.shape[a] for a in axes), dtype=x.dtype)
    from . import _transpose
    return _like(_transpose.transpose(x, axes), x)


def transpose(x, axes=None):
    """numpy.transpose(x, axes) of a dask array: the chunk grid permuted
    (dask.array.blockwise, as dask.array.transpose) and every chunk
    transposed by gpuprims.transpose into a C-contiguous chunk.  axes: as
    numpy's (None reverses them; negatives count from the end).  Returns a
    lazy dask array.  Errors as gpuprims.transpose's (numpy's for axes
    that are not a permutation, TypeError for a dtype), when called."""
    from ._transpose import SUPPORTED, _normalize_axes
    x = _take(x, "transpose", SUPPORTED)
    axes = _normalize_axes(x.ndim, axes)  # numpy's errors for axes that are not a permutation
    return da.blockwise(_transpose_chunk, axes, x, tuple(range(x.ndim)), axes=axes, dtype=x.dtype,
                        name=f"gpuprims-transpose-{_tokenize(x, axes)}",
                        meta=_meta_from_array(x._meta, ndim=x.ndim, dtype=x.dtype))
