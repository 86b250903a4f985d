/* scan_cpu.c - the `cpu` scan variant: the serial inclusive and exclusive
 * scans of the blog post "CUDA learning (2): parallel scan" in C, on the
 * host, for every (op, in, out) pair of dtypes: the input element is
 * converted to the output type first.
 */
#include <stdint.h>

#include "../cuda/gpuprims.h"

#define GP_SUM_OF(a, b) ((a) + (b))
#define GP_MIN_OF(a, b) ((a) != (a) ? (a) : ((b) != (b) ? (b) : ((a) < (b) ? (a) : (b))))
#define GP_MAX_OF(a, b) ((a) != (a) ? (a) : ((b) != (b) ? (b) : ((a) > (b) ? (a) : (b))))

#define GP_ELEMENT(a, i)                                                                     \
    (a->in_t == GP_INT32 ? (T)((const int32_t *)a->in)[i]                                   \
     : a->in_t == GP_INT64 ? (T)((const int64_t *)a->in)[i]                                 \
     : a->in_t == GP_FLOAT32 ? (T)((const float *)a->in)[i]                                 \
                             : (T)((const double *)a->in)[i])

#define GP_SCAN_LOOP(COMBINE)                                                                \
    do {                                                                                     \
        for (i = 0; i < a->n; i++) {                                                          \
            T x = GP_ELEMENT(a, i);                                                          \
            if (a->inclusive) {                                                              \
                acc = i == 0 ? x : COMBINE(acc, x);                                          \
                out[i] = acc;                                                                \
            } else {                                                                         \
                out[i] = i == 0 ? identity : acc;                                            \
                acc = i == 0 ? x : COMBINE(acc, x);                                          \
            }                                                                                \
        }                                                                                    \
    } while (0)

#define GP_DEFINE_SCAN(T_, SUFFIX, LOWEST, HIGHEST)                                          \
    static void scan_##SUFFIX(const gp_scan_args *a)                                         \
    {                                                                                        \
        typedef T_ T;                                                                        \
        T *out = (T *)a->out;                                                                \
        T acc = 0, identity;                                                                 \
        int64_t i;                                                                           \
        switch (a->op) {                                                                     \
        case GP_SUM: identity = 0; GP_SCAN_LOOP(GP_SUM_OF); break;                           \
        case GP_MIN: identity = HIGHEST; GP_SCAN_LOOP(GP_MIN_OF); break;                     \
        default: identity = LOWEST; GP_SCAN_LOOP(GP_MAX_OF); break;                          \
        }                                                                                    \
    }

GP_DEFINE_SCAN(int32_t, i32, INT32_MIN, INT32_MAX)
GP_DEFINE_SCAN(int64_t, i64, INT64_MIN, INT64_MAX)
GP_DEFINE_SCAN(float, f32, -__builtin_inff(), __builtin_inff())
GP_DEFINE_SCAN(double, f64, -__builtin_inf(), __builtin_inf())

cudaError_t gp_scan_cpu(gp_scan_args *a)
{
    if ((int)a->in_t < 0 || a->in_t >= GP_NDTYPES || (int)a->acc_t < 0 || a->acc_t >= GP_NDTYPES ||
        (int)a->op < 0 || a->op >= GP_NOPS || a->n < 0)
        return cudaErrorInvalidValue;
    if (a->scratch == NULL) {
        a->scratch_bytes = 0;
        return cudaSuccess;
    }
    switch (a->acc_t) {
    case GP_INT32: scan_i32(a); break;
    case GP_INT64: scan_i64(a); break;
    case GP_FLOAT32: scan_f32(a); break;
    default: scan_f64(a); break;
    }
    return cudaSuccess;
}
