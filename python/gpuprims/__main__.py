"""python -m gpuprims: the reduction journey table on this machine's GPU.

    python -m gpuprims [--n N] [--dtype float32] [--op sum] [--repeat 30] [--backend auto]

Without a GPU (or with --backend emulator) every variant runs once on the
emulator backend, at a small size, and the table shows results checked
against NumPy - emulated, with no GPU timings and no bandwidth.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import gpuprims

from . import _core
from ._journey import (copy_roof, emulated_reduce_journey, format_emulated_table, format_table,
                       random_input, reduce_journey)

EMULATED_N = 1 << 16  # the emulator's default size: a few seconds on one core


def size(text: str) -> int:
    """An element count: 1000000, 1_000_000, 2**24 or 2^24."""
    t = text.replace("_", "").replace("^", "**").strip()
    base, _, exp = t.partition("**")
    try:
        n = int(base) ** int(exp) if exp else int(base)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1000000 or 2**24)") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"the size must be at least 1, got {n}")
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpuprims", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=size, default=None,
                   help="elements: 1000000, 2**24 or 2^24 (default 2**24; 2**16 on the emulator)")
    p.add_argument("--dtype", default="float32", choices=["int32", "int64", "float32", "float64"])
    p.add_argument("--op", default="sum", choices=["sum", "min", "max"])
    p.add_argument("--repeat", type=int, default=30, help="timed runs per variant (median shown)")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda", "emulator"],
                   help="auto: the GPU if one is visible, else the emulator (CPU)")
    args = p.parse_args(argv)

    ok, why = _core.cuda_status()
    if args.backend == "cuda" and not ok:
        print(f"No CUDA GPU visible ({why}); the cuda backend cannot run.", file=sys.stderr)
        return 2
    if args.backend == "emulator" or not ok:
        n = args.n or EMULATED_N
        reason = "--backend emulator" if ok else f"No CUDA GPU visible ({why})"
        print(f"{reason}: the reduction journey runs on the emulator backend (the same kernels on the "
              f"CPU) - emulated results, no GPU timings, no bandwidth.")
        rows, want = emulated_reduce_journey(n, dtype=args.dtype, op=args.op)
        print(format_emulated_table(rows, want, title=f"\nreduce {args.op}, n = {n}, {args.dtype} (emulated)\n"))
        return 0 if all(r.get("ok", True) for r in rows) else 1
    args.n = args.n or 1 << 24

    info = gpuprims.device_info()
    roof = copy_roof(1 << 28, repeat=20, flush_bytes=4 * info["l2_cache_bytes"])
    print(f"GPU: {info['name']} (sm_{info['compute_capability'][0]}{info['compute_capability'][1]}), "
          f"{info['multiprocessors']} SMs, {info['total_memory'] / 2**30:.0f} GiB, "
          f"L2 {info['l2_cache_bytes'] / 2**20:.0f} MiB; copy roof {roof['gbps']:.0f} GB/s")
    rows, roof = reduce_journey(args.n, dtype=args.dtype, op=args.op, repeat=args.repeat)
    print(format_table(rows, roof, title=f"\nreduce {args.op}, n = {args.n}, {args.dtype} "
                                          f"(CUDA events, median of {args.repeat}, L2 flushed)\n"))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
