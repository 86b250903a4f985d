// Baseline - cuBLAS geam with the transpose flag: C = 1 * op(A) + 0 * B, the
// production out-of-place transpose for float32 (Sgeam) and float64 (Dgeam).
//
// cuBLAS is loaded with dlopen on first use, not linked: `import gpuprims`
// must work where libcublas is not on the loader path (or there is no GPU at
// all), and only this variant needs it.  One handle per host thread.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <cublas_v2.h>

#include "transpose.cuh"

GP_NAMESPACE_BEGIN

namespace {

using CreateFn = cublasStatus_t (*)(cublasHandle_t *);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SgeamFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   const float *, const float *, int, const float *, const float *,
                                   int, float *, int);
using DgeamFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   const double *, const double *, int, const double *,
                                   const double *, int, double *, int);

struct Cublas {
    CreateFn create = nullptr;
    SetStreamFn set_stream = nullptr;
    SgeamFn sgeam = nullptr;
    DgeamFn dgeam = nullptr;
    std::string error;  // empty once loaded
};

Cublas &library() {
    static Cublas lib = [] {
        Cublas c;
        std::string tried;
        void *h = nullptr;
        std::string names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "", ""};
        if (const char *home = std::getenv("CUDA_HOME")) names[3] = std::string(home) + "/lib64/libcublas.so";
        names[4] = "/usr/local/cuda/lib64/libcublas.so";
        for (const std::string &name : names) {
            if (name.empty()) continue;
            if ((h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
            tried += (tried.empty() ? "" : ", ") + name;
        }
        if (h == nullptr) {
            c.error = "cuBLAS not found (tried " + tried + "); install the CUDA toolkit's cuBLAS or set CUDA_HOME";
            return c;
        }
        c.create = reinterpret_cast<CreateFn>(dlsym(h, "cublasCreate_v2"));
        c.set_stream = reinterpret_cast<SetStreamFn>(dlsym(h, "cublasSetStream_v2"));
        c.sgeam = reinterpret_cast<SgeamFn>(dlsym(h, "cublasSgeam"));
        c.dgeam = reinterpret_cast<DgeamFn>(dlsym(h, "cublasDgeam"));
        if (!c.create || !c.set_stream || !c.sgeam || !c.dgeam) c.error = "cuBLAS lacks cublasSgeam/Dgeam";
        return c;
    }();
    return lib;
}

thread_local std::string last_error;

cudaError_t fail(const std::string &why, cudaError_t code) {
    last_error = why;
    return code;
}

cudaError_t from_status(cublasStatus_t s) {
    if (s == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
    return fail("cuBLAS status " + std::to_string(int(s)), cudaErrorUnknown);
}
}  // namespace

extern "C" const char *gp_cublas_error(void) { return last_error.empty() ? nullptr : last_error.c_str(); }

cudaError_t gp_transpose_cublas(const gp_transpose_args *a) {
    last_error.clear();
    Cublas &lib = library();
    if (!lib.error.empty()) return fail(lib.error, cudaErrorSharedObjectInitFailed);
    if (a->elem_size != 4 && a->elem_size != 8) return fail("cuBLAS geam: 4 or 8-byte floats only", cudaErrorInvalidValue);
    if (a->rows > INT32_MAX || a->cols > INT32_MAX) return fail("cuBLAS geam: dimensions over 2^31 - 1", cudaErrorInvalidValue);
    if (a->rows == 0 || a->cols == 0) return cudaSuccess;
    static thread_local cublasHandle_t handle = nullptr;
    static thread_local int handle_device = -1;
    int dev = 0;
    GP_TRY(cudaGetDevice(&dev));
    if (handle == nullptr || handle_device != dev) {
        cudaError_t e = from_status(lib.create(&handle));
        if (e != cudaSuccess) return e;
        handle_device = dev;
    }
    cudaError_t e = from_status(lib.set_stream(handle, a->stream));
    if (e != cudaSuccess) return e;
    // Row-major rows x cols is column-major cols x rows (lda = cols); its
    // transpose, column-major rows x cols (ldc = rows), is the row-major
    // cols x rows output.  beta = 0: B is not read (B = C, as cuBLAS allows).
    const int m = int(a->rows), n = int(a->cols);
    if (a->elem_size == 4) {
        const float one = 1.0f, zero = 0.0f;
        return from_status(lib.sgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one,
                                     static_cast<const float *>(a->in), n, &zero,
                                     static_cast<float *>(a->out), m, static_cast<float *>(a->out), m));
    }
    const double one = 1.0, zero = 0.0;
    return from_status(lib.dgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one,
                                 static_cast<const double *>(a->in), n, &zero,
                                 static_cast<double *>(a->out), m, static_cast<double *>(a->out), m));
}

GP_NAMESPACE_END
