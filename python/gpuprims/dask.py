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
  each chunk's carry added to it (the scan-then-fan of a multi-block scan).
  A 1-D scan (or axis=None) of NumPy chunks with ``method="sequential"``
  takes each chunk's total (gpuprims.reduce), the op of the totals before
  each chunk, and scans each chunk on the GPU from that carry (the host
  pipeline puts it in front of the chunk): the output leaves the GPU final,
  with no pass over it on the host to add the carry;
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
order of the combining is fixed by the graph).  "gpu_to_gpu" gives the same
bits for any chunking, any split_every, any scheduler and any number of
GPUs or workers - the bits of gpuprims.sum(whole_array,
determinism="gpu_to_gpu"):

- a float sum (float16/32/64, complex as pairs of real parts) runs on
  binned reduction states (gpuprims._rfa; Ahrens, Demmel and Nguyen, ACM
  TOMS 46(3), 2020): each chunk is summed to one 32-byte state per output
  element, the states are merged in Dask's combine tree (an exact merge:
  the tree's shape cannot change the bits) and rounded once in the last
  step.  The states are made by ``_rfa.sum_states``; for a CuPy chunk on
  the device where that function takes device arrays (probed once a
  process), else from a host copy of the chunk (the chunk crosses the bus
  once; only its states go on).  The states are merged and rounded on the
  host (they are few: one per output element);
- integer sums, min and max are exact in any order: the same graph as
  "run_to_run";
