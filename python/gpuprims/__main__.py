"""python -m gpuprims: the journey tables timed on this machine's GPU.

    python -m gpuprims [--family reduce|scan|transpose ...] [--n N] [--shape RxC]
                       [--dtype float32] [--op sum] [--repeat 30] [--k 5]
                       [--json FILE] [--plot FILE] [--no-progress] [--no-numpy-in]
                       [--backend auto]

Prints the GPU line (name, SMs, memory, measured copy roof), then one table
per family (gpuprims.compare): every variant in journey order, CUB / cuBLAS,
the copy roof and NumPy on the CPU, measured in this one run.  After each,
its "NumPy in" table: the public call end to end on a NumPy array (NumPy
out for a scan or transpose: the host pipeline's pinned chunks), the same
call on a page-locked copy of the array (gpuprims.empty_pinned: copied in
place), NumPy on the host, and the bus roof - pinned host<->device copies
of the same bytes, measured in the same run.

Without a GPU (or with --backend emulator) every variant runs once on the
emulator backend, at small sizes, and the tables show results checked
against NumPy - emulated, with no GPU timings and no bandwidth; --json
writes those results, --plot says why it draws nothing.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time

import numpy as np

from . import _core
from . import _backend
from ._arrays import empty_pinned
from ._bench import Progress, compare, copy_roof
from ._emulated import emulated_journey, format_emulated_table
from ._family import FAMILIES, OP_CODES, Case, random_input, size_text
from ._table import Column, Table

ROOF_BYTES = 1 << 28  # the GPU line's copy: 256 MiB, far past any L2


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


def shape(text: str) -> tuple:
    """A matrix shape: 8192x8192, 4000,6000 or 2**12x2**13."""
    parts = re.split(r"[x,]", text.lower().replace(" ", ""))
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"not a shape: {text!r} (e.g. 8192x8192 or 4000,6000)")
    return (size(parts[0]), size(parts[1]))


def _or(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _size_help(sized_by) -> str:
    """Which families take this size, their defaults and their emulated ones."""
    fams = [f for f in FAMILIES.values() if f.sized_by == sized_by]
    def text(size):
        return "x".join(map(str, size)) if isinstance(size, tuple) else f"2**{size.bit_length() - 1}"
    return (f"for {_or(f.name for f in fams)} (default "
            + ", ".join(f"{text(f.default_size)}" + (f" for {f.name}" if len(fams) > 1 else "") for f in fams)
            + "; on the emulator "
            + ", ".join(f"{text(f.emulated_size)}" + (f" for {f.name}" if len(fams) > 1 else "") for f in fams)
            + ")")


def parser() -> argparse.ArgumentParser:
    dtypes = sorted({d.name for f in FAMILIES.values() for d in f.dtypes})
    with_op = [f.name for f in FAMILIES.values() if "op" in f.options]
    narrow = min(FAMILIES.values(), key=lambda f: len(f.dtypes))
    p = argparse.ArgumentParser(prog="python -m gpuprims", description=__doc__.splitlines()[0])
    p.add_argument("--family", action="append", choices=list(FAMILIES),
                   help=f"a family to time (repeatable; default: all {len(FAMILIES)})")
    p.add_argument("--n", type=size, default=None,
                   help="elements: 1000000, 2**24 or 2^24, " + _size_help("n"))
    p.add_argument("--shape", type=shape, default=None,
                   help="matrix: ROWSxCOLS, " + _size_help("shape"))
    p.add_argument("--dtype", default="float32", choices=dtypes,
                   help=f"element type ({_or(f.name for f in FAMILIES.values() if f.dtypes == narrow.dtypes)}: "
                        f"{', '.join(d.name for d in narrow.dtypes)})")
    p.add_argument("--op", default="sum", choices=list(OP_CODES), help=f"{_or(with_op)} operator")
    p.add_argument("--repeat", type=int, default=30, help="timed runs per variant (median shown)")
    p.add_argument("--k", type=int, default=5, help="extra runs per variant counted for determinism")
    p.add_argument("--json", metavar="FILE", help="also write every measurement as JSON")
    p.add_argument("--plot", metavar="FILE", help="also draw the tables as bar charts (needs matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--no-numpy-in", action="store_true",
                   help="skip the NumPy-in tables (end to end on NumPy arrays vs NumPy vs the bus roof)")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda", "emulator"],
                   help="auto: the GPU if one is visible, else the emulator (CPU, results only)")
    return p


def check_args(p, args) -> list:
    families = list(dict.fromkeys(args.family or FAMILIES))
    dtype = np.dtype(args.dtype)
    for name in families:
        fam = FAMILIES[name]
        if dtype not in fam.dtypes:
            p.error(f"{name} takes --dtype {_or(d.name for d in fam.dtypes)}, not {args.dtype}")
    if args.repeat < 1 or args.k < 0:
        p.error("--repeat must be at least 1 and --k at least 0")
    return families


def _size(args, fam):
    """The size the command line gives a family (--n or --shape), or None."""
    return getattr(args, fam.sized_by)


def gpu_line(info, roof) -> str:
    cc = info["compute_capability"]
    return (f"GPU: {info['name']} (sm_{cc[0]}{cc[1]}), {info['multiprocessors']} SMs, "
            f"{info['total_memory'] / 2**30:.0f} GiB, L2 {info['l2_cache_bytes'] / 2**20:.0f} MiB; "
            f"copy roof {roof['gbps']:.0f} GB/s (device-to-device, {ROOF_BYTES >> 20} MiB)")


def save_plot(tables, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib, which is not installed: pip install matplotlib") from None
    fig, axes = plt.subplots(len(tables), 1, figsize=(9, 5 * len(tables)), squeeze=False)
    for t, ax in zip(tables, axes[:, 0]):
        t.plot(ax=ax)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- the NumPy-in tables: end to end on host arrays against the bus

NUMPY_IN_COLUMNS = [
    Column("variant", "row", align="<"),
    Column("median_ms", "ms", ".2f"),
    Column("gbps", "GB/s", ".1f"),
    Column("roof_pct", "% bus roof", ".0f"),
    Column("x_numpy", "x NumPy", ".2f"),
    Column("matches", "ok", align="<"),
    Column("note", "what", align="<"),
]
EMULATOR_NO_NUMPY_IN = ("NumPy-in tables skipped: the emulator has no bus and no GPU; its times would "
                        "mean nothing (no GPU timings are ever reported from the emulator)")


def _wall_ms(fn, repeat):
    """Wall-clock ms of fn() over repeat runs, after one untimed run."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t0))
    return times


