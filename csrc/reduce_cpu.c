/* reduce_cpu.c - the `cpu` reduction variant: recursiveReduce from Cheng,
 * Grossman and McKercher, Professional CUDA C Programming, ch. 3, in C, on
 * the host.
 *
 * The book's version reduces its argument in place; here the input is first
 * converted into a scratch copy of the accumulator type, which is then
 * reduced: the caller's array is never written.  Odd sizes fold their last
 * element into element 0, as in the book.
 */
#include <stddef.h>
#include <stdint.h>

#include "../cuda/gpuprims.h"

#define GP_SUM_OF(a, b) ((a) + (b))
/* numpy's rule: a NaN operand makes the result NaN. */
#define GP_MIN_OF(a, b) ((a) != (a) ? (a) : ((b) != (b) ? (b) : ((a) < (b) ? (a) : (b))))
#define GP_MAX_OF(a, b) ((a) != (a) ? (a) : ((b) != (b) ? (b) : ((a) > (b) ? (a) : (b))))

#define GP_DEFINE_RECURSIVE(NAME, T, COMBINE)                                 \
    static T NAME(T *data, int64_t size)                                     \
    {                                                                         \
        int64_t stride, i;                                                    \
        if (size == 1)                                                        \
            return data[0];                                                   \
        stride = size / 2;                                                    \
        for (i = 0; i < stride; i++)                                          \
            data[i] = COMBINE(data[i], data[i + stride]);                     \
        if (size % 2 == 1)                                                    \
            data[0] = COMBINE(data[0], data[size - 1]);                       \
        return NAME(data, stride);                                            \
    }

#define GP_DEFINE_FOR_TYPE(T, SUFFIX)                                         \
    GP_DEFINE_RECURSIVE(recursive_sum_##SUFFIX, T, GP_SUM_OF)                 \
    GP_DEFINE_RECURSIVE(recursive_min_##SUFFIX, T, GP_MIN_OF)                 \
    GP_DEFINE_RECURSIVE(recursive_max_##SUFFIX, T, GP_MAX_OF)                 \
    static void reduce_##SUFFIX(const gp_reduce_args *a)                      \
    {                                                                         \
        T *work = (T *)a->scratch;                                            \
        T result;                                                             \
        int64_t i;                                                            \
        for (i = 0; i < a->n; i++) {                                          \
            switch (a->in_t) {                                                \
            case GP_INT32: work[i] = (T)((const int32_t *)a->in)[i]; break;   \
            case GP_INT64: work[i] = (T)((const int64_t *)a->in)[i]; break;   \
            case GP_FLOAT32: work[i] = (T)((const float *)a->in)[i]; break;   \
            default: work[i] = (T)((const double *)a->in)[i]; break;          \
            }                                                                 \
        }                                                                     \
        switch (a->op) {                                                      \
        case GP_SUM: result = a->n ? recursive_sum_##SUFFIX(work, a->n) : (T)0; break; \
        case GP_MIN: result = recursive_min_##SUFFIX(work, a->n); break;      \
        default: result = recursive_max_##SUFFIX(work, a->n); break;          \
        }                                                                     \
        *(T *)a->out = result;                                                \
    }

GP_DEFINE_FOR_TYPE(int32_t, i32)
GP_DEFINE_FOR_TYPE(int64_t, i64)
GP_DEFINE_FOR_TYPE(float, f32)
GP_DEFINE_FOR_TYPE(double, f64)

static const size_t gp_cpu_sizes[GP_NDTYPES] = {4, 8, 4, 8};

cudaError_t gp_reduce_cpu(gp_reduce_args *a)
{
    if ((int)a->in_t < 0 || a->in_t >= GP_NDTYPES || (int)a->acc_t < 0 || a->acc_t >= GP_NDTYPES ||
        (int)a->op < 0 || a->op >= GP_NOPS || a->n < 0 || (a->n == 0 && a->op != GP_SUM))
        return cudaErrorInvalidValue;
    if (a->scratch == NULL) {
        a->scratch_bytes = (size_t)a->n * gp_cpu_sizes[a->acc_t];
        return cudaSuccess;
    }
    switch (a->acc_t) {
    case GP_INT32: reduce_i32(a); break;
    case GP_INT64: reduce_i64(a); break;
    case GP_FLOAT32: reduce_f32(a); break;
    default: reduce_f64(a); break;
    }
    return cudaSuccess;
}