- a float sum scan of a 1-D array (or of the flattened data, axis=None):
  each chunk's total as one binned state (host NumPy), the states of the
  chunks before each one merged, and each chunk scanned on the device from
  that state (gpuprims.scan's reproducible row with a carry-in state), so
  every element has the bits of gpuprims.scan(whole_array,
  determinism="gpu_to_gpu"); along an axis of an N-D array, or of complex
  data, it is refused (ValueError).

Host data at the bus's speed: ``pin(x)`` copies a dask array's NumPy
chunks into page-locked memory (gpuprims.empty_pinned), which the host
pipeline copies to the GPU in place; persisted on the workers, every later
call on them skips the packing of pageable chunks, whose pace is set by the
host's memory (bench/results/dask-*).

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

__all__ = ["reduce", "sum", "min", "max", "scan", "cumsum", "transpose", "pin"]

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


def _binned(op, plan, determinism) -> bool:
    """Whether this call needs binned states: a float sum (float16/32/64,
    complex as pairs) with determinism "gpu_to_gpu".  Integer sums, min and
    max are exact in any order, and the other levels ask only for the same
    bits with the same chunking."""
    return determinism == "gpu_to_gpu" and op == "sum" and plan.acc.kind == "f"


def _rfa(who):
    """gpuprims._rfa, the binned reduction states that make a float sum
    independent of the order of its additions; ValueError where this build
    has none."""
    try:
        from . import _rfa as rfa
    except ImportError:
        rfa = None
    if rfa is None or not all(hasattr(rfa, f) for f in ("sum_states", "merge", "finalize", "STATE")):
        raise ValueError(f"gpuprims.dask.{who}: determinism='gpu_to_gpu' needs gpuprims' binned reduction "
                         f"states (gpuprims._rfa: sum_states, merge, finalize), which this build of gpuprims "
                         f"does not have; use determinism='run_to_run' (the same bits for a fixed chunking)")
    return rfa


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


# ------------------------------------------------------------ reproducible float sums

# One probe a process per sum_states function: does it take a CuPy array?
_DEVICE_STATES: dict = {}


def _device_states(rfa) -> bool:
    """Whether rfa.sum_states takes a device (CuPy) array and gives its
    states: tried once on two elements whose sum is known (a host-only
    sum_states refuses the CuPy array with TypeError, as NumPy does)."""
    fn = rfa.sum_states
    if fn not in _DEVICE_STATES:
        try:
            import cupy
            s = _host_states(rfa, fn(cupy.asarray(np.array([1.5, 2.0], np.float32)), axis=0), ())
            ok = float(rfa.finalize(s, np.float32)) == 3.5
        except (TypeError, ValueError, AttributeError, NotImplementedError):
            ok = False
        _DEVICE_STATES[fn] = ok
    return _DEVICE_STATES[fn]


def _host_states(rfa, s, shape):
    """States as a NumPy array of rfa.STATE records of `shape`, from the
    host or the device (a device array of the same 32-byte records)."""
    if not isinstance(s, np.ndarray):
        s = s.get() if hasattr(s, "get") else np.asarray(s)
    if s.dtype != rfa.STATE:
        s = np.ascontiguousarray(s).view(rfa.STATE)
    return s.reshape(shape)


def _pair_dtype(rfa):
    """The states of a complex sum: one record per part."""
    return np.dtype([("real", rfa.STATE), ("imag", rfa.STATE)])


class _States:
    """The three steps of a reproducible float sum over the consecutive
    axes run = (a, b) (a == b: no axis; each element alone), as Dask's
    reduction calls them:

    chunk(x, axis, keepdims): x's states, one per output element, with the
      reduced axes kept as 1s (a complex x: a record of two states);
    combine(s, axis, keepdims): the states concatenated along the reduced
      axes merged into one each (exact: any grouping gives the same states);
    aggregate(s, axis, keepdims): merged, then rounded once to `acc` (what
      the single-array call accumulates in), then cast to `out` (float16
      from float32; a complex result from its rounded parts).

    A class rather than partials: picklable for the distributed scheduler,
    tokenized by its parameters, named in the task graph."""

    def __init__(self, run, acc, pairs, out, cupy_out, who):
        self.run, self.acc, self.out = tuple(run), np.dtype(acc), np.dtype(out)
        self.pairs, self.cupy_out, self.who = bool(pairs), bool(cupy_out), who
        self.__name__ = f"gpuprims-{who}-states"
        rfa = _rfa(who)
        self.states_dtype = _pair_dtype(rfa) if self.pairs else rfa.STATE

    def __reduce__(self):
        return (_States, (self.run, self.acc, self.pairs, self.out, self.cupy_out, self.who))

    def __dask_tokenize__(self):
        return ("gpuprims.dask._States", self.run, self.acc.str, self.pairs, self.out.str, self.cupy_out,
                self.who)

    # -- chunk
    def chunk(self, x, axis=None, keepdims=True, computing_meta=False):
        rfa = _rfa(self.who)
        a, b = self.run
        keep = x.shape[:a] + (1,) * (b - a) + x.shape[b:]
        if computing_meta:
            return np.empty(keep, self.states_dtype)
        from ._arrays import take
        take(x, self.who, _axes.DTYPES, strided=True, allow_0d=True)  # the single call's errors (no copy)
        flat = x.shape[:a] + (math.prod(x.shape[a:b]),) + x.shape[b:]
        if _xp(x) is not np and not _device_states(rfa):
            x = x.get()  # a host copy; the states alone go on
        parts = (x.real, x.imag) if self.pairs else (x,)
        states = [_host_states(rfa, rfa.sum_states(p.reshape(flat), axis=a, dtype=self.acc), keep)
                  for p in parts]
        if not self.pairs:
            return states[0]
        out = np.empty(keep, self.states_dtype)
        out["real"], out["imag"] = states
        return out

    # -- combine
    def combine(self, s, axis, keepdims=True):
        rfa = _rfa(self.who)
        shape = tuple(1 if i in axis else n for i, n in enumerate(s.shape)) if keepdims else \
            tuple(n for i, n in enumerate(s.shape) if i not in axis)
        if s.dtype.names == ("real", "imag"):
            out = np.empty(shape, s.dtype)
            out["real"], out["imag"] = (self.combine(s[f], axis, keepdims) for f in ("real", "imag"))
            return out
        rest = [i for i in range(s.ndim) if i not in axis]
        k = math.prod(s.shape[i] for i in axis)  # >= 1: a state per chunk along every axis
        rows = np.transpose(s, rest + list(axis)).reshape(tuple(s.shape[i] for i in rest) + (k,))
        merged = rows[..., 0]
        for j in range(1, k):
            merged = rfa.merge(merged, rows[..., j])
        return np.asarray(merged, rfa.STATE).reshape(shape)

    # -- aggregate
    def aggregate(self, s, axis, keepdims=False, computing_meta=False):
        rfa = _rfa(self.who)
        s = self.combine(s, axis, keepdims)
        if s.dtype.names == ("real", "imag"):
            r = np.empty(s.shape, self.out)
            r.real, r.imag = rfa.finalize(s["real"], self.acc), rfa.finalize(s["imag"], self.acc)
        else:
            r = rfa.finalize(s, self.acc).astype(self.out, copy=False)
        if self.cupy_out:
            import cupy
            return cupy.asarray(r)
        return r


def _reproducible_sum(x, axes, keepdims, plan, split_every, who):
    """The gpu_to_gpu float sum of x over axes as Dask tasks on binned
    states.  The single-array call reduces each run of consecutive axes in
    turn, the innermost first, rounding to its accumulator in between
    (gpuprims._reduce); so does this, one Dask reduction a run, so the bits
    are the same for every chunking."""
    _rfa(who)
    cupy_out = _xp(x._meta) is not np
    runs = _axes.blocks(axes) or [(0, 0)]
    inter = np.result_type(plan.acc, np.complex64) if plan.pairs else plan.acc
    y = x
    for i, (a, b) in enumerate(reversed(runs)):
        last = i == len(runs) - 1
        out = plan.result if last else inter
        st = _States((a, b), plan.acc, np.dtype(y.dtype).kind == "c", out, cupy_out, who)
        kd = keepdims if len(runs) == 1 else True
        nd = y.ndim if kd else y.ndim - (b - a)
        # dtype: the intermediate arrays' (states); meta: the result's
        y = da.reduction(y, st.chunk, st.aggregate, combine=st.combine, axis=tuple(range(a, b)), keepdims=kd,
                         dtype=st.states_dtype, split_every=split_every, concatenate=True,
                         name=f"gpuprims-{who}-g2g", meta=_meta_from_array(x._meta, ndim=nd, dtype=out))
    if len(runs) > 1 and not keepdims:
        y = da.squeeze(y, axis=axes)
    return y


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
    (the same here), or "gpu_to_gpu": a float sum gives the bits of
    gpuprims.sum(whole_array, determinism="gpu_to_gpu") for any chunking
    and split_every (binned states merged in the tree; see the module's
    docstring); integer sums, min and max are exact anyway.
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
    if _binned(op, plan, determinism):
        return _reproducible_sum(x, axes, keepdims, plan, split_every, _who)
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


def _no_reproducible_scan(who) -> str:
    """Why this float sum scan of a dask array cannot be gpu_to_gpu."""
    return (f"gpuprims.dask.{who}: determinism='gpu_to_gpu' takes a float sum scan of real floats along "
            f"a 1-D array (or axis=None: the flattened data), not an axis of an N-D array or complex data; "
            f"use determinism='run_to_run' (the same bits for a fixed chunking)")


class _ChunkStates:
    """A chunk's gpu_to_gpu total as one binned state (gpuprims._rfa.STATE),
    accumulated in `acc`: what the chunks after it start from."""

    def __init__(self, acc, who):
        self.acc, self.who = np.dtype(acc), who
        self.__name__ = f"gpuprims-{who}-states"

    def __call__(self, chunk):
        rfa = _rfa(self.who)
        host = np.asarray(chunk) if _xp(chunk) is np else chunk.get()
        return rfa.sum_states(host, dtype=self.acc).reshape(1)

    def __dask_tokenize__(self):
        return ("gpuprims.dask._ChunkStates", self.acc.str, self.who)

    def __reduce__(self):
        return (_ChunkStates, (self.acc, self.who))


def _before_each(totals, first, combine):
    """What comes before each chunk, from the chunks' totals in order: the
    first chunk gets `first`, chunk k the combine of chunk k - 1's and that
    chunk's total (an exclusive scan of a few values, on the host)."""
    out = np.empty_like(totals)
    run = first
    for i in range(totals.shape[0]):
        out[i] = run
        run = combine(run, totals[i])
    return out


def _states_before(totals, acc, who):
    """The state of all chunks before each one (the first: the empty sum),
    from the chunks' totals: a sequence of exact merges."""
    rfa = _rfa(who)
    return _before_each(totals, rfa.sum_states(np.empty(0, acc)), rfa.merge)


class _ChunkScanFrom:
    """gpuprims.scan of one 1-D chunk continuing from carry[0], what comes
    before the chunk: with determinism="gpu_to_gpu" the binned state of the
    chunks before it (a float sum); else the op of their totals, one value
    that the host pipeline puts in front of the chunk (a NumPy chunk), so
    that the chunk's output is final as it leaves the GPU."""

    def __init__(self, op, inclusive, dtype, determinism, who):
        self.op, self.inclusive, self.dtype, self.determinism, self.who = op, inclusive, dtype, determinism, who
        self.__name__ = f"gpuprims-{who}-{'g2g' if determinism == 'gpu_to_gpu' else 'carried'}"

    def __call__(self, chunk, carry):
        from . import _scan
        if chunk.size == 0:
            return _xp(chunk).empty(chunk.shape, dtype=_axes.DtypePlan(self.op, chunk.dtype, self.dtype,
                                                                        self.who).result)
        r = _scan.scan(chunk, self.op, inclusive=self.inclusive, dtype=self.dtype, determinism=self.determinism,
                       _who=self.who, _carry_in=carry[0])
        return _like(r, chunk)

    def __dask_tokenize__(self):
        return ("gpuprims.dask._ChunkScanFrom", self.op, self.inclusive, str(self.dtype), self.determinism,
                self.who)

    def __reduce__(self):
        return (_ChunkScanFrom, (self.op, self.inclusive, self.dtype, self.determinism, self.who))


def _carries_before(totals, op, ident):
    """The op of all chunks before each one (the first: the identity), from
    the chunks' totals, in order."""
    return _before_each(totals, np.asarray(ident, totals.dtype), _BINOPS[op])


def _scan_from_befores(x, totals, fold, fold_args, scan_from, result, token=None):
    """The graph of a scan of the 1-D dask array x whose chunks each start
    from what comes before them: `totals` (a dask array of one total a
    chunk), fold(totals, *fold_args) giving what comes before each chunk (one
    task, on the host, in order), then scan_from(chunk, before) on every
    chunk."""
    before = totals.rechunk(x.numblocks[0]).map_blocks(fold, *fold_args, dtype=totals.dtype, meta=totals._meta,
                                                       token=token)
    return da.blockwise(scan_from, "i", x, "i", before.rechunk(1), "i", align_arrays=False, dtype=result,
                        meta=_meta_from_array(x._meta, ndim=1, dtype=result))


def _carried_scan(x, op, inclusive, dtype, plan, inter, ident, who):
    """A scan of the 1-D dask array x of NumPy chunks: each chunk's total
    (gpuprims.reduce, in the accumulator `inter`), the op of the totals of
    the chunks before each one (on the host, in order), then each chunk
    scanned on the GPU from that carry (run_to_run: the carries' order is
    fixed, so the bits are too).  Each chunk's data crosses the bus twice
    (its total, its scan) and its output once; nothing is added to an
    output on the host afterwards."""
    n = x.numblocks[0]
    totals = x.map_blocks(_ChunkTotal(op, inter, who), axis=0, keepdims=True, chunks=((1,) * n,), dtype=inter,
                          meta=np.empty(0, inter))
    return _scan_from_befores(x, totals, _carries_before, (op, ident),
                              _ChunkScanFrom(op, bool(inclusive), dtype, "run_to_run", who), plan.result,
                              token=f"gpuprims-{who}-carries")


def _g2g_scan(x, inclusive, dtype, plan, who):
    """A reproducible float sum scan of the 1-D dask array x: each chunk's
    total as a binned state, the states of the chunks before each one merged
    (exact), each chunk scanned on from them.  Element i has the bits of
    gpuprims.scan(whole, determinism="gpu_to_gpu")'s element i for any
    chunking: a merge of states is exact, so where the chunks are cut does
    not change the state any element is rounded from."""
    state = _rfa(who).STATE
    totals = x.map_blocks(_ChunkStates(plan.acc, who), chunks=((1,) * x.numblocks[0],), dtype=state,
                          meta=np.empty(0, state))
    return _scan_from_befores(x, totals, _states_before, (plan.acc, who),
                              _ChunkScanFrom("sum", bool(inclusive), dtype, "gpu_to_gpu", who), plan.result)


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
    A 1-D scan of NumPy chunks (real data) with "sequential" instead takes
    each chunk's total, the op of the totals before each chunk in order,
    and scans every chunk on from its carry on the GPU (the host pipeline's
    carry-in), inclusive or exclusive, so no output is touched again.
    determinism: "run_to_run" (the default) or "not_guaranteed": the same
    bits for the same chunking; "gpu_to_gpu": integer sums, min and max are
    exact in any chunking (the same graph); a float sum scan of a 1-D array
    (or axis=None) has the single-array call's bits for any chunking and
    either method; along an axis of an N-D array, or of complex data, it is
    a ValueError (see the module's docstring).
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
    ax = None if axis is None else (_axes.normalize_axes(axis, x.ndim, _who) or (None,))[0]  # 0-d: flattened
    binned = _binned(op, plan, determinism)
    if binned and (plan.pairs or (ax is not None and x.ndim > 1)):
        raise ValueError(_no_reproducible_scan(_who))
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
    carried = (method == "sequential" and _xp(x._meta) is np and plan.complex_part is None and not plan.flip
               and x.ndim == 1)
    if binned:
        y = _g2g_scan(x, inclusive, dtype, plan, _who)
    elif carried:
        y = _carried_scan(x, op, inclusive, dtype, plan, inter, ident, _who)
    elif method == "blelloch":
        y = _cumreduction(_ChunkScan(op, bool(inclusive), _who), binop, ident, x, axis=ax, dtype=inter,
                          method="blelloch", preop=_ChunkTotal(op, inter, _who))
    else:
        y = _cumreduction(_ChunkScan(op, True, _who), binop, ident, x, axis=ax, dtype=inter,
                          method="sequential")
        if not inclusive:
            y = _shift(y, ax, ident)
    if packed:
        y = y.rechunk({ax: chunks})
    if _xp(x._meta) is not np and _xp(y._meta) is np:
        # cumreduction's blelloch graph takes its meta from a NumPy probe; the
        # chunks themselves are the input's kind (gpuprims gives CuPy for CuPy)
        y = da.Array(y.dask, y.name, y.chunks, meta=_meta_from_array(x._meta, ndim=y.ndim, dtype=y.dtype))
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


def _pinned_chunk(chunk):
    from ._arrays import empty_pinned
    p = empty_pinned(chunk.shape, chunk.dtype)
    p[...] = chunk
    return p


def pin(x):
    """x with each NumPy chunk copied into page-locked host memory
    (gpuprims.empty_pinned): a lazy dask array of the same chunks and
    values, whose chunks gpuprims copies to the GPU in place (no staging)
    where they are computed and kept - persist it on the workers, then call
    gpuprims.dask's functions on it as often as needed.  A chunk sent to
    another worker arrives there in pageable memory.  TypeError for an
    array of device (CuPy) chunks, which have nothing to pin."""
    if not isinstance(x, da.Array):
        raise TypeError(f"gpuprims.dask.pin takes a dask.array.Array, not {type(x).__name__}; "
                        f"for a NumPy array use gpuprims.empty_pinned")
    meta = getattr(x, "_meta", np.empty(0))
    if _xp(meta) is not np:
        raise TypeError("gpuprims.dask.pin: the chunks are device arrays; only NumPy chunks (host memory) are pinned")
    if type(meta) is not np.ndarray:
        raise TypeError(f"gpuprims.dask.pin: chunks of {type(meta).__name__} would lose what they carry besides "
                        f"their data (a mask); only plain NumPy chunks are pinned")
    return x.map_blocks(_pinned_chunk, dtype=x.dtype, name=f"gpuprims-pin-{_tokenize(x)}",
                        meta=_meta_from_array(x._meta, ndim=x.ndim, dtype=x.dtype))