def numpy_in_table(fam, title, times, in_bytes, out_bytes, matches, err=None) -> Table:
    """The NumPy-in table from measured times (lists of ms): times["gpuprims"]
    (the public call, NumPy in and out), ["pinned"] (optional: the same
    call on a page-locked copy of the input, gpuprims.empty_pinned, which
    the pipeline copies in place), ["numpy"] (NumPy on the host),
    ["h2d"] / ["d2h"] (pinned copies of the input's / the output's bytes;
    ["d2h"] None where the output is a value), ["pageable"] (a pageable
    host->device copy of the input: the bus without the pipeline).  The
    bus roof is the slower of the two pinned one-way copies (copies in and
    out overlap); % bus roof = roof time / the row's time; GB/s: the bytes
    the row moves (in + out for gpuprims and NumPy, one way for a copy)."""
    med = {k: statistics.median(v) for k, v in times.items() if v}
    roof = max(med["h2d"], med.get("d2h") or 0.0)
    moved = in_bytes + out_bytes
    rows = [
        {"variant": "gpuprims", "bytes": moved, "matches": matches, "max_error": err,
         "note": "the public call, NumPy in" + (", NumPy out" if out_bytes and "d2h" in med else "")},
    ]
    if times.get("pinned"):
        rows.append({"variant": "gpuprims, pinned in", "bytes": moved,
                     "note": "the same call on a page-locked input (gpuprims.empty_pinned): copied in place"})
    rows += [
        {"variant": "numpy", "bytes": moved, "note": "NumPy on the host"},
        {"variant": "pinned h2d", "bytes": in_bytes, "note": "host->device copy of the input, pinned"},
    ]
    if "d2h" in med:
        rows.append({"variant": "pinned d2h", "bytes": out_bytes, "note": "device->host copy of the output, pinned"})
    rows.append({"variant": "pageable h2d", "bytes": in_bytes,
                 "note": "host->device copy of the input, pageable (no pipeline)"})
    keys = {"gpuprims": "gpuprims", "gpuprims, pinned in": "pinned", "numpy": "numpy", "pinned h2d": "h2d",
            "pinned d2h": "d2h", "pageable h2d": "pageable"}
    for r in rows:
        t = times[keys[r["variant"]]]
        m = med[keys[r["variant"]]]
        r.update(median_ms=m, min_ms=min(t), max_ms=max(t), times_ms=list(t), gbps=r["bytes"] / m / 1e6,
                 roof_pct=100.0 * roof / m, x_numpy=med["numpy"] / m)
    meta = {"family": fam.name, "in_bytes": in_bytes, "out_bytes": out_bytes, "bus_roof_ms": roof,
            "speedup_vs_numpy": med["numpy"] / med["gpuprims"], "roof_fraction": roof / med["gpuprims"]}
    footer = (f"bus roof {roof:.2f} ms: the slower pinned one-way copy of the data, measured in this run; "
              f"wall clock, median of {len(times['gpuprims'])}")
    return Table(rows, NUMPY_IN_COLUMNS, title=title, meta=meta, footer=footer, plot_key="roof_pct",
                 plot_label="% bus roof")


