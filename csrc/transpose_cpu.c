/* transpose_cpu.c - the `cpu` transpose variant: transpose_CPU of Orchid's
 * "GPU program optimization (2): matrix transpose" (2016) in C, on the host,
 * for elements of 1, 2, 4, 8 or 16 bytes.
 *
 * Fixed from the blog's loop, which copied (out[j + i*N] = in[j + i*N]):
 * here out[j + i*rows] = in[i + j*cols], for any rows x cols.
 */
#include <stdint.h>

#include "../cuda/gpuprims.h"

typedef struct {
    uint64_t lo, hi;
} gp_bytes16; /* a 16-byte element (complex128): moved, never read as a number */

#define GP_TRANSPOSE_LOOP(T)                                                  \
    do {                                                                      \
        const T *in = (const T *)a->in;                                       \
        T *out = (T *)a->out;                                                 \
        for (j = 0; j < a->rows; j++)                                         \
            for (i = 0; i < a->cols; i++)                                     \
                out[j + i * a->rows] = in[i + j * a->cols];                   \
    } while (0)

cudaError_t gp_transpose_cpu(const gp_transpose_args *a)
{
    int64_t i, j;
    if (a->rows < 0 || a->cols < 0)
        return cudaErrorInvalidValue;
    switch (a->elem_size) {
    case 1: GP_TRANSPOSE_LOOP(uint8_t); break;
    case 2: GP_TRANSPOSE_LOOP(uint16_t); break;
    case 4: GP_TRANSPOSE_LOOP(uint32_t); break;
    case 8: GP_TRANSPOSE_LOOP(uint64_t); break;
    case 16: GP_TRANSPOSE_LOOP(gp_bytes16); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}
