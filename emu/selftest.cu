// selftest.cu - test-only kernels: they show that the emulator catches what
// it claims to.  Not part of gpuprims._core: tests/test_emulator.py builds
// this file with emu/runtime.cpp and cuda/cast.cu into a library of its own
// and calls gp_emu_selftest_run through ctypes.
//   race            a barrier left out: thread t reads its neighbour's store
//                   before the neighbour has made it (planted race)
//   race_fixed      the same with the barrier
//   warp_lockstep   the seeds' last-warp reduction through volatile shared
//                   memory without __syncwarp (it assumed lock step, a race
//                   since Volta); warp_synced: with the __syncwarp() calls
//   exit_before_barrier  the seed's bug: `if (tid >= n) return;` before
//                   __syncthreads()
//   out_of_bounds   writes one element past the end of `buf` (for
//                   AddressSanitizer builds, GPUPRIMS_EMU_ASAN=1)
//   warp            every warp collective, results into buf
//   too_many_threads, too_much_shared  launches a GPU refuses
//   opted_in_shared  64 KiB after the kernel's opt-in (cudaFuncSetAttribute);
//                   over_opt_in_shared: 96 KiB after an opt-in to 64 KiB;
//                   opt_in_too_far: an opt-in past sm_90's 227 KiB
#include <cstdio>
#include <cstring>

#include "../csrc/runtime.h"

#include "common.cuh"

GP_NAMESPACE_BEGIN
namespace {

template <bool BARRIER>
__global__ void neighbour(long long *out) {
    __shared__ long long s[64];
    const int t = threadIdx.x;
    s[t] = t + 1;
    if (BARRIER) __syncthreads();
    out[t] = s[(t + 1) % 64];
}

template <bool SYNCWARP>
__global__ void last_warp(long long *out) {
    __shared__ long long s[64];
    const unsigned t = threadIdx.x;  // one warp
    s[t] = t + 1;
    s[t + 32] = t + 33;
    __syncwarp();
    volatile long long *v = s;
    for (unsigned offset = 32; offset > 0; offset >>= 1) {
        if (SYNCWARP) {
            const long long x = v[t] + v[t + offset];
            __syncwarp();
            v[t] = x;
            __syncwarp();
        } else {
            v[t] = v[t] + v[t + offset];  // the seed: every lane in lock step
        }
    }
    if (t == 0) out[0] = v[0];
}

__global__ void exit_before_barrier(long long *out, int64_t n) {
    __shared__ long long s[64];
    const int t = threadIdx.x;
    if (t >= n) return;  // the seed's bug: these threads never reach the barrier
    s[t] = t;
    __syncthreads();
    out[t] = s[(t + 1) % n];
}

__global__ void out_of_bounds(long long *out, int64_t n) {
    out[threadIdx.x] = threadIdx.x;
    if (threadIdx.x == 0) out[n] = -1;  // one past the end
}

__global__ void warp_collectives(long long *out) {
    const int t = threadIdx.x;
    long long *row = out + 8 * t;
    row[0] = __shfl_sync(FULL_MASK, t * 10, 3);
    row[1] = __shfl_up_sync(FULL_MASK, t * 10, 1);
    row[2] = __shfl_down_sync(FULL_MASK, t * 10, 2);
    row[3] = __shfl_xor_sync(FULL_MASK, t * 10, 5);
    row[4] = __ballot_sync(FULL_MASK, t % 3 == 0);
    row[5] = __any_sync(FULL_MASK, t == 40);
    row[6] = __all_sync(FULL_MASK, t < 40);
    __syncwarp();
    row[7] = __shfl_down_sync(FULL_MASK, 1.5 * t, 16, 16) * 2;  // width 16, a double
}

__global__ void nothing(long long *) {}
__global__ void opted_in(long long *out) { out[threadIdx.x] = 1; }

}  // namespace
GP_NAMESPACE_END

static cudaError_t selftest(const char *name, void *buf, int64_t n) {
    using namespace gp;
    long long *out = static_cast<long long *>(buf);
    cudaStream_t s = nullptr;
    auto run = [&]() -> cudaError_t {
        if (!strcmp(name, "race")) GP_LAUNCH(neighbour<false>, 1, 64, 0, s, out);
        else if (!strcmp(name, "race_fixed")) GP_LAUNCH(neighbour<true>, 1, 64, 0, s, out);
        else if (!strcmp(name, "warp_lockstep")) GP_LAUNCH(last_warp<false>, 1, 32, 0, s, out);
        else if (!strcmp(name, "warp_synced")) GP_LAUNCH(last_warp<true>, 1, 32, 0, s, out);
        else if (!strcmp(name, "exit_before_barrier")) GP_LAUNCH(exit_before_barrier, 1, 64, 0, s, out, n);
        else if (!strcmp(name, "out_of_bounds")) GP_LAUNCH(out_of_bounds, 1, unsigned(n), 0, s, out, n);
        else if (!strcmp(name, "warp")) GP_LAUNCH(warp_collectives, 1, 64, 0, s, out);
        else if (!strcmp(name, "too_many_threads")) GP_LAUNCH(nothing, 1, 2048, 0, s, out);
        else if (!strcmp(name, "too_much_shared")) GP_LAUNCH(nothing, 1, 32, 64 * 1024, s, out);
        else if (!strcmp(name, "opted_in_shared") || !strcmp(name, "over_opt_in_shared")) {
            GP_TRY(cudaFuncSetAttribute(opted_in, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
            GP_LAUNCH(opted_in, 1, 32, (strcmp(name, "opted_in_shared") ? 96 : 64) * 1024, s, out);
        } else if (!strcmp(name, "opt_in_too_far"))
            GP_TRY(cudaFuncSetAttribute(opted_in, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024));
        else return cudaErrorInvalidValue;
        return cudaSuccess;
    };
    return run();
}

// Run test kernel `name` (n: its size argument) on `elements` int64 words of
// emulator memory, then copy them to `out`.  Returns the CUDA status; on an
// error `message` gets "status (text): what went wrong".
extern "C" int gp_emu_selftest_run(const char *name, long long *out, int64_t elements, int64_t n,
                                   char *message, size_t size) {
    const gp_runtime &rt = gp_runtime_emu;
    void *buf = nullptr;
    cudaError_t err = rt.malloc_device(&buf, size_t(elements) * sizeof(long long));
    if (err == cudaSuccess) err = rt.memset_async(buf, 0, size_t(elements) * sizeof(long long), nullptr);
    if (err == cudaSuccess) err = selftest(name, buf, n);
    if (err == cudaSuccess) err = rt.stream_sync(nullptr);
    if (err == cudaSuccess)
        std::memcpy(out, buf, size_t(elements) * sizeof(long long));
    else {
        const char *detail = rt.detail();
        std::snprintf(message, size, "%s (%s)%s%s", rt.error_name(err), rt.error_string(err),
                      detail ? ": " : "", detail ? detail : "");
        (void)rt.get_last_error();
    }
    if (buf != nullptr) (void)rt.free_async(buf, nullptr);
    return int(err);
}
