/* emulator.c - what only the emulator backend offers Python: explain mode
 * (the trace of a call's block barriers), and what the emulator's launches
 * hear from Python while they run: Ctrl-C, the one-time EmulatorWarning,
 * and a word on stderr when a launch will take long. */
#include "glue.h"

#include <string.h>

/* A launch expected to take longer than this (seconds) says so, once. */
#define GP_EMU_LONG_S 2.0

static int first_launch_seen; /* the process's first emulated launch has been announced */
static int long_said;         /* the running launch has said it is long */

/* Python's part of the first emulated launch: gpuprims._backend decides
 * whether to warn (the emulator chosen for want of a GPU).  -1 with an
 * exception (a warning turned into an error). */
static int announce_first_launch(void)
{
    PyObject *backend = PyImport_ImportModule("gpuprims._backend"), *r = NULL;
    if (backend != NULL)
        r = PyObject_CallMethod(backend, "_first_emulated_launch", NULL);
    Py_XDECREF(backend);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Called by the emulator (emu/runtime.cpp) at the start of every launch and
 * about every 50 ms between blocks, under its launch lock, with or without
 * the GIL.  It takes the GIL only when it has something to do: the first
 * launch's announcement, and between blocks the pending signals
 * (PyErr_CheckSignals runs Python's SIGINT handler, which raises
 * KeyboardInterrupt: the launch stops and that exception stands). */
int gp_emu_poll(const gp_emu_progress *p)
{
    PyGILState_STATE gil;
    int stop = 0;

    if (p->blocks_done == 0) { /* a launch begins */
        long_said = 0;
        if (first_launch_seen)
            return 0;
        first_launch_seen = 1;
        gil = PyGILState_Ensure();
        stop = announce_first_launch() < 0;
        PyGILState_Release(gil);
        return stop;
    }
    gil = PyGILState_Ensure();
    if (PyErr_CheckSignals() < 0) {
        stop = 1;
    } else if (!long_said && p->elapsed_s >= 0.2) {
        double total = p->elapsed_s * (double)p->blocks / (double)p->blocks_done;
        if (total > GP_EMU_LONG_S) {
            /* the launch macro's name is the kernel expression, in parentheses */
            const char *name = p->kernel + (p->kernel[0] == '(');
            int len = (int)strlen(name);
            len -= len > 0 && p->kernel[0] == '(' && name[len - 1] == ')';
            long_said = 1;
            PySys_WriteStderr("gpuprims: the emulator runs kernel %.*s on the CPU (%llu blocks of %u threads), "
                              "about %.0f s; Ctrl-C stops it\n",
                              len > 200 ? 200 : len, name, p->blocks, p->threads_per_block, total);
        }
    }
    PyGILState_Release(gil);
    return stop;
}

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
    /* The trace calls take the emulator's launch lock: without the GIL, so
     * that a launch running in another thread can take it to poll. */
    if (start) {
        Py_BEGIN_ALLOW_THREADS
        gp_emu_trace_start((size_t)max_bytes);
        Py_END_ALLOW_THREADS
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS
    n = gp_emu_trace_stop();
    Py_END_ALLOW_THREADS
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
    Py_BEGIN_ALLOW_THREADS
    gp_emu_trace_clear();
    Py_END_ALLOW_THREADS
    if (steps == NULL || err == NULL) {
        Py_XDECREF(steps);
        Py_XDECREF(err);
        return NULL;
    }
    return Py_BuildValue("(NN)", steps, err);
}
