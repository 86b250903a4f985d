"""gpuprims.dask on a dask-cuda LocalCUDACluster (run on the 2-GPU machine).

Host-resident data: a dask array of NumPy chunks (float32), persisted in
the workers' memory before anything is timed; gpuprims.dask.sum and
cumsum (its output persisted on the workers, not gathered) on 1 worker
(GPU 0), then on 2 workers (GPUs 0 and 1): wall clock of the whole
compute, the median of --repeat runs after one warm-up.  Each GPU's part
is its share of the bytes over the wall time, against its pinned
host->device roof (cudaMemcpy from page-locked memory, measured on that
worker with CuPy).  Device-resident data (CuPy chunks, where CuPy is
importable): gpuprims.dask's sum / cumsum / transpose against
dask.array's own on the same array and cluster.

    python bench/bench_dask.py                          # 2 GiB, ~2 minutes
    python bench/bench_dask.py --chunk 268435456 --chunks 16   # the 16 GiB case

Writes bench/results/dask-<gpu>-<date>.md and .json (a copy under $OUT
when set) and prints the tables.
"""
import argparse
import json
import os
import re
import statistics
import time
from pathlib import Path

import numpy as np

import gpuprims


def pinned_roof(nbytes=1 << 28, repeat=10):
    """This worker's pinned host->device copy rate (GB/s): the median of
    `repeat` cudaMemcpy calls of nbytes from page-locked memory (CuPy)."""
    import cupy
    host = cupy.cuda.alloc_pinned_memory(nbytes)
    dev = cupy.empty(nbytes, dtype=np.uint8)
    kind = cupy.cuda.runtime.memcpyHostToDevice
    times = []
    for _ in range(repeat + 2):
        t0 = time.perf_counter()
        cupy.cuda.runtime.memcpy(dev.data.ptr, host.ptr, nbytes, kind)
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times[2:]) / 1e9


