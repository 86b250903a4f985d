"""The host-pipeline benchmark (run on the GPU machine): NumPy in, NumPy out.

Per family, the wall-clock time of one gpuprims call on NumPy arrays (the
data crossing the bus through the pinned ring, in chunks: csrc/pipeline.c)
against NumPy on the host and against the bus roof - pinned host->device
and device->host copies of the same bytes, measured in the same run
(_core.time_host_copy) - and to_device / DeviceArray.get of 1 GiB through
the ring against the pageable single copy (the ring switched off by a
threshold above the size) and the pinned roof.  A small call (2^16
elements) through the single-shot path and forced through the pipeline
shows why small calls keep the single shot.  Medians of REPEAT calls after
one warm-up.  Writes bench/results/host-<gpu>-<date>.md and .json (copies
under $OUT).

Targets (H100/H200): NumPy-in sum/min/max, float32 and float64, 2^28 and
2^30 elements: >= 0.6 of the pinned H2D roof and >= 4x NumPy; cumsum 2^28
float32 and transpose 16384^2 float32, NumPy in+out: <= 1.5x the larger
one-way pinned copy and >= 8x NumPy; to_device and get of 1 GiB >= 0.6 of
the pinned roof each way; a 2^16 call no slower than the single shot.
Sizes whose arrays (and the pinned buffer of the roof copy) do not fit the
host's available memory are skipped, with a line saying so.  Registering
the caller's buffer for each call (cudaHostRegister) instead of staging is
measured by bench/host_register_threads.cu (it is slower).  Then the same
works on page-locked arrays (gpuprims.empty_pinned), which the pipeline
copies in place, and what allocating 1 GiB of them costs.  The whole run
takes about three minutes on an H100 machine.

    python bench/bench_host.py          # the GPU run
    python bench/bench_host.py --dry    # the emulator, tiny sizes: checks the script, no meaningful times
"""
import datetime
import json
import os
import statistics
import sys

import numpy as np

import gpuprims
from benchlib import wall_ms, write_results
from gpuprims import _core

REPEAT = 5
_ROOFS = {}  # (bytes, to_device, pinned) -> ms: one measurement per size in a run


def roof_ms(nbytes, to_device, pinned=True):
    key = (nbytes, to_device, pinned)
    if key not in _ROOFS:
        _ROOFS[key] = statistics.median(_core.time_host_copy(nbytes, to_device, pinned, REPEAT))
    return _ROOFS[key]


