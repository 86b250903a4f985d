"""Wall-clock time per call as a user feels it, through the public API only
(so the same script times any build): gpuprims.sum / cumsum / transpose on
a DeviceArray (the host overhead plus a small kernel) and on a NumPy array
(the whole path: copy in, kernel, copy out), median of many calls, in
microseconds.  Usage: python bench/call_overhead.py [label]"""
import statistics
import sys
import time

import numpy as np

import gpuprims


def per_call_us(fn, calls):
    for _ in range(max(10, calls // 20)):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "this build"
    rng = np.random.default_rng(3)
    rows = []
    for n in (1 << 10, 1 << 20, 1 << 24):
        x = (rng.random(n, dtype=np.float32) * 2 - 1)
        d = gpuprims.to_device(x)
        calls = 2000 if n <= 1 << 20 else 200
        rows.append((f"sum float32 n=2^{n.bit_length() - 1}", per_call_us(lambda: gpuprims.sum(d), calls),
                     per_call_us(lambda: gpuprims.sum(x), calls // 4)))
        rows.append((f"cumsum float32 n=2^{n.bit_length() - 1}", per_call_us(lambda: gpuprims.cumsum(d), calls),
                     per_call_us(lambda: gpuprims.cumsum(x), calls // 4)))
    for shape in ((1024, 1024), (4096, 4096)):
        a = rng.random(shape, dtype=np.float32)
        d = gpuprims.to_device(a)
        rows.append((f"transpose float32 {shape[0]}x{shape[1]}", per_call_us(lambda: gpuprims.transpose(d), 500),
                     per_call_us(lambda: gpuprims.transpose(a), 100)))
    print(f"\n### wall-clock per call, {label} ({gpuprims.device_info()['name']})\n")
    print("| call | DeviceArray in (us) | NumPy in (us) |\n|---|---:|---:|")
    for what, dev, host in rows:
        print(f"| {what} | {dev:.1f} | {host:.1f} |")


if __name__ == "__main__":
    main()