def timed(fn, repeat):
    fn()  # warm-up: kernels loaded, pools filled
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def run(workers, args, rows, device_rows):
    import dask.array as da
    import distributed
    from dask_cuda import LocalCUDACluster

    import gpuprims.dask as gd

    visible = ",".join(str(i) for i in range(workers))
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, n_workers=workers, threads_per_worker=1) as cluster, \
            distributed.Client(cluster) as client:
        roofs = client.run(pinned_roof) if _has_cupy() else {}
        x = da.random.default_rng(1).random(args.chunk * args.chunks, dtype=np.float32,
                                            chunks=args.chunk)
        x = client.persist(x)
        distributed.wait(x)
        nbytes = x.nbytes

        def persist(lazy):
            y = client.persist(lazy)
            distributed.wait(y)
            del y

        cases = [("gpuprims.dask.sum", lambda: gd.sum(x).compute()),
                 ("gpuprims.dask.cumsum", lambda: persist(gd.cumsum(x))),
                 ("gpuprims.dask.cumsum blelloch", lambda: persist(gd.cumsum(x, method="blelloch"))),
                 ("dask.array.sum (NumPy on the CPU)", lambda: da.sum(x).compute())]
        for name, fn in cases:
            med, lo, hi = timed(fn, args.repeat)
            per_gpu = nbytes / workers / med / 1e9
            roof = statistics.mean(roofs.values()) if roofs else None
            rows.append({"case": name, "workers": workers, "GiB": nbytes / 2**30, "median_s": med,
                         "min_s": lo, "max_s": hi, "GBps": nbytes / med / 1e9, "per_gpu_GBps": per_gpu,
                         "roof_GBps": roof, "roof_pct": 100 * per_gpu / roof if roof else None,
                         "roofs": {str(k): v for k, v in roofs.items()}})
            print(rows[-1], flush=True)
        if _has_cupy() and args.device_chunk:
            import cupy
            n = args.device_chunk * workers * 2
            xd = da.random.default_rng(2).random(n, dtype=np.float32, chunks=args.device_chunk)
            xd = client.persist(xd.map_blocks(cupy.asarray, meta=cupy.empty(0, np.float32)))
            side = 1 << (int(np.log2(args.device_chunk)) // 2)  # square-ish chunks of device_chunk elements
            m = da.random.default_rng(3).random((n // side, side), dtype=np.float32,
                                                chunks=(args.device_chunk // side, side))
            m = client.persist(m.map_blocks(cupy.asarray, meta=cupy.empty((0, 0), np.float32)))
            distributed.wait([xd, m])
            for name, mine, theirs in [
                    ("sum", lambda: gd.sum(xd).compute(), lambda: da.sum(xd).compute()),
                    ("cumsum", lambda: persist(gd.cumsum(xd)), lambda: persist(da.cumsum(xd))),
                    ("transpose", lambda: persist(gd.transpose(m)), lambda: persist(da.transpose(m).map_blocks(
                        cupy.ascontiguousarray)))]:
                a, b = timed(mine, args.repeat)[0], timed(theirs, args.repeat)[0]
                device_rows.append({"case": name, "workers": workers, "GiB": xd.nbytes / 2**30,
                                    "gpuprims_s": a, "dask_s": b, "speedup": b / a})
                print(device_rows[-1], flush=True)


def _has_cupy():
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunk", type=int, default=1 << 26, help="elements per chunk (float32)")
    p.add_argument("--chunks", type=int, default=8, help="number of chunks")
    p.add_argument("--device-chunk", type=int, default=1 << 25,
                   help="elements per CuPy chunk for the device-resident table (0: skip it)")
    p.add_argument("--workers", default="1,2", help="worker (GPU) counts, in order")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    info = gpuprims.device_info()
    date = time.strftime("%Y-%m-%d")
    rows, device_rows = [], []
    for w in [int(s) for s in args.workers.split(",")]:
        run(w, args, rows, device_rows)
    head = (f"# gpuprims.dask on a LocalCUDACluster\n\nGPU: {info['name']}; date {date}; "
            f"{args.chunks} NumPy chunks of {args.chunk} float32 ({args.chunk * args.chunks * 4 / 2**30:.1f} GiB)"
            f", persisted in the workers first.\n\nMethod: wall clock of the whole compute (cumsum: its output "
            f"persisted on the workers), median of {args.repeat} after a warm-up; per GPU = the bytes / workers "
            f"/ time; roof = the pinned host->device cudaMemcpy rate measured on each worker (mean).\n")
    lines = [head, "| case | workers | GiB | median s | GB/s | per GPU GB/s | roof GB/s | % roof | x 1 worker |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base = {r["case"]: r["median_s"] for r in rows if r["workers"] == 1}
    for r in rows:
        sp = base.get(r["case"], float("nan")) / r["median_s"]
        roof = f"{r['roof_GBps']:.1f}" if r["roof_GBps"] else "-"
        pct = f"{r['roof_pct']:.0f}" if r["roof_pct"] else "-"
        lines.append(f"| {r['case']} | {r['workers']} | {r['GiB']:.1f} | {r['median_s']:.3f} | {r['GBps']:.1f} "
                     f"| {r['per_gpu_GBps']:.1f} | {roof} | {pct} | {sp:.2f} |")
    if device_rows:
        lines += ["", "Device-resident (CuPy chunks), wall clock, median:", "",
                  "| case | workers | GiB | gpuprims.dask s | dask.array s | dask / gpuprims |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['case']} | {r['workers']} | {r['GiB']:.1f} | {r['gpuprims_s']:.4f} | {r['dask_s']:.4f} "
                  f"| {r['speedup']:.2f} |" for r in device_rows]
    text = "\n".join(lines) + "\n"
    print(text)
    slug = re.sub(r"[^a-z0-9]+", "-", info["name"].lower()).strip("-")
    out = Path(__file__).resolve().parent / "results" / f"dask-{slug}-{date}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    data = json.dumps({"gpu": info, "date": date, "args": vars(args), "host": rows, "device": device_rows},
                      indent=1, default=str)
    out.with_suffix(".json").write_text(data)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], out.name).write_text(text)
        Path(os.environ["OUT"], out.with_suffix(".json").name).write_text(data)


if __name__ == "__main__":
    main()