def available_bytes():
    """The host memory available now (Linux MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def fits(nbytes, copies, what, skipped):
    """Whether `copies` buffers of nbytes fit the host's available memory
    (with 4 GiB to spare); a line saying so where not."""
    free = available_bytes()
    if free is None or copies * nbytes + (4 << 30) <= free:
        return True
    skipped.append(f"{what}: skipped, {copies} x {nbytes / 2**30:.1f} GiB do not fit the host's "
                   f"{free / 2**30:.1f} GiB available")
    print(skipped[-1], flush=True)
    return False


def gbs(nbytes, ms):
    return nbytes / ms / 1e6


def main(dry=False):
    if dry:
        gpuprims.set_backend("emulator")
    big = 1 << (14 if dry else 28)
    sizes = [1 << 14, 1 << 15] if dry else [1 << 28, 1 << 30]
    side = 1 << (6 if dry else 14)
    gib = 1 << (16 if dry else 30)
    rng = np.random.default_rng(0)
    rows, data, skipped = [], [], []

    def row(work, nbytes_in, nbytes_out, ms, numpy_ms, target):
        h2d = roof_ms(nbytes_in, True)
        d2h = roof_ms(nbytes_out, False) if nbytes_out else 0.0
        roof = max(h2d, d2h)
        r = {"work": work, "ms": ms, "numpy_ms": numpy_ms, "h2d_roof_ms": h2d, "d2h_roof_ms": d2h,
             "in_gbs": gbs(nbytes_in, ms), "h2d_roof_gbs": gbs(nbytes_in, h2d),
             "of_roof": roof / ms, "vs_numpy": numpy_ms / ms if numpy_ms else None, "target": target}
        data.append(r)
        numpy_text = "-" if numpy_ms is None else f"{numpy_ms:.1f}"
        ratio = "-" if r["vs_numpy"] is None else f"{r['vs_numpy']:.1f}x"
        rows.append(f"| {work} | {ms:.1f} | {r['in_gbs']:.1f} | {numpy_text} | {ratio} | "
                    f"{h2d:.1f} ({r['h2d_roof_gbs']:.1f} GB/s) | {d2h:.1f} | {r['of_roof']:.2f} | {target} |")
        print(rows[-1], flush=True)

    for n in sizes:
        for dtype in ("float32", "float64"):
            nbytes = n * np.dtype(dtype).itemsize
            what = f"{dtype} 2^{n.bit_length() - 1}"
            if not fits(nbytes, 2, f"sum/min/max {what}", skipped):  # the array and the roof's pinned copy
                continue
            x = rng.random(n, dtype=np.dtype(dtype))  # [0, 1): no zeros to speak of
            x -= 0.5
            for op in ("sum", "min", "max"):
                fn = getattr(gpuprims, op)
                reps = REPEAT if n <= 1 << 28 else 3
                ms = wall_ms(lambda: fn(x), reps)
                npms = wall_ms(lambda: getattr(np, op)(x), reps)
                row(f"{op} {what}", x.nbytes, 0, ms, npms, ">= 0.6 of H2D roof, >= 4x NumPy")
            x = None  # the next arrays in its place
    x = (rng.random(big, dtype=np.float32) - 0.5)
    out = np.empty_like(x)
    ms = wall_ms(lambda: gpuprims.cumsum(x, out=out))
    row(f"cumsum float32 2^{big.bit_length() - 1} (NumPy out)", x.nbytes, out.nbytes, ms,
        wall_ms(lambda: np.cumsum(x, out=out)), "<= 1.5x larger one-way copy, >= 8x NumPy")
    x = out = None
    a = (rng.random((side, side), dtype=np.float32) - 0.5)
    out = np.empty_like(a)
    ms = wall_ms(lambda: gpuprims.transpose(a, out=out))
    row(f"transpose {side}^2 float32 (NumPy out)", a.nbytes, out.nbytes, ms,
        wall_ms(lambda: np.copyto(out, np.ascontiguousarray(a.T))), "<= 1.5x larger one-way copy, >= 8x NumPy")
    a = out = None

    # to_device / get: through the ring, and the pageable single copy (threshold above the size)
    h = rng.integers(0, 255, gib, dtype=np.uint8)
    d = gpuprims.to_device(h)
    put = wall_ms(lambda: gpuprims.to_device(h))
    get = wall_ms(lambda: d.get())
    cfg = _core.pipeline_config()
    _core.pipeline_config(threshold=1 << 62)
    put_pageable, get_pageable = wall_ms(lambda: gpuprims.to_device(h)), wall_ms(lambda: d.get())
    _core.pipeline_config(threshold=cfg["threshold"])
    h2d, d2h = roof_ms(gib, True), roof_ms(gib, False)
    copies = [(f"to_device {gib >> 20} MiB", put, put_pageable, h2d),
              (f"DeviceArray.get {gib >> 20} MiB", get, get_pageable, d2h)]
    copy_rows = []
    for what, ring_ms, pageable_ms, roof in copies:
        copy_rows.append(f"| {what} | {ring_ms:.1f} ({gbs(gib, ring_ms):.1f} GB/s) | {pageable_ms:.1f} "
                         f"({gbs(gib, pageable_ms):.1f} GB/s) | {roof:.1f} ({gbs(gib, roof):.1f} GB/s) | "
                         f"{roof / ring_ms:.2f} |")
        data.append({"work": what, "ring_ms": ring_ms, "pageable_ms": pageable_ms, "pinned_roof_ms": roof})
        print(copy_rows[-1], flush=True)
    h = d = None

    # page-locked operands (gpuprims.empty_pinned): copied in place, chunk by chunk, no ring
    alloc_ms = wall_ms(lambda: gpuprims.empty_pinned(gib, np.uint8), 3)  # cudaHostAlloc + cudaFreeHost
    pinned_rows = []

    def pinned(shape, dtype, fill=True):
        p = gpuprims.empty_pinned(shape, dtype)
        if fill:
            p[...] = rng.random(shape, dtype=np.dtype(dtype))
            p -= 0.5
        return p

    for dtype in ("float32", "float64"):
        x = pinned(big, dtype)
        what = f"{dtype} 2^{big.bit_length() - 1}"
        for op in ("sum", "min", "max"):
            fn = getattr(gpuprims, op)
            row(f"{op} {what} (pinned in)", x.nbytes, 0, wall_ms(lambda: fn(x)),
                wall_ms(lambda: getattr(np, op)(x)), ">= 0.6 of H2D roof, >= 4x NumPy")
        x = None
    x, out = pinned(big, np.float32), pinned(big, np.float32, fill=False)
    row(f"cumsum float32 2^{big.bit_length() - 1} (pinned in and out)", x.nbytes, out.nbytes,
        wall_ms(lambda: gpuprims.cumsum(x, out=out)), wall_ms(lambda: np.cumsum(x, out=out)),
        "<= 1.5x larger one-way copy, >= 8x NumPy")
    x = out = None
    a, out = pinned((side, side), np.float32), pinned((side, side), np.float32, fill=False)
    row(f"transpose {side}^2 float32 (pinned in and out)", a.nbytes, out.nbytes,
        wall_ms(lambda: gpuprims.transpose(a, out=out)),
        wall_ms(lambda: np.copyto(out, np.ascontiguousarray(a.T))), "<= 1.5x larger one-way copy, >= 8x NumPy")
    a = out = None
    h, back = pinned(gib, np.uint8, fill=False), pinned(gib, np.uint8, fill=False)
    h[...] = 7
    d = gpuprims.to_device(h)
    for what, ms, roof in [(f"to_device {gib >> 20} MiB", wall_ms(lambda: gpuprims.to_device(h)), h2d),
                           (f"DeviceArray.get(out=) {gib >> 20} MiB", wall_ms(lambda: d.get(out=back)), d2h)]:
        pinned_rows.append(f"| {what} | {ms:.1f} ({gbs(gib, ms):.1f} GB/s) | {roof:.1f} ({gbs(gib, roof):.1f} GB/s) "
                           f"| {roof / ms:.2f} |")
        data.append({"work": what + " (pinned)", "ms": ms, "pinned_roof_ms": roof})
        print(pinned_rows[-1], flush=True)
    data.append({"work": f"empty_pinned {gib >> 20} MiB (allocate + free)", "ms": alloc_ms})
    h = back = d = None

    # mid-sized arrays: to_device and sum through the ring against the pageable single copy
    mid_rows = []
    for mib in ((1, 4) if dry else (4, 16, 64, 256)):
        h = rng.random((mib << 20) // 4, dtype=np.float32)
        ring_put = wall_ms(lambda: gpuprims.to_device(h))
        ring_sum = wall_ms(lambda: gpuprims.sum(h))
        _core.pipeline_config(threshold=1 << 62)
        plain_put, plain_sum = wall_ms(lambda: gpuprims.to_device(h)), wall_ms(lambda: gpuprims.sum(h))
        _core.pipeline_config(threshold=cfg["threshold"])
        roof = roof_ms(h.nbytes, True)
        mid_rows.append(f"| {mib} MiB | {ring_put:.2f} ({gbs(h.nbytes, ring_put):.1f}) | {plain_put:.2f} "
                        f"({gbs(h.nbytes, plain_put):.1f}) | {ring_sum:.2f} | {plain_sum:.2f} | {roof:.2f} "
                        f"({gbs(h.nbytes, roof):.1f}) |")
        data.append({"work": f"mid-sized {mib} MiB", "ring_to_device_ms": ring_put, "pageable_to_device_ms": plain_put,
                     "ring_sum_ms": ring_sum, "single_shot_sum_ms": plain_sum, "pinned_roof_ms": roof})
        print(mid_rows[-1], flush=True)
    h = None

    # a small call: single shot (the default below the threshold) vs forced through the pipeline
    s = (rng.random(1 << 16) * 2 - 1).astype(np.float32)
    single = wall_ms(lambda: gpuprims.sum(s), 50)
    _core.pipeline_config(threshold=0)
    piped = wall_ms(lambda: gpuprims.sum(s), 50)
    _core.pipeline_config(threshold=cfg["threshold"])
    data.append({"work": "sum float32 2^16", "single_shot_ms": single, "pipeline_ms": piped})
    small = f"| sum float32 2^16 | {single * 1e3:.0f} us | {piped * 1e3:.0f} us |"
    print(small, flush=True)

    info = gpuprims.device_info()
    date = datetime.date.today().isoformat()
    head = (f"GPU: {info['name']}, {info['total_memory'] / 2**30:.0f} GiB, driver {info['driver_version']}, "
            f"runtime {info['runtime_version']}; {os.cpu_count()} host CPUs; date {date}"
            + ("; EMULATOR: times are CPU times of the emulation, not GPU times" if dry else ""))
    text = "\n".join([
        "# NumPy in, NumPy out: the host pipeline", "", head, "",
        f"Wall-clock per call, median of {REPEAT} after a warm-up; roof = pinned copies of the same bytes "
        f"in this run (of roof = the larger one-way roof time / the call's time).", "",
        "| work | ms | GB/s in | NumPy ms | vs NumPy | H2D roof ms | D2H roof ms | of roof | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|", *rows, "",
        "| copy | pinned ring ms | pageable ms | pinned roof ms | of roof |", "|---|---:|---:|---:|---:|",
        *copy_rows, "",
        f"Page-locked arrays (gpuprims.empty_pinned) are copied in place (rows \"pinned\" above); allocating "
        f"{gib >> 20} MiB of them and freeing it takes {alloc_ms:.1f} ms.", "",
        "| copy, page-locked host array | ms | pinned roof ms | of roof |", "|---|---:|---:|---:|", *pinned_rows, "",
        "| mid-sized float32 | to_device, ring ms (GB/s) | to_device, pageable ms (GB/s) | sum, ring ms | "
        "sum, single shot ms | pinned roof ms (GB/s) |", "|---|---:|---:|---:|---:|---:|", *mid_rows, "",
        "| small call | single shot | through the pipeline |", "|---|---:|---:|", small, "",
        *(f"- {line}" for line in skipped),
        "- cudaHostRegister of the caller's buffer for one call instead of staging: slower than the ring "
        "(bench/results/host-register-threads-*).", ""])
    write_results("host", info, date, text,
                  json.dumps({"gpu": info, "date": date, "rows": data, "skipped": skipped}, indent=1), keep=not dry)
    print(text)


if __name__ == "__main__":
    main(dry="--dry" in sys.argv)
