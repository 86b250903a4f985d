/* emulator.c - what only the emulator backend offers Python: explain mode
 * (the trace of a call's block barriers). */
#include "glue.h"

/* emu_trace(True, max_bytes): start recording the emulated launches;
 * emu_trace(False, 0) -> (steps, error or None): stop and hand over the
 * steps, each {"kernel", "launch", "block", "block_dim", "barrier",
 * "regions": [(name, itemsize, contents: bytes, writers: bytes of int32)]}. */
PyObject *gp_emu_trace(PyObject *module, PyObject *args)
{
    int start, i, j, n;
    unsigned long long max_bytes;
    PyObject *steps, *err;
    (void)module;

    if (!PyArg_ParseTuple(args, "pK:emu_trace", &start, &max_bytes))
        return NULL;
    if (start) {
        gp_emu_trace_start((size_t)max_bytes);
        Py_RETURN_NONE;
    }
    n = gp_emu_trace_stop();
    steps = PyList_New(0);
    for (i = 0; steps != NULL && i < n; i++) {
        const gp_trace_step *s = gp_emu_trace_step(i);
        PyObject *regions = PyList_New(0), *step;
        for (j = 0; regions != NULL && j < s->nregions; j++) {
            const gp_trace_region *r = &s->regions[j];
            PyObject *row = Py_BuildValue("(siy#y#)", r->name, r->itemsize, (const char *)r->data,
                                          (Py_ssize_t)r->bytes, (const char *)r->writer,
                                          (Py_ssize_t)(r->bytes * sizeof(int)));
            if (row == NULL || PyList_Append(regions, row) < 0)
                Py_CLEAR(regions);
            Py_XDECREF(row);
        }
        step = regions == NULL ? NULL
                               : Py_BuildValue("{s:s,s:i,s:(III),s:(III),s:i,s:N}", "kernel", s->kernel,
                                               "launch", s->launch, "block", s->block[0], s->block[1],
                                               s->block[2], "block_dim", s->block_dim[0], s->block_dim[1],
                                               s->block_dim[2], "barrier", s->barrier, "regions", regions);
        if (step == NULL || PyList_Append(steps, step) < 0)
            Py_CLEAR(steps);
        Py_XDECREF(step);
    }
    err = gp_emu_trace_error() ? PyUnicode_FromString(gp_emu_trace_error()) : Py_NewRef(Py_None);
    gp_emu_trace_clear();
    if (steps == NULL || err == NULL) {
        Py_XDECREF(steps);
        Py_XDECREF(err);
        return NULL;
    }
    return Py_BuildValue("(NN)", steps, err);
}
