"""The reproducible float sum (gpuprims' determinism="gpu_to_gpu") written
from its definition, in NumPy, independently of the library's code.

Definition (Ahrens, Demmel and Nguyen, "Algorithms for Efficient
Reproducible Floating Point Summation", ACM TOMS 46(3), 2020: binned
summation with K bins of W bits):
  bin j has the quantum u_j = 2^(E0 + j W);
  J = the smallest j >= K-1 with |x| <= 2^(E0 + j W + W - 1) for every
      finite x of the input;
  m = J - K + 1;  V = sum_i RNE(x_i / u_m) * u_m  (exact, ties to even);
  the result is V rounded once to the dtype (nearest, ties to even; beyond
  the largest float: +-Inf);
  any NaN, or +Inf and -Inf, gives NaN (0x7fc00000 / 0x7ff8000000000000);
  one infinity sign alone gives it; a zero V is +0.0 (numpy.sum starts
  from +0.0, so even a sum of -0.0 alone is +0.0).
The parameters are cuda/rfa.cuh's (float32: W = 21, K = 3; float64: W = 26,
K = 3).  Vectorized: 2^24 elements take a few seconds.
"""
from __future__ import annotations

import json
import os

import numpy as np

PARAMS = {
    np.dtype(np.float32): dict(P=24, W=21, K=3, E0=-149, EMAX=128),
    np.dtype(np.float64): dict(P=53, W=26, K=3, E0=-1074, EMAX=1024),
}
QNAN = {np.dtype(np.float32): 0x7FC00000, np.dtype(np.float64): 0x7FF8000000000000}
UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def top_index(x, dtype) -> int:
    """J: the smallest j >= K-1 whose limit 2^(E0 + jW + W - 1) holds every
    finite |x|."""
    p = PARAMS[np.dtype(dtype)]
    a = np.abs(x[np.isfinite(x)]).astype(np.float64)
    a = a[a > 0]
    if a.size == 0:
        return p["K"] - 1
    mant, ex = np.frexp(a.max())                 # a = mant * 2^ex, mant in [0.5, 1)
    ceil_log2 = int(ex) - (1 if mant == 0.5 else 0)  # smallest t with a <= 2^t
    # j W >= ceil_log2 - E0 - W + 1
    need = ceil_log2 - p["E0"] - p["W"] + 1
    j = -(-need // p["W"])
    return max(j, p["K"] - 1)


def _exact_sum_of_counts(x64, e_m):
    """sum_i RNE(x_i / 2^e_m) as a Python int; x64 holds finite values in
    float64 (exact for float32 and float64 inputs)."""
    scaled = np.ldexp(x64, -e_m)      # exact, or below 2^-1074 where it rounds to 0 anyway
    q = np.rint(scaled)               # ties to even; an integer of at most 2^78
    total = 0
    for sign, rest in ((1, np.where(q > 0, q, 0)), (-1, np.where(q < 0, -q, 0))):
        for shift in range(0, 104, 26):   # 26-bit chunks, summed in int64
            hi = np.floor(np.ldexp(rest, -26))
            lo = rest - np.ldexp(hi, 26)  # exact, in [0, 2^26)
            total += sign * (int(lo.astype(np.int64).sum()) << shift)
            rest = hi
        assert not rest.any()
    return total


def round_to_dtype(N: int, e: int, dtype) -> int:
    """The bits of N * 2^e rounded to dtype (nearest, ties to even)."""
    p = PARAMS[np.dtype(dtype)]
    P, E0, EMAX = p["P"], p["E0"], p["EMAX"]
    nbits = 8 * np.dtype(dtype).itemsize
    sign = (1 << (nbits - 1)) if N < 0 else 0
    N = abs(N)
    if N == 0:
        return sign
    top = N.bit_length() - 1 + e          # N*2^e in [2^top, 2^(top+1))
    q = max(top - (P - 1), E0)            # exponent of the result's ulp
    if q <= e:
        mant = N << (e - q)
    else:
        sh = q - e
        mant = N >> sh
        rem = N - (mant << sh)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and mant & 1):
            mant += 1
        if mant == 1 << P:
            mant >>= 1
            q += 1
    bias = (1 << (nbits - P - 1)) - 1
    if mant >= 1 << (P - 1):
        if q + P - 1 >= EMAX:
            return sign | ((EMAX + bias) << (P - 1))
        return sign | ((q + P - 1 + bias) << (P - 1)) | (mant - (1 << (P - 1)))
    return sign | mant


