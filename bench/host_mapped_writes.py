"""Stores over the bus: how fast a kernel writes into page-locked host
memory mapped into the device's address space, by run length, and whether a
1 GiB transpose of a page-locked array can store its output that way while
the copy engine moves the input in (the host pipeline's transpose of two
page-locked operands; cuda/copy2d.cu).  Needs a GPU and CuPy; prints a
markdown report (wall clock to a device sync, median of 5 after a warm-up).

    python bench/host_mapped_writes.py > report.md
"""
import datetime

import cupy as cp
import numpy as np

import gpuprims
from benchlib import wall_ms
from gpuprims import _core

rt = cp.cuda.runtime
SIDE = 16384       # the matrix: SIDE x SIDE float32, 1 GiB
TR = 1024          # input rows per pipelined tile (64 MiB)
NBYTES = SIDE * SIDE * 4

SRC = r'''
// a tile of R input rows x CW columns into the output (cols x pitch), at
// output column r0 + tile row: every output row gets a run of 4 R bytes
template <int R, int CW> __device__ void tile(const float *__restrict__ in, float *out, int cols, long long pitch,
                                              long long r0, int c0, int rb) {
    __shared__ float t[R][CW + 1];
    __syncthreads();
    for (int i = threadIdx.x; i < R * CW; i += blockDim.x)
        t[i / CW][i % CW] = in[(long long)(rb + i / CW) * cols + c0 + i % CW];
    __syncthreads();
    for (int i = threadIdx.x; i < CW * (R / 4); i += blockDim.x) {
        int c = i / (R / 4), q = i % (R / 4);
        *(float4 *)(out + (long long)(c0 + c) * pitch + r0 + rb + 4 * q) =
            make_float4(t[4 * q][c], t[4 * q + 1][c], t[4 * q + 2][c], t[4 * q + 3][c]);
    }
}
// one tile a block
template <int R, int CW> __global__ void store_tiles(const float *__restrict__ in, float *out, int rows, int cols,
                                                     long long pitch, long long r0) {
    tile<R, CW>(in, out, cols, pitch, r0, blockIdx.x * CW, blockIdx.y * R);
}
// gridDim.x blocks walk the tiles
template <int R, int CW> __global__ void store_tiles_few(const float *__restrict__ in, float *out, int rows, int cols,
                                                         long long pitch, long long r0) {
    int tx = cols / CW, n = tx * (rows / R);
    for (int id = blockIdx.x; id < n; id += gridDim.x) tile<R, CW>(in, out, cols, pitch, r0, id % tx * CW, id / tx * R);
}
__global__ void store_copy(const float4 *__restrict__ in, float4 *out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        out[i] = in[i];
}
'''
RC = [(32, 32), (64, 32), (128, 32), (256, 32), (512, 16), (1024, 8)]  # rows x columns of a tile


def pinned():
    """The matrix's bytes of page-locked memory as float32 (cudaHostAlloc:
    mapped, its device address is its host address) and that address."""
    x = gpuprims.empty_pinned(SIDE * SIDE, np.float32)
    return x.ctypes.data, x