def measure_numpy_in(fam, size, dtype, op, repeat, progress) -> Table:
    """The NumPy-in table of one family on the GPU: the public call on a
    random NumPy array of `size` (progress=True shows the pipeline's line
    for a call past 2 s), NumPy on the host, pinned and pageable copies."""
    x = random_input(fam.input_shape(size), dtype, seed=1)
    case = Case(fam, x, op=op)
    out_shape = case.out_shape(fam.auto)
    in_bytes = x.nbytes
    out_bytes = 0 if out_shape is None else case.n * case.acc.itemsize
    got = fam.apply(x, "auto", op=op, progress=progress)
    matches, err, _unit = case.check(got)
    xp = empty_pinned(x.shape, x.dtype)
    xp[...] = x
    matches = matches and bool(case.check(fam.apply(xp, "auto", op=op))[0])
    times = {
        "gpuprims": _wall_ms(lambda: fam.apply(x, "auto", op=op, progress=progress), repeat),
        "pinned": _wall_ms(lambda: fam.apply(xp, "auto", op=op, progress=progress), repeat),
        "numpy": _wall_ms(case.numpy, repeat),
        "h2d": _core.time_host_copy(in_bytes, True, True, repeat),
        "d2h": _core.time_host_copy(out_bytes, False, True, repeat) if out_bytes else None,
        "pageable": _core.time_host_copy(in_bytes, True, False, repeat),
    }
    title = f"NumPy in: {case.title()} - wall clock per call, median of {repeat}"
    return numpy_in_table(fam, title, times, in_bytes, out_bytes, bool(matches), err)


def emulated(args, families, reason) -> int:
    """The journeys on the emulator backend: results checked against NumPy,
    no timings."""
    print(f"{reason}: the journeys run on the emulator backend (the same kernels on the CPU) - "
          f"emulated results, no GPU timings, no bandwidth.", flush=True)
    progress = None if args.no_progress else Progress()
    bad, tables = [], []
    for name in families:
        fam = FAMILIES[name]
        size = _size(args, fam) or fam.emulated_size
        rows, want = emulated_journey(name, **{fam.sized_by: size}, dtype=args.dtype, op=args.op,
                                      progress=progress)
        title = f"{fam.what(args.op, True)}, {size_text(fam.input_shape(size))}, {args.dtype} (emulated)"
        print(format_emulated_table(rows, want, title=f"\n{title}\n"), flush=True)
        bad += [f"{name}/{r['variant']}" for r in rows if r.get("ok") is False]
        tables.append({"family": name, "title": title, "shape": list(fam.input_shape(size)), "dtype": args.dtype,
                       "op": args.op if "op" in fam.options else None, "numpy": want, "rows": rows})
    if not args.no_numpy_in:
        print(f"\n{EMULATOR_NO_NUMPY_IN}.", flush=True)
    if args.json:
        doc = {"backend": "emulator", "reason": reason,
               "note": "emulated results checked against NumPy; no GPU timings (cpu_ms is the time the CPU "
                       "took to emulate the kernels, not a GPU time)",
               "tables": tables, "numpy_in": {"skipped": EMULATOR_NO_NUMPY_IN}}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote the emulated results to {args.json}")
    if args.plot:
        print(f"--plot: {args.plot} not written: the emulator measures no GPU times to draw "
              f"(the tables above are its results; run on a machine with a GPU for the charts)", file=sys.stderr)
    if bad:
        print("MISMATCH (output differs from NumPy beyond the tolerance): " + ", ".join(bad))
        return 1
    return 0


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    families = check_args(p, args)

    ok, why = _core.cuda_status()
    if args.backend == "cuda" and not ok:
        print(f"No CUDA GPU visible ({why}); the cuda backend cannot run.", file=sys.stderr)
        return 2
    if args.backend == "emulator" or not ok:
        return emulated(args, families, "--backend emulator" if ok else f"No CUDA GPU visible ({why})")
    if _backend.current != "cuda":  # e.g. GPUPRIMS_BACKEND=emulator with a GPU visible
        _backend.set_backend("cuda")

    info = _core.device_info()
    roof = copy_roof(ROOF_BYTES, repeat=20)
    print(gpu_line(info, roof), flush=True)
    progress = None if args.no_progress else Progress()
    tables, host_tables = [], []
    for name in families:
        fam = FAMILIES[name]
        size = _size(args, fam) or fam.default_size
        t = compare(name, **{fam.sized_by: size}, op=args.op, dtype=args.dtype, repeat=args.repeat, k=args.k,
                    progress=progress)
        tables.append(t)
        print(f"\n{t}", flush=True)
        if not args.no_numpy_in:
            # host calls take ms to s each: at most 10 timed runs
            h = measure_numpy_in(fam, size, args.dtype, args.op, min(args.repeat, 10), not args.no_progress)
            host_tables.append(h)
            print(f"\n{h}", flush=True)
    if args.json:
        doc = {"gpu": info, "roof": {k: roof[k] for k in ("median_ms", "min_ms", "max_ms", "gbps")},
               "roof_bytes": ROOF_BYTES, "tables": [json.loads(t.to_json()) for t in tables]}
        if not args.no_numpy_in:
            doc["numpy_in"] = [json.loads(h.to_json()) for h in host_tables]
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        save_plot(tables, args.plot)
    bad = [f"{t.meta['family']}/{r['variant']}" for t in tables + host_tables for r in t
           if r.get("matches") is False]
    if bad:
        print("MISMATCH (output differs from NumPy beyond the tolerance): " + ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
