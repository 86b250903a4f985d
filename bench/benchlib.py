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


def wall_ms(fn, repeat=5, sync=None):
    """Median wall-clock ms of fn() over `repeat` calls after one warm-up
    (the ring, the pool, the kernels' first launch); sync() after each call
    where fn only enqueues work (CuPy), none for gpuprims' calls, which
    return when their result is there."""
    def once():
        fn()
        if sync is not None:
            sync()
    once()
    times = []
    for _ in range(repeat):
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


def save_results(family, info, date, parts, data):
    """Write the markdown `parts` to bench/results/<family>-<gpu>-<date>.md
    (a copy, and `data` as JSON, under $OUT when set) and return the exit
    status: 1 if any row's result did not match NumPy."""
    slug = re.sub(r"[^a-z0-9]+", "-", info["name"].lower()).strip("-")
    text = "\n".join(parts) + "\n"
    out = Path(__file__).resolve().parent / "results" / f"{family}-{slug}-{date}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], out.name).write_text(text)
        Path(os.environ["OUT"], out.with_suffix(".json").name).write_text(json.dumps(data, indent=1))
    bad = [r["variant"] for t in data["tables"] for r in t["rows"] if r.get("matches") is False]
    if bad:
        print("MISMATCH:", bad)
        return 1
    return 0
