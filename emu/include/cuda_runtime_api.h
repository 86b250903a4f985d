/* cuda_runtime_api.h - the emulator's stand-in for the CUDA runtime header.
 *
 * gpuprims' emulator backend compiles the kernels of cuda/ and the C glue of
 * csrc/ against this folder (emu/include) where no CUDA toolkit is used:
 * the types and status codes the glue and the launchers need, with the SAME
 * numeric values as the CUDA headers, so a status means the same thing and
 * has the same name on both backends.  Plain C here; cuda_runtime.h adds
 * what kernels use (C++ only).
 */
#ifndef GP_EMU_CUDA_RUNTIME_API_H
#define GP_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>

#define GP_EMU_HEADERS 1

/* The subset of cudaError_t gpuprims meets, numbered as in driver_types.h. */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorSharedObjectInitFailed = 303,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

#endif
