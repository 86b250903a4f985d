// cub_env.cuh - CUB's environment API inside gpuprims' two-phase protocol.
//
// CCCL 3.5's determinism requirements (cuda::execution::require(
// cuda::execution::determinism::run_to_run / gpu_to_gpu)) are taken only by
// the single-phase calls of CUB (cub::DeviceScan::InclusiveSum(in, out, n,
// env), cub::DeviceReduce::Reduce(in, out, n, op, init, env)), which ask the
// environment's memory resource for their temporary storage, use it and
// give it back within the call.  A gpuprims launcher neither allocates nor
// synchronizes: it states its scratch first and is given it (gpuprims.h).
// ScratchResource bridges the two: asked for bytes, it records how many and
// hands out the caller's scratch where it is large enough, nullptr where
// there is none - which makes CUB's second phase a size query again, so the
// size query launches nothing (CUB's two-phase contract: null storage, no
// work).
//
// CubTwoPhase (all CCCL versions) is the scratch protocol every CUB-backed
// variant shares: the variant's call(args, tmp, bytes) is one CUB call in
// CUB's two-phase form, and scratch()/run() are built from it.
#pragma once

#include <type_traits>

#include <cuda/version>

#include "common.cuh"

GP_NAMESPACE_BEGIN
namespace cub_env {

// Derived: a launcher with `using Args = gp_reduce_args` or gp_scan_args and
// static cudaError_t call(const Args &, void *tmp, size_t &bytes) - tmp
// nullptr: a size query, bytes receives the size.
template <class Derived>
struct CubTwoPhase {
    template <class Args>
    static size_t probe(const Args &a) {
        size_t bytes = 0;
        return Derived::call(a, nullptr, bytes) == cudaSuccess ? bytes : size_t(-1);
    }
    // The most the call asks for at n elements: a scan's scratch covers its
    // inclusive and its exclusive form (one scratch size per variant and n).
    static size_t scratch(int64_t n) {
        using Args = typename Derived::Args;
        Args a{};
        a.n = n;
        size_t most = probe(a);
        if constexpr (std::is_same<Args, gp_scan_args>::value) {
            a.inclusive = 1;
            const size_t inc = probe(a);
            most = most == size_t(-1) || inc == size_t(-1) ? size_t(-1) : inc > most ? inc : most;
        }
        return most;
    }
    template <class Args>
    static cudaError_t run(const Args &a) {
        size_t bytes = a.scratch_bytes;
        return Derived::call(a, a.scratch, bytes);
    }
};

}  // namespace cub_env
GP_NAMESPACE_END

#if CCCL_VERSION >= 3005000  // the determinism requirements of DeviceScan and DeviceReduce
#define GP_CUB_ENV 1

#include <cuda/execution>
#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda/std/execution>

GP_NAMESPACE_BEGIN
namespace cub_env {

struct ScratchResource {
    void *base;     // the caller's scratch, or nullptr for a size query
    size_t size;    // its bytes
    size_t *asked;  // receives the bytes CUB asked for

    void *allocate(::cuda::stream_ref, size_t bytes, size_t) { return take(bytes); }
    void deallocate(::cuda::stream_ref, void *, size_t, size_t) noexcept {}
    void *allocate_sync(size_t bytes, size_t) { return take(bytes); }
    void deallocate_sync(void *, size_t, size_t) noexcept {}
    bool operator==(const ScratchResource &o) const { return base == o.base && size == o.size; }
    bool operator!=(const ScratchResource &o) const { return !(*this == o); }
    friend void get_property(const ScratchResource &, ::cuda::mr::device_accessible) noexcept {}

  private:
    void *take(size_t bytes) {
        *asked = bytes;
        return base != nullptr && bytes <= size ? base : nullptr;
    }
};

// The environment of one call: the determinism requirement, the stream,
// the caller's scratch as CUB's memory resource.
template <class Determinism>
inline auto env(Determinism d, cudaStream_t stream, const ScratchResource &res) {
    return ::cuda::std::execution::env{
        ::cuda::execution::require(d),
        ::cuda::std::execution::prop{::cuda::get_stream, ::cuda::stream_ref{stream}},
        ::cuda::std::execution::prop{::cuda::mr::get_memory_resource, res}};
}

// Run `call(env)` (a CUB env call) in the two-phase protocol: with
// scratch == nullptr store the bytes it needs in `bytes`; else run it in
// `bytes` of `scratch` (cudaErrorInvalidValue where CUB asks for more).
template <class Determinism, class Call>
inline cudaError_t two_phase(Determinism d, void *scratch, size_t &bytes, cudaStream_t stream, Call call) {
    size_t asked = 0;
    const ScratchResource res{scratch, scratch != nullptr ? bytes : 0, &asked};
    const cudaError_t err = call(env(d, stream, res));
    if (err != cudaSuccess) return err;
    if (scratch == nullptr) {
        bytes = asked;
        return cudaSuccess;
    }
    return asked <= bytes ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace cub_env
GP_NAMESPACE_END

#endif  // CCCL_VERSION >= 3005000
