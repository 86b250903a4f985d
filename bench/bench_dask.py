"""gpuprims.dask on a dask-cuda LocalCUDACluster (run on the 2-GPU machine).

Host-resident data: a dask array of NumPy chunks (float32), persisted in
the workers' memory before anything is timed, and the same chunks copied
into page-locked memory by gpuprims.dask.pin (persisted too, each worker
pinning its own); gpuprims.dask.sum and
cumsum (its output persisted on the workers, not gathered) on 1 worker
(GPU 0), then on 2 workers (GPUs 0 and 1): wall clock of the whole
compute, the median of --repeat runs after one warm-up.  Each GPU's part
is its share of the bytes over the wall time, against its pinned
host->device roof (cudaMemcpy from page-locked memory, measured on that
worker with CuPy).  Device-resident data (CuPy chunks, where CuPy is
importable): gpuprims.dask's sum / cumsum / transpose against
dask.array's own on the same array and cluster.

determinism="gpu_to_gpu": gpuprims.dask.sum of a smaller array of NumPy
chunks (--g2g-chunk, --g2g-chunks) beside the run_to_run sum of the same
array, on 1 and 2 workers; the bits are checked against one
gpuprims.sum(whole_array, determinism="gpu_to_gpu") call, and against the
same sum of the array in other chunks (1/3 the size).  Each chunk's binned
states come from gpuprims._rfa.sum_states - on the host (NumPy) for NumPy
chunks - so this row measures that path, not a kernel.

    python bench/bench_dask.py                          # 2 GiB + 128 MiB, under 3 minutes
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

import numpy as np

import gpuprims
from benchlib import write_results


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


def where():
    """This worker's GPU as CUDA sees it (its PCI bus id), what
    CUDA_VISIBLE_DEVICES says, and how many CPUs the worker may run on."""
    import cupy
    return {"pci_bus_id": cupy.cuda.Device().pci_bus_id, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "cpus": len(os.sched_getaffinity(0))}


def timed(*fns, repeat, after=lambda: None):
    """(median, min, max) wall seconds of each fn(), the calls taking turns
    (fns[0], fns[1], ..., fns[0], ...) so that a drift of the machine's speed
    falls on all alike; after() runs outside the timed window after each call
    (a persisted result released, so that the next call computes it again
    instead of finding its keys in memory)."""
    for fn in fns:
        fn()  # warm-up: kernels loaded, pools filled
        after()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
            after()
    return [(statistics.median(ts), min(ts), max(ts)) for ts in times]


def run(workers, args, rows, device_rows):
    import dask.array as da
    import distributed
    from dask_cuda import LocalCUDACluster

    import gpuprims.dask as gd

    visible = ",".join(str(i) for i in range(workers))
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, n_workers=workers, threads_per_worker=1) as cluster, \
            distributed.Client(cluster) as client:
        roofs = client.run(pinned_roof) if _has_cupy() else {}
        placed = client.run(where) if _has_cupy() else {}
        print(f"{workers} worker(s): {placed}", flush=True)
        x = da.random.default_rng(1).random(args.chunk * args.chunks, dtype=np.float32,
                                            chunks=args.chunk)
        x = client.persist(x)
        distributed.wait(x)
        nbytes = x.nbytes

        held = []

        def persist(lazy):
            y = client.persist(lazy)
            distributed.wait(y)
            held.append(y)

        def release():
            """Drop the persisted results and wait until the scheduler has
            forgotten their keys: a graph with the same keys persisted while
            they are still held returns at once, without any work."""
            keys = [f.key for y in held for f in distributed.futures_of(y)]
            held.clear()
            deadline = time.perf_counter() + 60
            while keys and time.perf_counter() < deadline and any(client.who_has(keys).values()):
                time.sleep(0.005)

        g2g_rows(client, workers, args, rows)
        xp = client.persist(gd.pin(x))  # the same chunks in page-locked memory
        distributed.wait(xp)
        cases = [("gpuprims.dask.sum", lambda: gd.sum(x).compute()),
                 ("gpuprims.dask.sum, page-locked chunks (pin)", lambda: gd.sum(xp).compute()),
                 ("gpuprims.dask.cumsum", lambda: persist(gd.cumsum(x))),
                 ("gpuprims.dask.cumsum, page-locked chunks (pin)", lambda: persist(gd.cumsum(xp))),
                 ("gpuprims.dask.cumsum blelloch", lambda: persist(gd.cumsum(x, method="blelloch"))),
                 ("dask.array.sum (NumPy on the CPU)", lambda: da.sum(x).compute())]
        for name, fn in cases:
            if not re.search(args.cases, name):
                continue
            (med, lo, hi), = timed(fn, repeat=args.repeat, after=release)
            per_gpu = nbytes / workers / med / 1e9
            roof = statistics.mean(roofs.values()) if roofs else None
            rows.append({"case": name, "workers": workers, "GiB": nbytes / 2**30, "median_s": med,
                         "min_s": lo, "max_s": hi, "GBps": nbytes / med / 1e9, "per_gpu_GBps": per_gpu,
                         "roof_GBps": roof, "roof_pct": 100 * per_gpu / roof if roof else None,
                         "roofs": {str(k): v for k, v in roofs.items()},
                         "gpus": sorted(w["pci_bus_id"] for w in placed.values())})
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
                # calls of tens of milliseconds: more turns than the host rows
                (a, _, _), (b, _, _) = timed(mine, theirs, repeat=max(args.repeat, 15), after=release)
                device_rows.append({"case": name, "workers": workers, "GiB": xd.nbytes / 2**30,
                                    "gpuprims_s": a, "dask_s": b, "speedup": b / a})
                print(device_rows[-1], flush=True)


def g2g_rows(client, workers, args, rows):
    """run_to_run and gpu_to_gpu sums of one array of NumPy chunks; the
    gpu_to_gpu bits against one gpuprims.sum call over the whole array and
    against the same sum of the array rechunked."""
    import dask.array as da
    import distributed

    import gpuprims.dask as gd

    n = args.g2g_chunk * args.g2g_chunks
    if not n:
        return
    xs = client.persist(da.random.default_rng(4).random(n, dtype=np.float32, chunks=args.g2g_chunk))
    distributed.wait(xs)
    single = gpuprims.sum(xs.compute(), determinism="gpu_to_gpu")  # this process, GPU 0
    other = xs.rechunk(max(args.g2g_chunk // 3, 1))
    got = {}
    for name, det in (("gpuprims.dask.sum (run_to_run, small)", "run_to_run"),
                      ("gpuprims.dask.sum gpu_to_gpu", "gpu_to_gpu")):
        def call(det=det):
            got[det] = gd.sum(xs, determinism=det).compute()
        (med, lo, hi), = timed(call, repeat=args.repeat)
        same = None
        if det == "gpu_to_gpu":
            rechunked = gd.sum(other, determinism=det).compute()
            same = (np.asarray(got[det]).tobytes() == np.asarray(single).tobytes()
                    == np.asarray(rechunked).tobytes())
        rows.append({"case": name, "workers": workers, "GiB": xs.nbytes / 2**30, "median_s": med, "min_s": lo,
                     "max_s": hi, "GBps": xs.nbytes / med / 1e9, "per_gpu_GBps": xs.nbytes / workers / med / 1e9,
                     "roof_GBps": None, "roof_pct": None, "bits_as_single_call": same,
                     "value": float(np.asarray(got[det]))})
        print(rows[-1], flush=True)


def _has_cupy():
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunk", type=int, default=1 << 26, help="elements per chunk (float32)")
    p.add_argument("--chunks", type=int, default=8, help="number of chunks")
    p.add_argument("--device-chunk", type=int, default=1 << 25,
                   help="elements per CuPy chunk for the device-resident table (0: skip it)")
    p.add_argument("--g2g-chunk", type=int, default=1 << 22,
                   help="elements per NumPy chunk of the gpu_to_gpu rows (float32)")
    p.add_argument("--g2g-chunks", type=int, default=8, help="number of chunks of the gpu_to_gpu rows (0: skip)")
    p.add_argument("--workers", default="1,2", help="worker (GPU) counts, in order")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cases", default="", help="time only the host-data cases whose name this regex finds")
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
            f"/ time; roof = the pinned host->device cudaMemcpy rate measured on each worker (mean).  "
            f"gpu_to_gpu rows: {args.g2g_chunks} NumPy chunks of {args.g2g_chunk} float32, states made "
            f"on the host (gpuprims._rfa.sum_states), beside run_to_run on the same array; 'bits' says "
            f"whether the result has the bits of one gpuprims.sum(whole, determinism='gpu_to_gpu') call and "
            f"of the array in chunks of a third the size.\n")
    lines = [head, "| case | workers | GiB | median s | GB/s | per GPU GB/s | roof GB/s | % roof | x 1 worker "
             "| bits |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    base = {r["case"]: r["median_s"] for r in rows if r["workers"] == 1}
    for r in rows:
        sp = base.get(r["case"], float("nan")) / r["median_s"]
        roof = f"{r['roof_GBps']:.1f}" if r["roof_GBps"] else "-"
        pct = f"{r['roof_pct']:.0f}" if r["roof_pct"] else "-"
        same = {True: "same", False: "DIFFERENT", None: "-"}[r.get("bits_as_single_call")]
        lines.append(f"| {r['case']} | {r['workers']} | {r['GiB']:.2f} | {r['median_s']:.3f} | {r['GBps']:.1f} "
                     f"| {r['per_gpu_GBps']:.1f} | {roof} | {pct} | {sp:.2f} | {same} |")
    gpus = {r["workers"]: r.get("gpus") for r in rows if r.get("gpus")}
    if gpus:
        lines += ["", "The workers' GPUs (PCI bus ids, as CUDA saw them inside each worker): "
                      + "; ".join(f"{w} worker(s): {', '.join(g)}" for w, g in gpus.items()) + "."]
    g2g = {r["workers"]: r["value"] for r in rows if r["case"] == "gpuprims.dask.sum gpu_to_gpu"}
    if len(g2g) > 1:
        bits = {np.float32(v).tobytes() for v in g2g.values()}
        lines += ["", f"gpu_to_gpu sum on {', '.join(map(str, g2g))} workers: "
                      f"{'the same bits' if len(bits) == 1 else 'DIFFERENT bits'} ({np.float32(next(iter(g2g.values())))!r})."]
    if device_rows:
        lines += ["", "Device-resident (CuPy chunks), wall clock, median:", "",
                  "| case | workers | GiB | gpuprims.dask s | dask.array s | dask / gpuprims |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['case']} | {r['workers']} | {r['GiB']:.1f} | {r['gpuprims_s']:.4f} | {r['dask_s']:.4f} "
                  f"| {r['speedup']:.2f} |" for r in device_rows]
    text = "\n".join(lines) + "\n"
    print(text)
    write_results("dask", info, date, text,
                  json.dumps({"gpu": info, "date": date, "args": vars(args), "host": rows, "device": device_rows},
                             indent=1, default=str))


if __name__ == "__main__":
    main()
