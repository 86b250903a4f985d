"""What the benchmark scripts share: the GPU line, the journey tables timed
with gpuprims.compare, writing them where they are kept, and the wall clock
of a call as a user feels it."""
import datetime
import json
import os
import re
import statistics
import time
from pathlib import Path

import gpuprims


def wall_ms(fn, repeat=5, sync=None, warmup=1, pre=None):
    """Median wall-clock ms of fn() over `repeat` calls after `warmup` calls
    (the ring, the pool, the kernels' first launch); sync() after each call
    where fn only enqueues work (CuPy), none for gpuprims' calls, which
    return when their result is there; pre() before each timed call, not
    timed (e.g. evicting the input from the L2)."""
    def once():
        fn()
        if sync is not None:
            sync()
    for _ in range(warmup):
        once()
    times = []
    for _ in range(repeat):
        if pre is not None:
            pre()
        t0 = time.perf_counter()
        once()
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def begin(title, method):
    """(info, date, parts, data) for a benchmark: the GPU line and the
    method under `title`, and the JSON document the tables go into."""
    info = gpuprims.device_info()
    date = datetime.date.today().isoformat()
    head = (f"GPU: {info['name']}, {info['multiprocessors']} SMs, "
            f"{info['total_memory'] / 2**30:.0f} GiB, L2 {info['l2_cache_bytes'] / 2**20:.0f} MiB, "
            f"driver {info['driver_version']}, runtime {info['runtime_version']}; CUB from CCCL {info['cccl']}; "
            f"date {date}")
    return info, date, [f"# {title}\n\n{head}\n\nMethod: {method}"], {"gpu": info, "date": date, "tables": []}


def journey_tables(family, cases, parts, data, **compare_kw):
    """Time the whole journey of `family` once per case, a (title, keyword
    arguments of gpuprims.compare) pair; each table goes to `parts` as
    markdown and to `data` as JSON, and is printed as it comes."""
    for title, kw in cases:
        t = gpuprims.compare(family, **kw, **compare_kw)
        t.title = title
        parts.append(t.to_markdown())
        data["tables"].append(json.loads(t.to_json()))
        print(parts[-1], flush=True)


def results_path(family, gpu_name, date, results=None):
    """Where a run's markdown goes: <results>/<family>-<gpu>-<date>.md
    (results: bench/results), or -run2, -run3 ... where a run of the same
    day is already there, so that no run overwrites another."""
    slug = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")
    results = Path(results) if results is not None else Path(__file__).resolve().parent / "results"
    stem = f"{family}-{slug}-{date}"
    out, k = results / f"{stem}.md", 2
    while out.exists() or out.with_suffix(".json").exists():
        out, k = results / f"{stem}-run{k}.md", k + 1
    return out


def write_results(family, info, date, text, data, keep=True, results=None, path=None):
    """Write the markdown `text` and the JSON string `data` of a run to
    results_path(...) (keep=False: not into the results folder; path: to
    that file instead, one this run wrote before) and, when $OUT is set,
    copies of both under the same names there; returns the path."""
    out = Path(path) if path is not None else results_path(family, info["name"], date, results)
    if keep:
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
        out.with_suffix(".json").write_text(data)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], out.name).write_text(text)
        Path(os.environ["OUT"], out.with_suffix(".json").name).write_text(data)
    return out


def save_progress(family, info, date, parts, data, path=None, results=None):
    """Write the tables so far, marked as a run that has not finished, and
    return the file's path: a long run calls it after each table, passing
    the path back (None the first time: the next free name), so that a run
    stopped part way - a time limit - still leaves its tables, and ends with
    save_results(..., path=path), which writes the finished file over it."""
    text = "\n".join(parts + ["\n_A run that has not finished: the tables up to here._"]) + "\n"
    return write_results(family, info, date, text, json.dumps(dict(data, unfinished=True), indent=1),
                         results=results, path=path)


def save_results(family, info, date, parts, data, path=None, results=None):
    """Write the markdown `parts` and `data` as JSON (write_results; path:
    over the file of save_progress) and return the exit status: 1 if any
    row's result did not match NumPy."""
    write_results(family, info, date, "\n".join(parts) + "\n", json.dumps(data, indent=1), results=results,
                  path=path)
    bad = [r["variant"] for t in data["tables"] for r in t["rows"] if r.get("matches") is False]
    if bad:
        print("MISMATCH:", bad)
        return 1
    return 0