def main():
    names = [f"store_tiles<{r}, {c}>" for r, c in RC] + ["store_tiles_few<256, 32>", "store_copy"]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
    tiles = {r: (mod.get_function(f"store_tiles<{r}, {c}>"), c) for r, c in RC}
    few = mod.get_function("store_tiles_few<256, 32>")
    copy = mod.get_function("store_copy")
    pin_in, a = pinned()
    pin_out, b = pinned()
    sync = cp.cuda.Device().synchronize
    a[:] = np.random.default_rng(1).standard_normal(SIDE * SIDE, dtype=np.float32)
    dev = cp.empty(SIDE * SIDE, cp.float32)
    rows = []

    def row(what, ms, ok=""):
        rows.append(f"| {what} | {ms:.2f} | {NBYTES / ms / 1e6:.1f} | {ok} |")

    def check():
        want = a.reshape(SIDE, SIDE).T[::997, ::1013]
        return "yes" if np.array_equal(b.reshape(SIDE, SIDE)[::997, ::1013], want) else "NO"

    row("copy engine, host -> device",
        wall_ms(lambda: rt.memcpyAsync(dev.data.ptr, pin_in, NBYTES, 1, 0), sync=sync))
    row("copy engine, device -> host",
        wall_ms(lambda: rt.memcpyAsync(pin_out, dev.data.ptr, NBYTES, 2, 0), sync=sync))
    row("kernel stores, one run (16-byte stores, 1056 blocks)",
        wall_ms(lambda: copy((132 * 8,), (256,), (dev, cp.uint64(pin_out), cp.int64(NBYTES // 16))), sync=sync))
    rt.memcpy(dev.data.ptr, pin_in, NBYTES, 1)
    for r, (kf, cw) in tiles.items():
        def full(kf=kf, cw=cw, r=r):
            for k in range(SIDE // TR):
                kf((SIDE // cw, TR // r), (256,), (dev[k * TR * SIDE:], cp.uint64(pin_out), cp.int32(TR),
                                                    cp.int32(SIDE), cp.int64(SIDE), cp.int64(k * TR)))
        b[:] = 0
        row(f"kernel stores a transpose, runs of {4 * r} B (tiles {r} x {cw}, a block each)",
            wall_ms(full, sync=sync), check())

    def pipeline(launch, tr, pitched):
        """SIDE / tr tiles of tr input rows: copied in by the copy engine
        (3 device buffers), transposed by launch(k, in, out), and, pitched,
        copied out by the copy engine as rows of 4 tr bytes."""
        n = SIDE // tr
        ins = [cp.empty(tr * SIDE, cp.float32) for _ in range(3)]
        outs = [cp.empty(tr * SIDE, cp.float32) for _ in range(3)]
        s_in, s_k, s_out = (cp.cuda.Stream(non_blocking=True) for _ in range(3))

        def run():
            ev_k, ev_o = [None] * n, [None] * n
            for k in range(n):
                if k >= 3:
                    s_in.wait_event(ev_k[k - 3])
                    if pitched:
                        s_k.wait_event(ev_o[k - 3])
                rt.memcpyAsync(ins[k % 3].data.ptr, pin_in + k * tr * SIDE * 4, tr * SIDE * 4, 1, s_in.ptr)
                e = cp.cuda.Event()
                e.record(s_in)
                s_k.wait_event(e)
                with s_k:
                    launch(k, ins[k % 3], outs[k % 3])
                ev_k[k] = cp.cuda.Event()
                ev_k[k].record(s_k)
                if pitched:
                    s_out.wait_event(ev_k[k])
                    rt.memcpy2DAsync(pin_out + k * tr * 4, SIDE * 4, outs[k % 3].data.ptr, tr * 4, tr * 4, SIDE, 2,
                                     s_out.ptr)
                    ev_o[k] = cp.cuda.Event()
                    ev_o[k].record(s_out)
            cp.cuda.get_current_stream().wait_event(ev_o[-1] if pitched else ev_k[-1])
        b[:] = 0
        return wall_ms(run, sync=sync), check()

    for g in (16, 32, 48, 64, 96, 132, 264):
        def stores(k, x, _, g=g):
            few((g,), (256,), (x, cp.uint64(pin_out), cp.int32(TR), cp.int32(SIDE), cp.int64(SIDE), cp.int64(k * TR)))
        row(f"pipelined: copy engine in, {g} blocks store 1 KiB runs", *pipeline(stores, TR, False))
    kf, cw = tiles[256]
    for tr in (1024, 2048, 4096):
        def into_device(k, x, y, tr=tr):
            kf((SIDE // cw, tr // 256), (256,), (x, y, cp.int32(tr), cp.int32(SIDE), cp.int64(tr), cp.int64(0)))
        row(f"pipelined: copy engine in, kernel into device memory, copy engine out as rows of {4 * tr} B "
            "(cudaMemcpy2DAsync)", *pipeline(into_device, tr, True))
    # the library's own (csrc/pipeline.c + cuda/copy2d.cu), by the storing
    # kernel's blocks (pipeline_config's private store_blocks; 0: default)
    x = a.reshape(SIDE, SIDE)
    o = gpuprims.empty_pinned((SIDE, SIDE), np.float32)
    lib = []
    for blocks in (4, 6, 8, 12, 16, 24, 32, 64, 0):
        _core.pipeline_config(store_blocks=blocks)
        o[...] = 0
        ms = wall_ms(lambda: gpuprims.transpose(x, out=o))
        ok = "yes" if np.array_equal(o[::997, ::1013], x.T[::997, ::1013]) else "NO"
        lib.append(f"| {blocks if blocks else 'default'} | {ms:.2f} | {NBYTES / ms / 1e6:.1f} | {ok} |")
    _core.pipeline_config(store_blocks=0)

    props = rt.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print("# Kernel stores into mapped page-locked host memory (bench/host_mapped_writes.py)\n")
    print(f"GPU: {name}; date {datetime.date.today()}. 1 GiB (a {SIDE}^2 float32 matrix) each row; wall clock "
          "to a device sync, median of 5 after a warm-up; `ok`: the transposed output checked against NumPy "
          "on a sample of elements.\n")
    print("| what | ms | GB/s | ok |\n|---|---:|---:|---|")
    print("\n".join(rows))
    print("\n## gpuprims.transpose(x, out=o), both page-locked, by the storing kernel's blocks\n")
    print("| blocks | ms | GB/s each way | ok |\n|---|---:|---:|---|")
    print("\n".join(lib))


if __name__ == "__main__":
    main()
