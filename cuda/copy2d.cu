// copy2d.cu - a pitched copy made by a kernel: `height` rows of `width`
// bytes, `spitch` apart in src and `dpitch` apart in dst.
//
// The host pipeline (csrc/pipeline.c) uses it to write a transpose's tiles
// straight into the caller's page-locked output, mapped into the device's
// address space (runtime host_pinned's mapped address): the kernel's stores cross
// the bus as it makes them.  The copy engine's own pitched copy
// (cudaMemcpy2DAsync) would do the same work, but on an H200 it slows from
// 48 to ~32 GB/s whenever kernels run between its copies
// (bench/results/copy2d-streams-*), which is exactly the pipeline's case.
//
// What makes stores over the bus fast (measured on an H200, PCIe 5.0,
// bench/host_mapped_writes.py, bench/results/mapped-writes-*):
//  * long runs: every run of consecutive addresses costs about the same,
//    ~80 million runs a second; 128-byte runs reach 10 GB/s, 512-byte runs
//    37-39, runs of 1 KiB and more 51 (a device-to-host copy: 55).  A block
//    copies a whole row at a time, 16 bytes a thread where the pointers,
//    pitches and width allow it, so a row is one run.
//  * few blocks: the pipeline stores one tile while the copy engine moves
//    the next one in, and stores issued at full speed slow that copy down
//    (its read requests go up the link with the stores).  The library's 1 GiB transpose of two
//    page-locked operands (rows of 4 KiB) by this kernel's blocks: 8
//    blocks 25.1 ms, 12 25.6, 16 27.0, 32 32.5, 64 35.7.  `blocks` blocks
//    (0: COPY2D_BLOCKS) walk the rows.
#include "common.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int COPY2D_THREADS = 256;
constexpr unsigned COPY2D_BLOCKS = 8;

// W: the access, an unsigned type of 1, 2, 4, 8 or 16 bytes that divides
// both pointers, both pitches and the width.
template <class W>
__global__ void __launch_bounds__(COPY2D_THREADS)
copy2d(const char *__restrict__ src, size_t spitch, char *dst, size_t dpitch, size_t words, size_t height) {
    for (size_t r = blockIdx.x; r < height; r += gridDim.x) {
        const W *s = reinterpret_cast<const W *>(src + r * spitch);
        W *d = reinterpret_cast<W *>(dst + r * dpitch);
        for (size_t k = threadIdx.x; k < words; k += COPY2D_THREADS) d[k] = s[k];
    }
}

template <class W>
cudaError_t launch(const void *src, size_t spitch, void *dst, size_t dpitch, size_t width, size_t height,
                   unsigned blocks, cudaStream_t s) {
    const unsigned grid = unsigned(height < blocks ? height : blocks);
    GP_LAUNCH(copy2d<W>, grid, COPY2D_THREADS, 0, s, static_cast<const char *>(src), spitch,
              static_cast<char *>(dst), dpitch, width / sizeof(W), height);
    return cudaSuccess;
}
}  // namespace

extern "C" cudaError_t GP_SYM(gp_copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                        size_t height, unsigned blocks, cudaStream_t s) {
    if (width > dpitch || width > spitch) return cudaErrorInvalidValue;
    if (width == 0 || height == 0) return cudaSuccess;
    if (blocks == 0) blocks = COPY2D_BLOCKS;
    const size_t all = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | dpitch | spitch | width;
    if (all % 16 == 0) return launch<uint4>(src, spitch, dst, dpitch, width, height, blocks, s);
    if (all % 8 == 0) return launch<uint64_t>(src, spitch, dst, dpitch, width, height, blocks, s);
    if (all % 4 == 0) return launch<uint32_t>(src, spitch, dst, dpitch, width, height, blocks, s);
    if (all % 2 == 0) return launch<uint16_t>(src, spitch, dst, dpitch, width, height, blocks, s);
    return launch<uint8_t>(src, spitch, dst, dpitch, width, height, blocks, s);
}

GP_NAMESPACE_END
