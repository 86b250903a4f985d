"""Reproducible float sums as mergeable states, on the host (private).

For the host pipeline's chunks and gpuprims.dask: sum each chunk to states,
merge the states (exact), round once at the end, and the bits are those of
one gpuprims.sum(x, determinism="gpu_to_gpu") call over the whole array,
whatever the chunking.  The states are cuda/rfa.cuh's (binned summation
after Ahrens, Demmel and Nguyen, ACM TOMS 46(3), 2020; its header comment
has the definition and the proofs): STATE is the same 32-byte record as
rfa::State<T>, so states made by a kernel can be merged here.

    s = sum_states(chunk, axis=...)            # one state per output element
    s = merge(s1, s2)                          # elementwise, exact, any order
    finalize(s, np.float32)                    # rounded once

Everything here is NumPy on the host: states are few (one per output), and
the per-element work is vectorized.
"""
from __future__ import annotations

import numpy as np

STATE = np.dtype([("index", "<i4"), ("flags", "<u4"), ("bin", "<i8", (3,))])
POS_INF, NEG_INF, NAN_SEEN = 1, 2, 4
# cuda/rfa.cuh's Traits: mantissa digits, bin width, bins, smallest subnormal's
# exponent, first power of two above the largest float
_PARAMS = {
    np.dtype(np.float32): (24, 21, 3, -149, 128),
    np.dtype(np.float64): (53, 26, 3, -1074, 1024),
}
_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
_BLOCK = 1 << 15  # elements a block of sum_states' passes


def _acc_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return np.dtype(np.float32)
    if dtype not in _PARAMS:
        raise TypeError(f"reproducible states are for float16/32/64 sums, not {dtype}")
    return dtype


def sum_states(x, axis=None, dtype=None) -> np.ndarray:
    """The states of the gpu_to_gpu sums of x over `axis` (None: all; an
    int), accumulated in dtype (default: x's; float16 accumulates in
    float32): an array of STATE with x's shape without `axis`."""
    x = np.asarray(x)
    acc = _acc_dtype(dtype if dtype is not None else x.dtype)
    P, W, K, E0, EMAX = _PARAMS[acc]
    x = x.astype(acc, copy=False)
    if axis is None:
        rows = x.reshape(1, -1)
        out_shape = ()
    else:
        axis = axis + x.ndim if axis < 0 else axis
        moved = np.moveaxis(x, axis, -1)
        out_shape = moved.shape[:-1]
        rows = moved.reshape(int(np.prod(out_shape, dtype=np.int64)), moved.shape[-1])
    out = np.zeros(rows.shape[0], STATE)
    finite = np.isfinite(rows)
    out["flags"] = (np.where(np.isnan(rows).any(axis=1), NAN_SEEN, 0)
                    | np.where((rows == np.inf).any(axis=1), POS_INF, 0)
                    | np.where((rows == -np.inf).any(axis=1), NEG_INF, 0))
    a = np.where(finite, np.abs(rows), 0).astype(np.float64)
    top = a.max(axis=1, initial=0.0)
    mant, ex = np.frexp(top)
    ceil_log2 = ex - (mant == 0.5)              # smallest t with top <= 2^t
    need = ceil_log2 - E0 - W + 1
    index = np.maximum(-(-need // W), K - 1)
    index = np.where(top > 0, index, K - 1).astype(np.int32)
    out["index"] = index
    # Each x's counts are its cascade through the K bins (bin J - k holds
    # RNE_{J-k}(x) - RNE_{J-k+1}(x) in units of its quantum), as the kernels
    # deposit it: a merge that raises the index drops whole bins, which is
    # exact only for counts of this form (cuda/rfa.cuh, "WHICH BINS").
    # In column blocks, so that the temporaries stay in the CPU's caches
    # (the counts of a row are sums over its elements: exact in any split).
    bins = np.zeros((rows.shape[0], K), np.int64)
    step = max(1, _BLOCK // max(rows.shape[0], 1))
    e = [(E0 + (index.astype(np.int64) - k) * W)[:, None] for k in range(K)]
    for c0 in range(0, rows.shape[1], step):
        part = rows[:, c0:c0 + step]
        vals = np.where(np.isfinite(part), part, 0).astype(np.float64)
        prev = None
        for k in range(K):
            q = np.rint(np.ldexp(vals, -e[k]))  # RNE_{J-k}(x) / u_{J-k}: an exact integer
            c = q if prev is None else q - np.ldexp(prev, W)  # exact: |c| <= 2^(W-1)
            bins[:, k] += c.astype(np.int64).sum(axis=1)
            prev = q
    out["bin"] = bins
    return out.reshape(out_shape)


def merge(a, b) -> np.ndarray:
    """a (+) b elementwise (broadcasting): both shifted to the larger index,
    the counts added.  Exact and associative: any order, any tree."""
    a, b = np.broadcast_arrays(np.asarray(a, STATE), np.asarray(b, STATE))
    out = np.empty(a.shape, STATE)
    j = np.maximum(a["index"], b["index"])
    bins = np.zeros(a.shape + (3,), np.int64)
    for s in (a, b):
        d = (j - s["index"])[..., None]
        k = np.arange(3)
        src = np.take_along_axis(s["bin"], np.clip(k - d, 0, 2), axis=-1)
        bins += np.where(k - d >= 0, src, 0)
    out["index"], out["flags"], out["bin"] = j, a["flags"] | b["flags"], bins
    return out


def finalize(states, dtype) -> np.ndarray:
    """The states rounded once to dtype (float32 or float64; what
    sum_states accumulated in), as the kernels' rfa::Rfa::convert."""
    dtype = _acc_dtype(dtype)
    P, W, K, E0, EMAX = _PARAMS[dtype]
    states = np.asarray(states, STATE)
    flat = states.ravel()
    nbits = 8 * dtype.itemsize
    sign_bit = 1 << (nbits - 1)
    inf = ((1 << (nbits - P)) - 1) << (P - 1)
    out = np.zeros(flat.size, _UINT[dtype])
    for i, s in enumerate(flat):
        f = int(s["flags"])
        if f & NAN_SEEN or (f & POS_INF and f & NEG_INF):
            out[i] = inf | (1 << (P - 2))
            continue
        if f & (POS_INF | NEG_INF):
            out[i] = inf | (sign_bit if f & NEG_INF else 0)
            continue
        b = [int(v) for v in s["bin"]]
        n = (b[0] << (2 * W)) + (b[1] << W) + b[2]
        e = E0 + (int(s["index"]) - (K - 1)) * W
        out[i] = _round(n, e, P, E0, EMAX, nbits)
    return out.view(dtype).reshape(states.shape)


def _round(n: int, e: int, P: int, E0: int, EMAX: int, nbits: int) -> int:
    """Bits of n * 2^e rounded to nearest, ties to even; +-Inf beyond the range."""
    sign = (1 << (nbits - 1)) if n < 0 else 0
    n = abs(n)
    if n == 0:
        return 0
    q = max(n.bit_length() - 1 + e - (P - 1), E0)  # exponent of the result's ulp
    if q <= e:
        mant = n << (e - q)
    else:
        sh = q - e
        mant, rem = n >> sh, n & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and mant & 1):
            mant += 1
        if mant == 1 << P:
            mant, q = mant >> 1, q + 1
    bias = (1 << (nbits - P - 1)) - 1
    if mant < 1 << (P - 1):
        return sign | mant  # subnormal
    if q + P - 1 >= EMAX:
        return sign | (((1 << (nbits - P)) - 1) << (P - 1))
    return sign | ((q + P - 1 + bias) << (P - 1)) | (mant - (1 << (P - 1)))
