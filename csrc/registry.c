/* registry.c - the families and their variant tables, as Python sees them,
 * and the checks every family's entry points share. */
#include "glue.h"

#include <string.h>

const size_t gp_sizes[GP_NDTYPES] = {4, 8, 4, 8};

/* The one list of families. */
static const char *const gp_families[] = {"reduce", "scan", "transpose"};
#define GP_NFAMILIES ((int)(sizeof(gp_families) / sizeof(gp_families[0])))

/* A family's rows in the registry of backend `rt`. */
const gp_variant *gp_family_rows(const gp_runtime *rt, const char *family, int *count)
{
    if (strcmp(family, "reduce") == 0) {
        *count = *rt->nreduce;
        return rt->reduce;
    }
    if (strcmp(family, "scan") == 0) {
        *count = *rt->nscan;
        return rt->scan;
    }
    if (strcmp(family, "transpose") == 0) {
        *count = *rt->ntranspose;
        return rt->transpose;
    }
    *count = 0;
    return NULL;
}

/* families() -> tuple of family names */
PyObject *gp_families_py(PyObject *module, PyObject *noargs)
{
    PyObject *t = PyTuple_New(GP_NFAMILIES);
    int i;
    (void)module;
    (void)noargs;
    for (i = 0; t != NULL && i < GP_NFAMILIES; i++) {
        PyObject *name = PyUnicode_FromString(gp_families[i]);
        if (name == NULL || PyTuple_SetItem(t, i, name) < 0) {
            Py_CLEAR(t);
        }
    }
    return t;
}

/* variants(family) -> [(name, title, source, description, max_n or None,
 *                       dtypes or None, block_size, where, backends), ...] in
 * journey order; backends: the backends that run the variant, from the
 * emulator's registry (which every build has): the rows the emulator cannot
 * run (NVIDIA library code) say ("cuda",). */
PyObject *gp_variants(PyObject *module, PyObject *args)
{
    const char *family;
    const gp_variant *rows;
    PyObject *list;
    int i, count;
    (void)module;

    if (!PyArg_ParseTuple(args, "s:variants", &family))
        return NULL;
    if ((rows = gp_family_rows(&gp_runtime_emu, family, &count)) == NULL) {
        PyErr_Format(PyExc_ValueError, "unknown family %R", PyTuple_GetItem(args, 0));
        return NULL;
    }
    list = PyList_New(0);
    for (i = 0; list != NULL && i < count; i++) {
        const gp_variant *v = &rows[i];
        PyObject *max_n = v->max_n < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(v->max_n);
        PyObject *row = max_n == NULL ? NULL
                                      : Py_BuildValue("(ssssNzisN)", v->name, v->title, v->source,
                                                      v->description, max_n, v->dtypes,
                                                      v->block_size,
                                                      v->where == GP_ON_HOST ? "host" : "device",
                                                      v->launch != NULL
                                                          ? Py_BuildValue("(ss)", "cuda", "emulator")
                                                          : Py_BuildValue("(s)", "cuda"));
        if (row == NULL || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(row);
    }
    return list;
}

/* The row `index` of `family` exists, runs `where` on the active backend,
 * and accepts n elements; else ValueError (CudaError for a variant the
 * backend cannot run) and -1. */
int gp_check_variant(PyObject *module, const char *family, int index, long long n, gp_where where)
{
    int count;
    const gp_variant *rows = gp_family_rows(RT, family, &count);
    if (rows == NULL || index < 0 || index >= count) {
        PyErr_Format(PyExc_ValueError, "%s variant index %d out of range", family, index);
        return -1;
    }
    if (rows[index].where != where) {
        PyErr_Format(PyExc_ValueError, "%s variant %s does not run on the %s", family,
                     rows[index].name, where == GP_ON_HOST ? "host" : "device");
        return -1;
    }
    if (rows[index].launch == NULL) {
        gp_raise_not_on_backend(module, family, &rows[index]);
        return -1;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative size");
        return -1;
    }
    if (rows[index].max_n >= 0 && n > rows[index].max_n) {
        PyErr_Format(PyExc_ValueError, "n = %lld is over the limit of %s variant %s (max_n = %lld)",
                     n, family, rows[index].name, (long long)rows[index].max_n);
        return -1;
    }
    return 0;
}

/* Valid dtype and op codes; else ValueError and -1. */
int gp_check_codes(int in_t, int out_t, int op, int nops)
{
    if (in_t < 0 || in_t >= GP_NDTYPES || out_t < 0 || out_t >= GP_NDTYPES || op < 0 || op >= nops) {
        PyErr_SetString(PyExc_ValueError, "bad dtype or op code");
        return -1;
    }
    return 0;
}

/* The scalar at p as a Python int or float. */
PyObject *gp_scalar_to_python(const void *p, int type)
{
    switch (type) {
    case GP_INT32: return PyLong_FromLong((long)*(const int32_t *)p);
    case GP_INT64: return PyLong_FromLongLong((long long)*(const int64_t *)p);
    case GP_FLOAT32: return PyFloat_FromDouble((double)*(const float *)p);
    default: return PyFloat_FromDouble(*(const double *)p);
    }
}

