// cccl.cu - which CCCL (CUB, Thrust, libcu++) the CUB baselines were
// compiled against, for gpuprims.device_info()["cccl"]: the version of the
// headers this file is compiled with (setup.py gives it, like every file
// that includes CCCL headers, the same include path) and where they came
// from (the nvidia-cuda-cccl wheel, a folder, or the CUDA toolkit).
#include <cstdio>
#include <string>

#include <cuda/version>

#include "gpuprims.h"

#define GP_CCCL_STR2(x) #x
#define GP_CCCL_STR(x) GP_CCCL_STR2(x)

#if defined(GP_CCCL_WHEEL)
#define GP_CCCL_ORIGIN "nvidia-cuda-cccl " GP_CCCL_STR(GP_CCCL_WHEEL) " wheel"
#elif defined(GP_CCCL_CUSTOM)
#define GP_CCCL_ORIGIN "headers from GPUPRIMS_CCCL"
#else
#define GP_CCCL_ORIGIN "CUDA toolkit " GP_CCCL_STR(__CUDACC_VER_MAJOR__) "." GP_CCCL_STR(__CUDACC_VER_MINOR__)
#endif

// "3.5.0, nvidia-cuda-cccl 13.3.5.0.6 wheel", "3.0.1, CUDA toolkit 13.0".
extern "C" const char *gp_cccl_version(void) {
    static const std::string text = [] {
        char buf[128];
        std::snprintf(buf, sizeof(buf), "%d.%d.%d, %s", int(CCCL_MAJOR_VERSION), int(CCCL_MINOR_VERSION),
                      int(CCCL_PATCH_VERSION), GP_CCCL_ORIGIN);
        return std::string(buf);
    }();
    return text.c_str();
}

// CCCL_VERSION as a number (3005000 for 3.5.0).
extern "C" int gp_cccl_version_number(void) { return CCCL_VERSION; }