def rfa_sum_bits(x, dtype=None) -> int:
    """The bits (an int) of the gpu_to_gpu sum of x, accumulated in dtype
    (float32 or float64; default x's dtype; float16 input accumulates in
    float32)."""
    x = np.asarray(x).ravel()
    if dtype is None:
        dtype = np.float32 if x.dtype == np.float16 else x.dtype
    dtype = np.dtype(dtype)
    p = PARAMS[dtype]
    x = x.astype(dtype)
    nbits = 8 * dtype.itemsize
    inf_bits = ((1 << (nbits - p["P"])) - 1) << (p["P"] - 1)
    nan = np.isnan(x).any()
    pos = bool((x == np.inf).any())
    neg = bool((x == -np.inf).any())
    if nan or (pos and neg):
        return QNAN[dtype]
    if pos:
        return inf_bits
    if neg:
        return inf_bits | (1 << (nbits - 1))
    J = top_index(x, dtype)
    e_m = p["E0"] + (J - p["K"] + 1) * p["W"]
    N = _exact_sum_of_counts(x.astype(np.float64), e_m)
    if N == 0:
        return 0
    return round_to_dtype(N, e_m, dtype)


def rfa_sum(x, dtype=None):
    """The gpu_to_gpu sum of x as a NumPy scalar."""
    x = np.asarray(x)
    if dtype is None:
        dtype = np.float32 if x.dtype == np.float16 else x.dtype
    dtype = np.dtype(dtype)
    return np.array([rfa_sum_bits(x, dtype)], dtype=UINT[dtype]).view(dtype)[0]


# ------------------------------------------------------------ golden inputs
GOLDEN = os.path.join(os.path.dirname(__file__), "data", "rfa_golden.json")

# (kind, size) pairs; every kind for both dtypes.
GOLDEN_SIZES = [1, 2, 3, 7, 31, 32, 33, 255, 1000, 4097, 65537, 1 << 20, (1 << 24) - 3, 1 << 24]
GOLDEN_KINDS = ["normal", "cancel", "mixed", "special", "subnormal", "exponents"]


def golden_input(kind: str, n: int, dtype, seed: int):
    """The input of one golden case: a seeded generator, never zeros."""
    rng = np.random.default_rng([seed, n, GOLDEN_KINDS.index(kind)])
    dtype = np.dtype(dtype)
    if kind == "normal":
        x = rng.standard_normal(n)
    elif kind == "cancel":  # pairs that cancel, shuffled, plus a small residue
        half = rng.standard_normal(n // 2) * 1e6
        x = np.concatenate([half, -half, rng.standard_normal(n - 2 * (n // 2))])
        x = x + rng.standard_normal(n) * 1e-3
        rng.shuffle(x)
    elif kind == "mixed":  # magnitudes from 1e-30 to 1e30, random signs
        x = 10.0 ** rng.uniform(-30, 30, n) * rng.choice([-1.0, 1.0], n)
    elif kind == "special":
        x = rng.standard_normal(n) * 1e3
        k = rng.integers(0, 4)
        idx = rng.integers(0, n, size=min(n, 3))
        x[idx] = [np.nan, np.inf, -np.inf, np.inf][k]
    elif kind == "subnormal":
        tiny = np.finfo(dtype).smallest_subnormal
        x = rng.integers(-2**20, 2**20, n).astype(np.float64) * float(tiny)
        x[x == 0] = float(tiny)
    elif kind == "exponents":  # large near the top of the range: overflow to inf possible
        big = float(np.finfo(dtype).max)
        x = rng.uniform(0.3, 1.0, n) * big * rng.choice([-1.0, 1.0, 1.0], n)
    else:
        raise ValueError(kind)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def golden_cases():
    for dtype in ("float32", "float64"):
        for kind in GOLDEN_KINDS:
            for n in GOLDEN_SIZES:
                yield kind, n, dtype, 1234


def make_golden(path=GOLDEN):
    """Regenerate the golden file from the reference (python
    tests/rfa_reference.py)."""
    rows = []
    for kind, n, dtype, seed in golden_cases():
        x = golden_input(kind, n, dtype, seed)
        bits = rfa_sum_bits(x)
        rows.append(dict(kind=kind, n=n, dtype=dtype, seed=seed,
                         bits="0x%0*x" % (2 * np.dtype(dtype).itemsize, bits)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"about": "gpu_to_gpu sums of tests/rfa_reference.golden_input(kind, n, dtype, "
                            "seed), made by tests/rfa_reference.py", "cases": rows}, f, indent=0)
        f.write("\n")
    return rows


if __name__ == "__main__":
    print(len(make_golden()), "cases written to", GOLDEN)
