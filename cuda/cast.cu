// cast.cu - element-wise conversion between the gpuprims dtypes, used when a
// caller asks for an accumulator type (dtype=) that the kernels have no
// instance for (see GP_COMBOS): the input is converted into scratch first.
#include "common.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class From, class To>
__global__ void cast_kernel(const From *in, To *out, int64_t n) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = To(in[i]);
}

template <class From>
cudaError_t cast_from(const From *in, void *out, gp_dtype to, int64_t n, cudaStream_t s) {
    const unsigned block = 256;
    const int64_t want = ceil_div<int64_t>(n, block);
    const unsigned grid = unsigned(want < 65535 ? want : 65535);
    switch (to) {
    case GP_INT32: GP_LAUNCH((cast_kernel<From, int>), grid, block, 0, s, in, static_cast<int *>(out), n); break;
    case GP_INT64: GP_LAUNCH((cast_kernel<From, long long>), grid, block, 0, s, in, static_cast<long long *>(out), n); break;
    case GP_FLOAT32: GP_LAUNCH((cast_kernel<From, float>), grid, block, 0, s, in, static_cast<float *>(out), n); break;
    case GP_FLOAT64: GP_LAUNCH((cast_kernel<From, double>), grid, block, 0, s, in, static_cast<double *>(out), n); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}
}  // namespace

extern "C" cudaError_t GP_SYM(gp_cast)(const void *in, gp_dtype from, void *out, gp_dtype to, int64_t n,
                               cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    switch (from) {
    case GP_INT32: return cast_from(static_cast<const int *>(in), out, to, n, s);
    case GP_INT64: return cast_from(static_cast<const long long *>(in), out, to, n, s);
    case GP_FLOAT32: return cast_from(static_cast<const float *>(in), out, to, n, s);
    case GP_FLOAT64: return cast_from(static_cast<const double *>(in), out, to, n, s);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" int GP_SYM(gp_combo_supported)(gp_op op, gp_dtype in_t, gp_dtype acc_t) {
    switch (gp::combo_key(op, in_t, acc_t)) {
#define GP_CASE(OP, IN, ACC) case gp::combo_key(OP, IN, ACC):
        GP_COMBOS(GP_CASE)
#undef GP_CASE
        return 1;
    default:
        return 0;
    }
}

GP_NAMESPACE_END
