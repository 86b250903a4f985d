/* pipeline.c - host operands of a device variant, moved in chunks.
 *
 * A NumPy array crosses the bus at the speed of pinned (page-locked) host
 * memory only: a pageable cudaMemcpy is staged by the driver through its own
 * small pinned buffers, at a fraction of the bus.  So the data moves through
 * a bounded ring of pinned staging buffers, chunk by chunk, the way the CUDA
 * C++ Programming Guide's "Overlapping Data Transfers" lays it out: for
 * chunk i, host threads pack it into a pinned buffer (from the caller's
 * strides: no full host copy first), a host->device copy runs on a copy
 * stream, the kernel on the call's compute stream, the device->host copy of
 * its result on a third stream, and events order each step behind the one it
 * needs, so that packing chunk i+1, copying chunk i in, computing chunk i
 * and copying chunk i-1 out overlap.  The device holds only a few chunks,
 * so an array larger than the device's memory works (GPUPRIMS_DEVICE_MEMORY_
 * LIMIT makes that testable on small data).
 *
 * Per family:
 * - reduce (one value): each chunk's partial result goes to its own device
 *   word; one more launch of the same variant reduces the partials in their
 *   order.  The chunking is a function of the sizes and limits only, so the
 *   result is the same bits from run to run.
 * - scan (the flattened data): the running total of the chunks before is
 *   carried on the device into the first element of the next chunk's work
 *   buffer, and the chunk is scanned with it in front (the scan-then-fan
 *   idea of Merrill and Garland's decoupled look-back at the scale of the
 *   bus); an exclusive scan is the inclusive one shifted by one element.
 * - transpose (a planned problem of rank <= 2): tiles of rows x columns of
 *   the input, each transposed on the device and written on the host into
 *   the output's columns.
 * Page-locked operands (the caller's pinned arrays: gpuprims.empty_pinned,
 * cupyx.empty_pinned, a PyTorch tensor's pin_memory()) skip the ring: the
 * copy engines read and write them in place, chunk by chunk, on the same
 * streams, so no host thread touches the data and the host's memory is
 * read once.  Only memory that is page-locked before the call does this:
 * locking the caller's pageable buffer for one call (cudaHostRegister) costs
 * more than packing it (bench/results/host-register-threads-*).
 * Layouts the pipeline does not split (axis and segmented problems, N-D
 * transposes) are split into smaller calls by the Python layer where they do
 * not fit (python/gpuprims/_arrays.py: pipeline_budget).
 *
 * The ring (GP_RING_SLOTS buffers of limit / GP_RING_SLOTS bytes, the
 * streams and the events) is allocated on first use, reused by every call,
 * and given back by gpuprims.free_memory() and at module teardown.  One call
 * uses it at a time (a mutex); the GIL is released while the pipeline runs
 * and taken back between chunks only, to check for KeyboardInterrupt and to
 * print the progress line.
 */
#include "pipeline.h"

#include <pthread.h>
#ifdef __linux__
#include <sched.h>
#endif
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define GP_STREAM_STORES 1
#endif
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GP_RING_SLOTS 4
/* Host threads a pack or unpack uses at most (and no more than the CPUs the
 * process may run on): on the 32-CPU host of a 2x H200 machine, 1 GiB moved
 * from pageable into pinned memory with streaming stores at 9.5 GB/s on one
 * thread, 34 on 8, 41 on 16, 39 on 24 (bench/host_pack.cu). */
#define GP_MAX_THREADS 16
/* Host data below this many bytes keeps the single-shot copy: one chunk
 * through the ring costs a pack into pinned memory and a few events more
 * than the driver's own staging of a small pageable copy (bench_host.py's
 * "small call" row compares both). */
#define GP_THRESHOLD (1u << 20)

static struct {
    const gp_runtime *rt; /* whose memory the ring is, or NULL: not allocated */
    size_t slot_bytes;
    void *buf[GP_RING_SLOTS];
    cudaStream_t h2d, d2h;
    cudaEvent_t ev_in[GP_RING_SLOTS], ev_kernel[GP_RING_SLOTS], ev_out[GP_RING_SLOTS];
    /* settings (gpuprims._arrays sets them from the environment and setters) */
    size_t limit;              /* total pinned bytes */
    size_t threshold;          /* host operands of at least this many bytes go through the pipeline */
    size_t chunk_bytes;        /* test hook: the largest chunk, 0: the ring's slot */
    long long device_limit;    /* bytes, or -1: none */
    int interrupt_after;       /* test hook: simulate Ctrl-C after this many chunks, -1: never */
    double progress_s;         /* a call expected to take longer shows its progress line (progress=True) */
    /* statistics (pipeline_stats) */
    long long allocations, frees, calls, chunks, interrupted;
    size_t peak_device;        /* the largest device allocation of one pipelined call */
    size_t last_device;        /* the last pipelined call's */
    double last_wall_s;
    long long direct_in, direct_out; /* chunks copied from / into page-locked operands in place */
    long long stored_out;            /* of direct_out: tiles stored into a mapped output by a kernel */
    int direct;                      /* page-locked operands copied in place (pipeline_config(direct=...)) */
    int store_blocks;                /* blocks of the kernel storing into a mapped output (0: its default) */
} ring = {NULL, 0, {NULL}, NULL, NULL, {NULL}, {NULL}, {NULL},
          256u << 20, GP_THRESHOLD, 0, -1, -1, 2.0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0, 0, 0, 1, 0};

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------ the trace */

/* pipeline_config(trace=N) makes each pipelined call keep up to N records
 * of when its stages ran, per chunk: the host's packing and unpacking by
 * the host clock, the host->device copy, the kernel(s) and the
 * device->host copy by a pair of CUDA events on the stream each runs on.
 * Both clocks count from an origin event the call records on its idle
 * stream and waits for before its first chunk (the host clock read around
 * the two), so they share one axis to within that wait (microseconds).  Nothing is recorded
 * while N is 0.  pipeline_config(serial=True) waits for every stage before
 * the next one starts (the stream synchronized after it): the same chunks
 * without any overlap, the picture a pipeline is compared against. */
enum { GP_TR_PACK, GP_TR_IN, GP_TR_KERNEL, GP_TR_OUT, GP_TR_UNPACK };
static const char *const gp_tr_stage[] = {"pack", "in", "kernel", "out", "unpack"};
static const char *const gp_tr_stream[] = {"host", "h2d", "compute", "d2h", "host"};

typedef struct {
    int64_t chunk;
    int stage;
    cudaEvent_t a, b; /* device stages, until the call's end */
    double start, end; /* ms from the origin */
    int ok;
} gp_trace_rec;

static struct {
    int max, n, serial;
    int64_t in, out, unpack; /* the chunk of the next pack/in, out, unpack */
    gp_trace_rec *rec;
    cudaEvent_t origin;
    double host0;
} trace;

/* A call starts: the records of the previous one dropped, the origin. */
static cudaError_t trace_start(const gp_runtime *rt, cudaStream_t s)
{
    cudaError_t err;
    double before;
    trace.n = 0;
    trace.in = trace.out = trace.unpack = 0;
    if (trace.max == 0 || trace.origin != NULL)
        return cudaSuccess;
    if ((err = rt->stream_sync(s)) != cudaSuccess || (err = rt->event_create(&trace.origin)) != cudaSuccess)
        return err;
    before = now_s();
    if ((err = rt->event_record(trace.origin, s)) != cudaSuccess || (err = rt->event_sync(trace.origin)) != cudaSuccess)
        return err;
    trace.host0 = 0.5 * (before + now_s()); /* the origin completed in between (the stream is idle) */
    return cudaSuccess;
}

static gp_trace_rec *trace_new(int stage)
{
    gp_trace_rec *t;
    if (trace.max == 0 || trace.origin == NULL || trace.n >= trace.max)
        return NULL;
    t = &trace.rec[trace.n++];
    memset(t, 0, sizeof(*t));
    t->stage = stage;
    t->chunk = stage == GP_TR_OUT ? trace.out : stage == GP_TR_UNPACK ? trace.unpack
             : stage == GP_TR_KERNEL ? trace.in - 1 : trace.in;
    return t;
}

/* A device stage begins on stream s: its record's index, or -1. */
static int trace_dev_begin(const gp_runtime *rt, int stage, cudaStream_t s)
{
    gp_trace_rec *t = trace_new(stage);
    if (t == NULL)
        return -1;
    if (rt->event_create(&t->a) != cudaSuccess || rt->event_create(&t->b) != cudaSuccess ||
        rt->event_record(t->a, s) != cudaSuccess) {
        (void)rt->get_last_error();
        return -1; /* left out of the trace (ok stays 0) */
    }
    return (int)(t - trace.rec);
}

/* ... and ends (the chunk counters move on); serial: waited for. */
static cudaError_t trace_dev_end(const gp_runtime *rt, int k, int stage, cudaStream_t s)
{
    if (stage == GP_TR_IN)
        trace.in++;
    else if (stage == GP_TR_OUT)
        trace.out++;
    if (k >= 0 && rt->event_record(trace.rec[k].b, s) == cudaSuccess)
        trace.rec[k].ok = 1;
    return trace.serial ? rt->stream_sync(s) : cudaSuccess;
}

/* A host stage that ran from t0 to t1 (now_s). */
static void trace_host(int stage, double t0, double t1)
{
    gp_trace_rec *t = trace_new(stage);
    if (stage == GP_TR_UNPACK)
        trace.unpack++;
    if (t == NULL)
        return;
    t->start = 1e3 * (t0 - trace.host0);
    t->end = 1e3 * (t1 - trace.host0);
    t->ok = 1;
}

/* The call has drained: device records read and their events given back. */
static void trace_finish(const gp_runtime *rt)
{
    int k;
    for (k = 0; k < trace.n; k++) {
        gp_trace_rec *t = &trace.rec[k];
        float a, b;
        if (t->a == NULL && t->b == NULL)
            continue;
        if (t->ok && rt->event_elapsed_ms(&a, trace.origin, t->a) == cudaSuccess &&
            rt->event_elapsed_ms(&b, trace.origin, t->b) == cudaSuccess) {
            t->start = a;
            t->end = b;
        } else {
            t->ok = 0;
        }
        if (t->a != NULL)
            (void)rt->event_destroy(t->a);
        if (t->b != NULL)
            (void)rt->event_destroy(t->b);
        t->a = t->b = NULL;
    }
    if (trace.origin != NULL)
        (void)rt->event_destroy(trace.origin);
    trace.origin = NULL;
    (void)rt->get_last_error();
}

/* ------------------------------------------------------------- the ring */

static void ring_free(void)
{
    const gp_runtime *rt = ring.rt;
    int s;
    if (rt == NULL)
        return;
    (void)rt->stream_sync(ring.h2d);
    (void)rt->stream_sync(ring.d2h);
    for (s = 0; s < GP_RING_SLOTS; s++) {
        if (ring.buf[s] != NULL) {
            (void)rt->host_free(ring.buf[s]);
            ring.frees++;
        }
        if (ring.ev_in[s] != NULL)
            (void)rt->event_destroy(ring.ev_in[s]);
        if (ring.ev_kernel[s] != NULL)
            (void)rt->event_destroy(ring.ev_kernel[s]);
        if (ring.ev_out[s] != NULL)
            (void)rt->event_destroy(ring.ev_out[s]);
        ring.buf[s] = NULL;
        ring.ev_in[s] = ring.ev_kernel[s] = ring.ev_out[s] = NULL;
    }
    if (ring.h2d != NULL)
        (void)rt->stream_destroy(ring.h2d);
    if (ring.d2h != NULL)
        (void)rt->stream_destroy(ring.d2h);
    ring.h2d = ring.d2h = NULL;
    ring.rt = NULL;
    (void)rt->get_last_error();
}

/* The ring of backend rt at the configured size (allocated on first use,
 * or again after the size or the backend changed).  Called with ring_lock
 * held, without the GIL. */
static cudaError_t ring_ensure(const gp_runtime *rt)
{
    size_t slot = (ring.limit / GP_RING_SLOTS) & ~(size_t)4095;
    cudaError_t err = cudaSuccess;
    int s;
    if (slot < 4096)
        slot = 4096;
    if (ring.rt == rt && ring.slot_bytes == slot)
        return cudaSuccess;
    ring_free();
    ring.rt = rt;
    ring.slot_bytes = slot;
    if ((err = rt->stream_create(&ring.h2d)) != cudaSuccess || (err = rt->stream_create(&ring.d2h)) != cudaSuccess)
        goto fail;
    for (s = 0; s < GP_RING_SLOTS; s++) {
        if ((err = rt->host_alloc(&ring.buf[s], slot)) != cudaSuccess) {
            ring.buf[s] = NULL;
            goto fail;
        }
        ring.allocations++;
        if ((err = rt->event_create(&ring.ev_in[s])) != cudaSuccess ||
            (err = rt->event_create(&ring.ev_kernel[s])) != cudaSuccess ||
            (err = rt->event_create(&ring.ev_out[s])) != cudaSuccess)
            goto fail;
    }
    return cudaSuccess;
fail:
    ring_free();
    return err;
}

static void pool_stop(void);

void gp_pipeline_teardown(void)
{
    pthread_mutex_lock(&ring_lock);
    ring_free();
    pool_stop();
    pthread_mutex_unlock(&ring_lock);
}

/* ------------------------------------------------- packing on the host */

/* Host memory as elements: `ndim` axes of `shape`, byte `strides` (may be
 * negative), element 0 at `base`; contiguous: C order without gaps. */
typedef struct {
    const char *base;
    int ndim;
    int64_t shape[GP_TRANSPOSE_MAX_RANK + 16];
    int64_t strides[GP_TRANSPOSE_MAX_RANK + 16];
    size_t item;
    int contiguous;
} gp_hostview;

/* memcpy whose stores bypass the caches (non-temporal), for the large
 * copies between the caller's memory and the pinned ring: a plain store
 * first reads the destination's cache line, so a copy moves three times its
 * bytes through the host's memory; a streaming store writes the line
 * without reading it, and the copy it makes is not read again by the CPU
 * (the DMA engine reads the pinned side; the caller reads its output
 * later).  bench/host_pack.cu measures both. */
static void copy_stream(char *dst, const char *src, size_t bytes)
{
#ifdef GP_STREAM_STORES
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15, k, vec;
    if (bytes < 4096) {
        memcpy(dst, src, bytes);
        return;
    }
    memcpy(dst, src, head);
    dst += head, src += head, bytes -= head;
    vec = bytes / 64;
    for (k = 0; k < vec; k++, src += 64, dst += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)src), b = _mm_loadu_si128((const __m128i *)src + 1);
        __m128i c = _mm_loadu_si128((const __m128i *)src + 2), d = _mm_loadu_si128((const __m128i *)src + 3);
        _mm_stream_si128((__m128i *)dst, a);
        _mm_stream_si128((__m128i *)dst + 1, b);
        _mm_stream_si128((__m128i *)dst + 2, c);
        _mm_stream_si128((__m128i *)dst + 3, d);
    }
    memcpy(dst, src, bytes & 63);
    _mm_sfence(); /* the streamed lines are visible before the thread is joined */
#else
    memcpy(dst, src, bytes);
#endif
}

static void copy_elems(char *dst, const char *src, int64_t count, int64_t stride, size_t item)
{
    int64_t k;
    if (stride == (int64_t)item) {
        copy_stream(dst, src, (size_t)count * item);
        return;
    }
    switch (item) {
#define GP_COPY(T)                                           \
    for (k = 0; k < count; k++, src += stride, dst += item) \
        memcpy(dst, src, sizeof(T));                         \
    break
    case 1: GP_COPY(uint8_t);
    case 2: GP_COPY(uint16_t);
    case 4: GP_COPY(uint32_t);
    case 8: GP_COPY(uint64_t);
#undef GP_COPY
    default:
        for (k = 0; k < count; k++, src += stride, dst += item)
            memcpy(dst, src, item);
    }
}

/* Elements [e0, e0 + m) of v in C order into dst, contiguous. */
static void pack_serial(const gp_hostview *v, int64_t e0, int64_t m, char *dst)
{
    int64_t idx[GP_TRANSPOSE_MAX_RANK + 16], rest = e0;
    int k, last = v->ndim - 1;
    if (v->contiguous || v->ndim == 0) {
        copy_stream(dst, v->base + (size_t)e0 * v->item, (size_t)m * v->item);
        return;
    }
    for (k = last; k >= 0; k--) {
        idx[k] = rest % v->shape[k];
        rest /= v->shape[k];
    }
    while (m > 0) {
        const char *src = v->base;
        int64_t run = v->shape[last] - idx[last];
        if (run > m)
            run = m;
        for (k = 0; k <= last; k++)
            src += idx[k] * v->strides[k];
        copy_elems(dst, src, run, v->strides[last], v->item);
        dst += (size_t)run * v->item;
        m -= run;
        idx[last] += run;
        for (k = last; k > 0 && idx[k] == v->shape[k]; k--) {
            idx[k] = 0;
            idx[k - 1]++;
        }
    }
}

typedef struct {
    const gp_hostview *v;
    int64_t e0, m;
    char *dst;
    /* an unpack instead (v NULL): bytes of src (contiguous) into rows of
     * width bytes, pitch apart from dst (a plain copy: one row) */
    const char *src;
    size_t bytes, width, pitch;
} gp_pack_task;

static void *pack_thread(void *arg)
{
    gp_pack_task *t = (gp_pack_task *)arg;
    size_t at;
    char *d;
    if (t->v != NULL)
        pack_serial(t->v, t->e0, t->m, t->dst);
    else
        for (at = 0, d = t->dst; at < t->bytes; at += t->width, d += t->pitch)
            copy_stream(d, t->src + at, t->width);
    return NULL;
}

static int host_threads(size_t bytes)
{
    static long cpus = 0;
    int n;
    if (cpus == 0) {
#ifdef __linux__
        cpu_set_t set; /* the CPUs this process may run on (a dask-cuda worker is bound to its GPU's) */
        if (sched_getaffinity(0, sizeof(set), &set) == 0)
            cpus = CPU_COUNT(&set);
#endif
        if (cpus <= 0)
            cpus = sysconf(_SC_NPROCESSORS_ONLN);
    }
    n = (int)(bytes >> 20); /* a thread per MiB at least (the pool's threads wait, started) */
    if (n > cpus)
        n = (int)cpus;
    if (n > GP_MAX_THREADS)
        n = GP_MAX_THREADS;
    return n < 1 ? 1 : n;
}

/* The packing threads: started once, at the first pack that wants them,
 * and kept (creating a thread costs tens of microseconds, as long as
 * packing a megabyte); worker k takes task k of each batch.  One batch at a
 * time (packs run under ring_lock).  A forked child has none of them: the
 * pool starts again there.  gp_pipeline_teardown stops them. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int workers;        /* started: workers 1 .. workers */
    unsigned long gen;  /* the batch's number */
    gp_pack_task *tasks;
    int n;              /* tasks 1 .. n-1 of the batch go to the workers */
    int pending;        /* of those, not done */
    int stop;
    int atfork;         /* the fork handler is registered */
    pthread_t th[GP_MAX_THREADS];
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, 0, 0, 0, 0, {0}};

static void *pool_worker(void *arg)
{
    int k = (int)(intptr_t)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (!pool.stop && pool.gen == seen)
            pthread_cond_wait(&pool.go, &pool.mu);
        if (pool.stop)
            break;
        seen = pool.gen;
        if (k < pool.n) { /* a batch completes before the next starts: this is that batch's task */
            gp_pack_task *t = &pool.tasks[k];
            pthread_mutex_unlock(&pool.mu);
            (void)pack_thread(t);
            pthread_mutex_lock(&pool.mu);
            if (--pool.pending == 0)
                pthread_cond_signal(&pool.done);
        }
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static void pool_after_fork_child(void)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pool.mu = mu;
    pool.go = pool.done = c;
    pool.workers = 0; /* the parent's threads are not in the child */
    pool.gen = 0;
    pool.n = pool.pending = pool.stop = 0;
}

/* Workers 1 .. want started (as many as can be): how many there are. */
static int pool_ensure(int want)
{
    pthread_mutex_lock(&pool.mu);
    if (!pool.atfork)
        pool.atfork = pthread_atfork(NULL, NULL, pool_after_fork_child) == 0;
    while (pool.workers < want && pool.workers + 1 < GP_MAX_THREADS &&
           pthread_create(&pool.th[pool.workers + 1], NULL, pool_worker, (void *)(intptr_t)(pool.workers + 1)) == 0)
        pool.workers++;
    want = pool.workers < want ? pool.workers : want;
    pthread_mutex_unlock(&pool.mu);
    return want;
}

static void pool_stop(void)
{
    int k, workers;
    pthread_mutex_lock(&pool.mu);
    pool.stop = 1;
    workers = pool.workers;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    for (k = 1; k <= workers; k++)
        pthread_join(pool.th[k], NULL);
    pthread_mutex_lock(&pool.mu);
    pool.workers = 0;
    pool.stop = 0;
    pthread_mutex_unlock(&pool.mu);
}

/* Run tasks[0..n): task 0 and any a worker cannot take on the calling
 * thread, tasks 1 .. on the pool's workers. */
static void run_tasks(gp_pack_task *tasks, int n)
{
    int w = n > 1 ? pool_ensure(n - 1) : 0, k;
    if (w > 0) {
        pthread_mutex_lock(&pool.mu);
        pool.tasks = tasks;
        pool.n = w + 1;
        pool.pending = w;
        pool.gen++;
        pthread_cond_broadcast(&pool.go);
        pthread_mutex_unlock(&pool.mu);
    }
    (void)pack_thread(&tasks[0]);
    for (k = w + 1; k < n; k++)
        (void)pack_thread(&tasks[k]); /* no worker to be had: done here */
    if (w > 0) {
        pthread_mutex_lock(&pool.mu);
        while (pool.pending > 0)
            pthread_cond_wait(&pool.done, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
}

/* Elements [e0, e0 + m) of v into dst, on host threads. */
static void pack(const gp_hostview *v, int64_t e0, int64_t m, char *dst)
{
    gp_pack_task tasks[GP_MAX_THREADS];
    int n = host_threads((size_t)m * v->item), k;
    int64_t per = (m + n - 1) / n, at = 0;
    for (k = 0; k < n; k++) {
        int64_t cnt = m - at < per ? m - at : per;
        tasks[k].v = v;
        tasks[k].e0 = e0 + at;
        tasks[k].m = cnt < 0 ? 0 : cnt;
        tasks[k].dst = dst + (size_t)at * v->item;
        at += tasks[k].m;
    }
    run_tasks(tasks, n);
}

/* memcpy on host threads. */
static void copy_parallel(char *dst, const char *src, size_t bytes)
{
    gp_pack_task tasks[GP_MAX_THREADS];
    int n = host_threads(bytes), k;
    size_t per = (bytes + (size_t)n - 1) / (size_t)n, at = 0;
    for (k = 0; k < n; k++) {
        size_t b = bytes - at < per ? bytes - at : per;
        tasks[k].v = NULL;
        tasks[k].dst = dst + at;
        tasks[k].src = src + at;
        tasks[k].bytes = tasks[k].width = tasks[k].pitch = b;
        at += b;
    }
    run_tasks(tasks, n);
}

/* `height` rows of `width` bytes from contiguous src into dst, `pitch`
 * apart, on host threads (whole rows a thread). */
static void scatter_parallel(char *dst, size_t pitch, const char *src, size_t width, size_t height)
{
    gp_pack_task tasks[GP_MAX_THREADS];
    int n = host_threads(width * height), k;
    size_t per, at = 0;
    if ((size_t)n > height)
        n = (int)height;
    if (n < 1 || width == 0)
        return;
    per = (height + (size_t)n - 1) / (size_t)n;
    for (k = 0; k < n; k++) {
        size_t h = height - at < per ? height - at : per;
        tasks[k].v = NULL;
        tasks[k].dst = dst + at * pitch;
        tasks[k].src = src + at * width;
        tasks[k].bytes = h * width;
        tasks[k].width = width;
        tasks[k].pitch = pitch;
        at += h;
    }
    run_tasks(tasks, n);
}

/* The host view of a job's input buffer. */
static void view_of(const Py_buffer *b, gp_hostview *v)
{
    int k;
    v->base = (const char *)b->buf;
    v->item = (size_t)(b->itemsize > 0 ? b->itemsize : 1);
    v->ndim = b->ndim;
    v->contiguous = b->strides == NULL || PyBuffer_IsContiguous(b, 'C');
    if (v->ndim > (int)(sizeof(v->shape) / sizeof(v->shape[0])) || b->shape == NULL) {
        v->contiguous = 1; /* C-contiguous (take_operand asked for it otherwise) */
        v->ndim = 1;
        v->shape[0] = b->len / (Py_ssize_t)v->item;
        v->strides[0] = (int64_t)v->item;
        return;
    }
    for (k = 0; k < v->ndim; k++) {
        v->shape[k] = b->shape[k];
        v->strides[k] = b->strides != NULL ? b->strides[k] : 0;
    }
}

/* Whether host view v lies in page-locked memory (its whole span); mapped
 * (unless NULL): where kernels reach v's lowest byte, or NULL
 * (runtime host_pinned). */
static int view_pinned(const gp_runtime *rt, const gp_hostview *v, const void **mapped)
{
    const char *lo = v->base, *hi = v->base + v->item;
    int k;
    if (mapped != NULL)
        *mapped = NULL;
    for (k = 0; k < v->ndim; k++) {
        int64_t d = (v->shape[k] - 1) * v->strides[k];
        if (v->shape[k] == 0)
            return 0;
        if (d < 0)
            lo += d;
        else
            hi += d;
    }
    return ring.direct && rt->host_pinned(lo, (size_t)(hi - lo), mapped);
}

/* Elements [e0, e0 + m) of v as the copy engine can read them in place:
 * one run of bytes, or (a 2-D tile of a row-major view) rows of `width`
 * bytes `pitch` apart.  0: neither (they are packed). */
typedef struct {
    const char *src;
    size_t pitch, width, height;
} gp_rows;

static int in_place(const gp_hostview *v, int64_t e0, int64_t m, gp_rows *r)
{
    if (v->contiguous) {
        r->src = v->base + (size_t)e0 * v->item;
        r->width = r->pitch = (size_t)m * v->item;
        r->height = 1;
        return 1;
    }
    if (v->ndim == 2 && e0 == 0 && m == v->shape[0] * v->shape[1] && v->strides[1] == (int64_t)v->item &&
        v->strides[0] >= v->shape[1] * (int64_t)v->item) {
        r->src = v->base;
        r->pitch = (size_t)v->strides[0];
        r->width = (size_t)v->shape[1] * v->item;
        r->height = (size_t)v->shape[0];
        return 1;
    }
    return 0;
}

/* A copy between dense device memory and host rows (one run: height 1). */
static cudaError_t copy_rows(const gp_runtime *rt, void *dev, const gp_rows *r, char *host_dst, cudaStream_t s)
{
    if (host_dst == NULL)
        return r->height == 1 ? rt->memcpy_async(dev, r->src, r->width, cudaMemcpyHostToDevice, s)
                              : rt->memcpy2d_async(dev, r->width, r->src, r->pitch, r->width, r->height,
                                                   cudaMemcpyHostToDevice, s);
    return r->height == 1 ? rt->memcpy_async(host_dst, dev, r->width, cudaMemcpyDeviceToHost, s)
                          : rt->memcpy2d_async(host_dst, r->pitch, dev, r->width, r->width, r->height,
                                               cudaMemcpyDeviceToHost, s);
}

/* ----------------------------------------------------- one pipelined call */

typedef struct {
    gp_job *j;
    PyThreadState *ts; /* the thread's state while the GIL is released */
    double t0;
    int64_t done, total; /* progress: input elements done of total */
    int shown;
    int interrupted;
    gp_hostview in; /* the job's input (view_of), built once for the call */
} gp_run;

/* Between chunks: take the GIL, check for Ctrl-C (and the test hook),
 * print the progress line of a long call, give the GIL back.  -1 with
 * KeyboardInterrupt set: the caller drains and returns. */
static int checkpoint(gp_run *r, int64_t chunk)
{
    int stop;
    PyEval_RestoreThread(r->ts);
    if (ring.interrupt_after >= 0 && chunk >= ring.interrupt_after)
        PyErr_SetInterrupt(); /* as if SIGINT arrived now */
    stop = PyErr_CheckSignals() < 0;
    if (!stop && r->j->progress && r->total > 0) {
        double el = now_s() - r->t0, frac = (double)r->done / (double)r->total;
        /* expected above progress_s (2 s) in all, judged after an eighth of
         * it has passed (a first chunk slowed by the kernels' first load
         * must not make a short call look long): show it */
        if (r->shown || (frac > 0 && el >= ring.progress_s / 8 && el / frac > ring.progress_s)) {
            PySys_WriteStderr("\rgpuprims %s: %3d%% of %lld elements, %.1f s", r->j->fam->name,
                              (int)(100.0 * frac), (long long)r->total, el);
            r->shown = 1;
        }
    }
    r->ts = PyEval_SaveThread();
    if (stop)
        r->interrupted = 1;
    return stop ? -1 : 0;
}

/* Scratch bytes a launch of c needs (the launcher's first phase). */
static cudaError_t scratch_for(gp_job *j, gp_call *c, size_t *bytes)
{
    void *saved = c->scratch;
    cudaError_t err;
    c->scratch = NULL;
    err = j->fam->launch(j->v, c);
    c->scratch = saved;
    *bytes = c->scratch_bytes;
    return err;
}

/* Launch c with scratch (its bytes asked for first). */
static cudaError_t launch_with(gp_job *j, gp_call *c, void *scratch)
{
    size_t need;
    cudaError_t err = scratch_for(j, c, &need);
    if (err != cudaSuccess)
        return err;
    c->scratch = scratch;
    c->scratch_bytes = need;
    return j->fam->launch(j->v, c);
}

/* The chunk plan of one call: elements per chunk (rows x cols per tile
 * for a transpose) and the device bytes it needs.  The largest chunk whose
 * pinned bytes fit a ring slot (or the test hook's size) and whose device
 * memory fits the limit; a function of the sizes and settings only. */
typedef struct {
    int64_t m;          /* elements per chunk */
    int64_t tr, tc;     /* transpose: a tile's rows and columns */
    int64_t nchunks;
    size_t dev_bytes;   /* the call's device allocation */
    size_t scratch;     /* scratch of one launch */
} gp_plan;

static size_t acc_size(const gp_call *c) { return gp_sizes[c->out_t]; }

/* A float sum on a GP_REPRODUCIBLE row: chunks exchange 32-byte
 * accumulator states (gpuprims.h, GP_STATES_OUT / carry_in), never
 * rounded floats, so the bits do not depend on the chunking. */
#define GP_STATE_BYTES 32
static int rep_sum(const gp_job *j)
{
    const gp_call *c = &j->c;
    return (j->v->flags & GP_REPRODUCIBLE) && c->op == GP_SUM && (c->out_t == GP_FLOAT32 || c->out_t == GP_FLOAT64);
}

/* Device bytes of the reduce/scan pipeline for chunks of m elements. */
static cudaError_t device_bytes(gp_job *j, int64_t m, int64_t nchunks, gp_plan *p)
{
    gp_call cc = j->c;
    const char *fam = j->fam->name;
    size_t sc = 0, sc2 = 0, per_stage, acc = 0, extra = 0;
    cudaError_t err;
    int stages = fam[0] == 'r' ? GP_RING_SLOTS : 2;
    if (fam[0] == 't') {
        per_stage = 2 * gp_align256((size_t)m * j->c.in_elem);
        p->scratch = 0;
        p->dev_bytes = (size_t)stages * per_stage + 256;
        return cudaSuccess;
    }
    acc = acc_size(&j->c);
    cc.batched = 0;
    cc.in_t = j->c.in_t;
    if (fam[0] == 'r') {
        int cast = !j->rt->variant_reads(j->v, (gp_op)cc.op, (gp_dtype)cc.in_t, (gp_dtype)cc.out_t);
        if (cast)
            cc.in_t = cc.out_t;
        cc.n = cc.len = m;
        if ((err = scratch_for(j, &cc, &sc)) != cudaSuccess)
            return err;
        cc.in_t = cc.out_t;
        cc.n = cc.len = nchunks;
        if ((err = scratch_for(j, &cc, &sc2)) != cudaSuccess)
            return err;
        per_stage = gp_align256((size_t)m * j->c.in_elem) + (cast ? gp_align256((size_t)m * acc) : 0);
        extra = gp_align256((size_t)nchunks * (rep_sum(j) ? GP_STATE_BYTES : acc));
    } else {
        cc.in_t = cc.out_t;
        cc.n = cc.len = m + 1;
        cc.inclusive = 1;
        if ((err = scratch_for(j, &cc, &sc)) != cudaSuccess)
            return err;
        per_stage = (j->c.in_t != j->c.out_t ? gp_align256((size_t)m * j->c.in_elem) : 0) +
                    2 * gp_align256((size_t)(m + 1) * acc) +
                    (j->c.res_t >= 0 ? gp_align256((size_t)(m + 1) * gp_sizes[j->c.res_t]) : 0);
        extra = rep_sum(j) ? 2 * 256 : 0; /* the two carried states */
    }
    p->scratch = gp_align256(sc > sc2 ? sc : sc2);
    p->dev_bytes = (size_t)stages * per_stage + extra + p->scratch + 256;
    return cudaSuccess;
}

/* The largest element count per chunk that fits the ring, the hook and
 * the device limit.  -1 with ValueError where even a small chunk does not. */
static int make_plan(gp_job *j, gp_plan *p)
{
    const gp_call *c = &j->c;
    const char *fam = j->fam->name;
    size_t slot = ((ring.limit / GP_RING_SLOTS) & ~(size_t)4095) < 4096 ? 4096
                                                                      : (ring.limit / GP_RING_SLOTS) & ~(size_t)4095;
    size_t cap = ring.chunk_bytes ? (ring.chunk_bytes < slot ? ring.chunk_bytes : slot) : slot;
    size_t widest = c->in_elem > c->out_elem ? c->in_elem : c->out_elem;
    int64_t n = c->n, m;
    cudaError_t err;
    if (fam[0] == 's' && widest < acc_size(c))
        widest = acc_size(c);
    m = (int64_t)(cap / widest);
    if (fam[0] == 's')
        m -= 1; /* the carry's element */
    if (m < 1)
        m = 1;
    if (m > n)
        m = n;
    /* several chunks for a mid-sized array, so that copies and packing overlap */
    if (ring.chunk_bytes == 0 && n < 8 * m && (size_t)(n / 8) * widest >= (1u << 20))
        m = (n + 7) / 8;
    for (;;) {
        p->m = m;
        p->nchunks = m > 0 ? (n + m - 1) / m : 0;
        if (fam[0] == 't') {
            const gp_transpose_args *a = &c->transpose;
            int64_t rows = a->rank == 2 ? a->shape[0] : 1, cols = a->rank == 2 ? a->shape[1] : n;
            /* Column strips (every row, tc columns) where a column fits a
             * chunk: the strip's transpose is a contiguous piece of the
             * output, unpacked by all the host threads, and its input is
             * read in runs of tc elements.  Else blocks of whole rows
             * (their output lands in tc runs of tr elements). */
            if (j->in_pinned && (j->out_mapped != NULL || !j->out_pinned) && rows > 1 && cols > 1) {
                /* A page-locked input: blocks of whole rows where they fit
                 * (else of rows of tc columns), at least 1 KiB of output
                 * run a row where the chunk allows.  The input's rows come
                 * in as one run (or a pitched copy of wide rows: column
                 * strips would be pitched copies of short rows, slow
                 * between kernels), and the tile's tc runs of tr elements
                 * are stored into a mapped output by a kernel, where runs
                 * of 1 KiB or more cross the bus as fast as a copy
                 * (cuda/copy2d.cu), or scattered into a pageable one by the
                 * host threads. */
                int64_t run = (int64_t)(1024 / c->in_elem) < 1 ? 1 : (int64_t)(1024 / c->in_elem);
                p->tc = cols <= m / run ? cols : (m / run < 1 ? 1 : m / run);
                p->tr = rows < m / p->tc ? rows : m / p->tc;
            } else if (j->in_pinned && j->out_pinned && rows > 1 && cols > 1) {
                /* Both copied in place as pitched rows - the input's of tc
                 * elements, the output's of tr - whose copies run at the
                 * bus's speed only where the rows are wide (2x H200: rows
                 * of 4 KiB 34 GB/s, 16 KiB 48, 64 KiB 55; bench/results/
                 * copy2d-*): square tiles, both kinds of rows as wide as
                 * the chunk allows. */
                int64_t side = 1;
                while ((side * 2) * (side * 2) <= m)
                    side *= 2;
                p->tr = rows < side ? rows : side;
                p->tc = m / p->tr < cols ? m / p->tr : cols;
            } else if (rows > 0 && rows <= m) {
                p->tr = rows;
                p->tc = m / rows < cols ? m / rows : cols;
            } else {
                p->tc = cols < m ? cols : m;
                p->tr = m / p->tc;
            }
            if (p->tr < 1)
                p->tr = 1;
            if (p->tc < 1)
                p->tc = 1;
            p->nchunks = ((rows + p->tr - 1) / p->tr) * ((cols + p->tc - 1) / p->tc);
            p->m = p->tr * p->tc;
        }
        if ((err = device_bytes(j, p->m, p->nchunks, p)) != cudaSuccess) {
            gp_job_raise_failed(j, err, "sizing scratch");
            return -1;
        }
        if (ring.device_limit < 0 || (long long)p->dev_bytes <= ring.device_limit)
            return 0;
        if (m <= 64) {
            PyErr_Format(PyExc_ValueError,
                         "%s: the device-memory limit of %lld bytes is too small for even a chunk of "
                         "%lld elements (%zu bytes of device memory); raise it "
                         "(gpuprims.set_device_memory_limit or GPUPRIMS_DEVICE_MEMORY_LIMIT)",
                         j->fam->name, ring.device_limit, (long long)m, p->dev_bytes);
            return -1;
        }
        m /= 2;
    }
}

int gp_pipeline_takes_strided(const gp_job *j)
{
    const gp_call *c = &j->c;
    if (j->v->where != GP_ON_DEVICE || c->batched)
        return 0;
    return j->fam->name[0] == 'r' ? c->scalar : j->fam->name[0] == 's';
}

int gp_pipeline_wanted(gp_job *j)
{
    const gp_call *c = &j->c;
    const char *fam = j->fam->name;
    size_t bytes;
    int strided;
    if (j->v->where != GP_ON_DEVICE || !j->in.host || (j->has_out && !j->out.host) || c->n == 0)
        return 0;
    strided = j->in.view.strides != NULL && !PyBuffer_IsContiguous(&j->in.view, 'C');
    if (c->batched || (fam[0] == 'r' && !c->scalar))
        return 0; /* axis and segment layouts: single shot (split by the Python layer) */
    if (fam[0] == 't' && c->transpose.rank > 2)
        return 0;
    if (fam[0] != 'r' && (!j->has_out || c->out_n != c->n))
        return 0;
    if (strided || (c->carry_in != NULL && !(j->v->flags & GP_REPRODUCIBLE)))
        return 1; /* a plain scan's carry-in value: run_scan puts it in front of the first chunk */
    bytes = (size_t)c->n * c->in_elem + (j->has_out ? (size_t)c->out_n * c->out_elem : 0);
    if (ring.device_limit >= 0 && (long long)(2 * bytes) > ring.device_limit)
        return 1;
    /* The emulator has no bus to overlap: at the default threshold it keeps
     * one launch per call (its long-launch notice and Ctrl-C per kernel stay
     * as they are); the tests set a threshold to run the pipeline there. */
    if (j->rt == &gp_runtime_emu && ring.threshold == GP_THRESHOLD)
        return 0;
    return bytes >= ring.threshold;
}

/* Wait for everything the pipeline queued; the first error, or err. */
static cudaError_t drain(gp_job *j, cudaError_t err)
{
    const gp_runtime *rt = j->rt;
    cudaError_t e;
    if ((e = rt->stream_sync(ring.h2d)) != cudaSuccess && err == cudaSuccess)
        err = e;
    if ((e = rt->stream_sync(ring.d2h)) != cudaSuccess && err == cudaSuccess)
        err = e;
    if ((e = rt->stream_sync(j->c.stream)) != cudaSuccess && err == cudaSuccess)
        err = e;
    if (j->block != NULL) {
        if ((e = rt->free_async(j->block, j->c.stream)) != cudaSuccess && err == cudaSuccess)
            err = e;
        j->block = NULL;
        if ((e = rt->stream_sync(j->c.stream)) != cudaSuccess && err == cudaSuccess)
            err = e;
    }
    return err;
}

/* Chunk i's input copied in on the h2d stream, behind the kernel that last
 * read the device buffer: from the caller's page-locked buffer in place,
 * or packed into its stage's pinned buffer once that is free (the copy of
 * chunk i - stages done) and copied from there. */
static cudaError_t stage_in(gp_job *j, const gp_hostview *v, int s, int64_t e0, int64_t m, void *dev)
{
    const gp_runtime *rt = j->rt;
    cudaError_t err;
    double t0;
    int tk;
    gp_rows rows;
    if (j->in_pinned && in_place(v, e0, m, &rows)) {
        if ((err = rt->stream_wait_event(ring.h2d, ring.ev_kernel[s])) != cudaSuccess)
            return err;
        tk = trace_dev_begin(rt, GP_TR_IN, ring.h2d);
        err = copy_rows(rt, dev, &rows, NULL, ring.h2d);
        if (err == cudaErrorInvalidValue) { /* not one page-locked block after all: packed from here on */
            (void)rt->get_last_error();
            j->in_pinned = 0;
            return stage_in(j, v, s, e0, m, dev);
        }
        if (err != cudaSuccess || (err = trace_dev_end(rt, tk, GP_TR_IN, ring.h2d)) != cudaSuccess ||
            (err = rt->event_record(ring.ev_in[s], ring.h2d)) != cudaSuccess)
            return err;
        ring.direct_in++;
        return rt->stream_wait_event(j->c.stream, ring.ev_in[s]);
    }
    if ((err = rt->event_sync(ring.ev_in[s])) != cudaSuccess)
        return err;
    t0 = trace.max ? now_s() : 0.0;
    pack(v, e0, m, (char *)ring.buf[s]);
    if (trace.max)
        trace_host(GP_TR_PACK, t0, now_s());
    if ((err = rt->stream_wait_event(ring.h2d, ring.ev_kernel[s])) != cudaSuccess)
        return err;
    tk = trace_dev_begin(rt, GP_TR_IN, ring.h2d);
    if ((err = rt->memcpy_async(dev, ring.buf[s], (size_t)m * v->item, cudaMemcpyHostToDevice, ring.h2d)) !=
            cudaSuccess ||
        (err = trace_dev_end(rt, tk, GP_TR_IN, ring.h2d)) != cudaSuccess ||
        (err = rt->event_record(ring.ev_in[s], ring.h2d)) != cudaSuccess)
        return err;
    return rt->stream_wait_event(j->c.stream, ring.ev_in[s]);
}

/* Chunk i's output copied out on the d2h stream, behind its kernel: into
 * the caller's page-locked output in place where `to` is given (rows of
 * to->width bytes, to->pitch apart from to->src; *direct set to 1), else
 * into pinned buffer `slot` (bytes; *direct 0), for the host to unpack. */
static cudaError_t stage_out(gp_job *j, int s, int slot, const void *dev, size_t bytes, const gp_rows *to,
                             int *direct)
{
    const gp_runtime *rt = j->rt;
    cudaError_t err;
    int tk;
    *direct = 0;
    if ((err = rt->event_record(ring.ev_kernel[s], j->c.stream)) != cudaSuccess ||
        (err = rt->stream_wait_event(ring.d2h, ring.ev_kernel[s])) != cudaSuccess)
        return err;
    tk = trace_dev_begin(rt, GP_TR_OUT, ring.d2h);
    if (j->out_pinned && j->out_mapped != NULL && to->height > 1) {
        /* pitched rows into the mapped output, stored by a kernel (on the
         * copy-out stream, beside the next tile's kernel): the copy
         * engine's pitched copies slow down between kernels (cuda/copy2d.cu) */
        if ((err = rt->copy2d(j->out_mapped + (to->src - (const char *)j->out.view.buf), to->pitch, dev, to->width,
                              to->width, to->height, (unsigned)ring.store_blocks, ring.d2h)) != cudaSuccess)
            return err;
        *direct = 1;
        ring.direct_out++;
        ring.stored_out++;
    } else if (j->out_pinned) {
        err = copy_rows(rt, (void *)dev, to, (char *)to->src, ring.d2h);
        if (err == cudaErrorInvalidValue) { /* not one page-locked block after all: unpacked from here on */
            (void)rt->get_last_error();
            j->out_pinned = 0;
        } else if (err != cudaSuccess) {
            return err;
        } else {
            *direct = 1;
            ring.direct_out++;
        }
    }
    if (!*direct && (err = rt->memcpy_async(ring.buf[slot], dev, bytes, cudaMemcpyDeviceToHost, ring.d2h)) !=
                        cudaSuccess)
        return err;
    if ((err = trace_dev_end(rt, tk, GP_TR_OUT, ring.d2h)) != cudaSuccess)
        return err;
    return rt->event_record(ring.ev_out[s], ring.d2h);
}

/* ---- reduce: partials per chunk, then one launch over the partials */

static cudaError_t run_reduce(gp_run *r, const gp_plan *p, char *block)
{
    gp_job *j = r->j;
    const gp_runtime *rt = j->rt;
    const gp_call *c = &j->c;
    const int stages = GP_RING_SLOTS;
    size_t acc = acc_size(c), in_b = gp_align256((size_t)p->m * c->in_elem);
    int cast = !rt->variant_reads(j->v, (gp_op)c->op, (gp_dtype)c->in_t, (gp_dtype)c->out_t);
    size_t conv_b = cast ? gp_align256((size_t)p->m * acc) : 0;
    int rep = rep_sum(j);
    size_t part = rep ? GP_STATE_BYTES : acc;
    char *partials = block + (size_t)stages * (in_b + conv_b), *scratch = partials + gp_align256((size_t)p->nchunks * part);
    gp_call cc;
    cudaError_t err = cudaSuccess;
    int64_t i;
    int tk;
    for (i = 0; i < p->nchunks && err == cudaSuccess; i++) {
        int s = (int)(i % stages);
        int64_t e0 = i * p->m, m = c->n - e0 < p->m ? c->n - e0 : p->m;
        char *din = block + (size_t)s * (in_b + conv_b);
        if ((err = stage_in(j, &r->in, s, e0, m, din)) != cudaSuccess)
            break;
        tk = trace_dev_begin(rt, GP_TR_KERNEL, c->stream);
        cc = *c;
        cc.n = cc.len = m;
        cc.in = din;
        if (cast) {
            if ((err = rt->cast(din, (gp_dtype)c->in_t, din + in_b, (gp_dtype)c->out_t, m, c->stream)) != cudaSuccess)
                break;
            cc.in = din + in_b;
            cc.in_t = c->out_t;
        }
        cc.out = partials + (size_t)i * part;
        cc.states = rep ? GP_STATES_OUT : 0;
        if ((err = launch_with(j, &cc, scratch)) != cudaSuccess ||
            (err = rt->event_record(ring.ev_kernel[s], c->stream)) != cudaSuccess)
            break;
        if ((err = trace_dev_end(rt, tk, GP_TR_KERNEL, c->stream)) != cudaSuccess)
            break;
        r->done = e0 + m;
        if (checkpoint(r, i + 1) < 0)
            return cudaSuccess;
    }
    if (err != cudaSuccess)
        return err;
    cc = *c;
    cc.n = cc.len = p->nchunks;
    cc.in = partials;
    cc.in_t = c->out_t;
    cc.out = j->res->result;
    cc.states = rep ? GP_STATES_IN : 0; /* the chunks' states merged, rounded once */
    return launch_with(j, &cc, scratch);
}

/* ---- scan: the carry in front of each chunk after the first */

static cudaError_t run_scan(gp_run *r, const gp_plan *p, char *block)
{
    gp_job *j = r->j;
    const gp_runtime *rt = j->rt;
    const gp_call *c = &j->c;
    size_t acc = acc_size(c), oe = c->out_elem;
    int cast = c->in_t != c->out_t;
    size_t in_b = cast ? gp_align256((size_t)p->m * c->in_elem) : 0;
    size_t work_b = gp_align256((size_t)(p->m + 1) * acc), res_b = c->res_t >= 0 ? gp_align256((size_t)(p->m + 1) * oe) : 0;
    size_t stage_b = in_b + 2 * work_b + res_b;
    char *scratch = block + 2 * stage_b;
    char *out = (char *)j->out.view.buf;
    gp_call cc;
    cudaError_t err = cudaSuccess;
    int64_t i, prev_e0 = 0, prev_m = 0;
    int od[2] = {0, 0}; /* the stage's output went into the caller's page-locked output in place */
    /* a reproducible float sum carries the running accumulator state from
     * chunk to chunk (two slots, alternating), not a rounded total */
    int rep = rep_sum(j);
    char *states = scratch + p->scratch;
    int tk;
    for (i = 0; i <= p->nchunks && err == cudaSuccess; i++) {
        int s = (int)(i % 2);
        if (i < p->nchunks) {
            int64_t e0 = i * p->m, m = c->n - e0 < p->m ? c->n - e0 : p->m;
            char *st = block + (size_t)s * stage_b, *din = st, *work = st + in_b, *y = work + work_b,
                 *res = y + work_b;
            gp_rows to;
            /* the out buffer's pinned slot (2 + s) is free: chunk i - 2 was unpacked */
            if ((err = stage_in(j, &r->in, s, e0, m, cast ? din : work + acc)) != cudaSuccess)
                break;
            if ((err = rt->stream_wait_event(c->stream, ring.ev_out[s])) != cudaSuccess)
                break; /* y and res of chunk i - 2 copied out */
            tk = trace_dev_begin(rt, GP_TR_KERNEL, c->stream);
            if (cast && (err = rt->cast(din, (gp_dtype)c->in_t, work + acc, (gp_dtype)c->out_t, m, c->stream)) !=
                            cudaSuccess)
                break;
            cc = *c;
            cc.in_t = c->out_t;
            cc.inclusive = 1;
            cc.carry_in = NULL; /* a plain scan's carry-in value goes in as an element (below) */
            if (rep) {
                cc.n = cc.len = m;
                cc.in = work + acc;
                cc.out = y + acc;
                cc.inclusive = c->inclusive;
                cc.carry_in = i > 0 ? states + 256 * (size_t)((i + 1) % 2) : c->carry_in;
                cc.carry_out = i + 1 < p->nchunks ? states + 256 * (size_t)(i % 2) : NULL;
            } else if (i == 0 && c->carry_in == NULL) {
                cc.n = cc.len = m;
                cc.in = work + acc;
                cc.out = y + acc;
            } else { /* the carry in work[0]: the last chunk's, or the caller's carry-in value */
                if (i == 0 && (err = rt->memcpy_async(work, c->carry_in, acc, cudaMemcpyDeviceToDevice,
                                                      c->stream)) != cudaSuccess)
                    break;
                cc.n = cc.len = m + 1;
                cc.in = work;
                cc.out = y;
            }
            if ((err = launch_with(j, &cc, scratch)) != cudaSuccess)
                break;
            if (i == 0 && !c->inclusive && !rep && c->carry_in == NULL) { /* y[0]: the identity, an exclusive scan of one element */
                cc.n = cc.len = 1;
                cc.inclusive = 0;
                cc.out = y;
                if ((err = launch_with(j, &cc, scratch)) != cudaSuccess)
                    break;
            }
            if (i + 1 < p->nchunks && !rep) { /* the carry: y[m], into the next stage's work[0] */
                char *next = block + (size_t)((i + 1) % 2) * stage_b + in_b;
                if ((err = rt->memcpy_async(next, y + (size_t)m * acc, acc, cudaMemcpyDeviceToDevice, c->stream)) !=
                    cudaSuccess)
                    break;
            }
            if (c->res_t >= 0) { /* min/max saturate: the exclusive scan's identity stays one */
                int sat = c->op == GP_MIN || c->op == GP_MAX ? GP_CAST_SATURATE : 0;
                if ((err = rt->cast(y, (gp_dtype)c->out_t, res, (gp_dtype)(c->res_t | sat), m + 1, c->stream)) !=
                    cudaSuccess)
                    break;
                y = res;
            }
            to.src = out + (size_t)e0 * oe;
            to.pitch = to.width = (size_t)m * oe;
            to.height = 1;
            if ((err = trace_dev_end(rt, tk, GP_TR_KERNEL, c->stream)) != cudaSuccess ||
                (err = stage_out(j, s, 2 + s, y + (c->inclusive || rep ? oe : 0), (size_t)m * oe, &to, &od[s])) !=
                    cudaSuccess)
                break;
        }
        if (i > 0) { /* chunk i - 1's output unpacked while chunk i moves */
            int sp = (int)((i - 1) % 2);
            double t0;
            if ((err = rt->event_sync(ring.ev_out[sp])) != cudaSuccess)
                break;
            if (!od[sp]) {
                t0 = trace.max ? now_s() : 0.0;
                copy_parallel(out + (size_t)prev_e0 * oe, (const char *)ring.buf[2 + sp], (size_t)prev_m * oe);
                if (trace.max)
                    trace_host(GP_TR_UNPACK, t0, now_s());
            }
            r->done = prev_e0 + prev_m;
            if (checkpoint(r, i) < 0)
                return cudaSuccess;
        }
        prev_e0 = i * p->m;
        prev_m = c->n - prev_e0 < p->m ? c->n - prev_e0 : p->m;
    }
    return err;
}

/* ---- transpose: tiles of rows x columns */

typedef struct {
    int64_t r0, c0, tr, tc;
} gp_tile;

static cudaError_t run_transpose(gp_run *r, const gp_plan *p, char *block)
{
    gp_job *j = r->j;
    const gp_runtime *rt = j->rt;
    const gp_call *c = &j->c;
    const gp_transpose_args *a = &c->transpose;
    size_t e = c->in_elem, buf_b = gp_align256((size_t)p->m * e);
    int64_t rows = a->rank == 2 ? a->shape[0] : 1, cols = a->rank == 2 ? a->shape[1] : c->n;
    int64_t s0 = a->rank == 2 ? a->strides[0] : 0, s1 = a->rank == 2 ? a->strides[1] : (a->rank == 1 ? a->strides[0] : 1);
    int64_t col_tiles = (cols + p->tc - 1) / p->tc, i;
    const char *base = (const char *)j->in.view.buf + c->in_offset * (int64_t)e;
    char *out = (char *)j->out.view.buf;
    gp_tile prev = {0, 0, 0, 0};
    cudaError_t err = cudaSuccess;
    int tk, od[2] = {0, 0}; /* od: as in run_scan */
    for (i = 0; i <= p->nchunks && err == cudaSuccess; i++) {
        int s = (int)(i % 2);
        gp_tile t = {0, 0, 0, 0};
        if (i < p->nchunks) {
            gp_hostview v;
            gp_call cc;
            gp_rows to;
            char *din = block + (size_t)s * 2 * buf_b, *dout = din + buf_b;
            t.r0 = (i / col_tiles) * p->tr;
            t.c0 = (i % col_tiles) * p->tc;
            t.tr = rows - t.r0 < p->tr ? rows - t.r0 : p->tr;
            t.tc = cols - t.c0 < p->tc ? cols - t.c0 : p->tc;
            v.base = base + (t.r0 * s0 + t.c0 * s1) * (int64_t)e;
            v.ndim = 2;
            v.shape[0] = t.tr;
            v.shape[1] = t.tc;
            v.strides[0] = s0 * (int64_t)e;
            v.strides[1] = s1 * (int64_t)e;
            v.item = e;
            v.contiguous = (t.tr == 1 || s0 == t.tc) && s1 == 1;
            if ((err = stage_in(j, &v, s, 0, t.tr * t.tc, din)) != cudaSuccess ||
                (err = rt->stream_wait_event(c->stream, ring.ev_out[s])) != cudaSuccess)
                break;
            cc = *c;
            cc.in_offset = 0;
            cc.n = cc.out_n = t.tr * t.tc;
            cc.transpose.rank = 2;
            cc.transpose.shape[0] = cc.transpose.rows = t.tr;
            cc.transpose.shape[1] = cc.transpose.cols = t.tc;
            cc.transpose.strides[0] = t.tc;
            cc.transpose.strides[1] = 1;
            cc.transpose.perm[0] = 1;
            cc.transpose.perm[1] = 0;
            cc.in = din;
            cc.out = dout;
            cc.scratch = dout; /* a transpose asks for none; non-NULL: run */
            cc.scratch_bytes = 0;
            /* the tile's tc rows of tr elements are columns c0.. of the output, rows r0.. of each */
            to.src = out + (size_t)(t.c0 * rows + t.r0) * e;
            to.width = (size_t)t.tr * e;
            to.pitch = (size_t)rows * e;
            to.height = (size_t)t.tc;
            if (t.tr == rows) { /* whole columns: one run */
                to.width *= (size_t)t.tc;
                to.pitch = to.width;
                to.height = 1;
            }
            tk = trace_dev_begin(rt, GP_TR_KERNEL, c->stream);
            if ((err = j->fam->launch(j->v, &cc)) != cudaSuccess ||
                (err = trace_dev_end(rt, tk, GP_TR_KERNEL, c->stream)) != cudaSuccess ||
                (err = stage_out(j, s, 2 + s, dout, (size_t)(t.tr * t.tc) * e, &to, &od[s])) != cudaSuccess)
                break;
        }
        if (i > 0) { /* tile i - 1: its tc rows of tr elements into the output's columns */
            int sp = (int)((i - 1) % 2);
            const char *src = (const char *)ring.buf[2 + sp];
            double t0;
            if ((err = rt->event_sync(ring.ev_out[sp])) != cudaSuccess)
                break;
            if (!od[sp]) {
                t0 = trace.max ? now_s() : 0.0;
                if (prev.tr == rows)
                    copy_parallel(out + (size_t)(prev.c0 * rows) * e, src, (size_t)(prev.tc * prev.tr) * e);
                else
                    scatter_parallel(out + (size_t)(prev.c0 * rows + prev.r0) * e, (size_t)rows * e, src,
                                     (size_t)prev.tr * e, (size_t)prev.tc);
                if (trace.max)
                    trace_host(GP_TR_UNPACK, t0, now_s());
            }
            r->done += prev.tr * prev.tc;
            if (checkpoint(r, i) < 0)
                return cudaSuccess;
        }
        if (i < p->nchunks)
            prev = t;
    }
    return err;
}

PyObject *gp_pipeline_run(gp_job *j)
{
    gp_call *c = &j->c;
    const gp_runtime *rt = j->rt;
    gp_plan p;
    gp_run r;
    cudaError_t err;
    char *block = NULL;

    memset(&r, 0, sizeof(r));
    memset(&p, 0, sizeof(p));
    r.j = j;
    r.total = c->n;
    if (gp_ensure_device(j->module) < 0 || (j->res = gp_thread_resources(j->module)) == NULL) {
        gp_job_release(j);
        return NULL;
    }
    c->stream = cudaStreamPerThread;
    c->counter = j->res->counter;
    view_of(&j->in.view, &r.in);
    j->in_pinned = view_pinned(rt, &r.in, NULL);
    if (j->has_out && j->out.host) {
        gp_hostview v;
        const void *mapped;
        view_of(&j->out.view, &v); /* C-contiguous: its lowest byte is its first */
        j->out_pinned = view_pinned(rt, &v, &mapped);
        if (j->fam->name[0] == 't') /* a transpose's pitched tiles are stored into it by a kernel */
            j->out_mapped = (char *)mapped;
    }
    if (make_plan(j, &p) < 0) {
        gp_job_release(j);
        return NULL;
    }
    r.t0 = now_s();
    r.ts = PyEval_SaveThread();
    pthread_mutex_lock(&ring_lock);
    err = ring_ensure(rt);
    if (err == cudaSuccess && (err = rt->malloc_async((void **)&block, p.dev_bytes, c->stream)) == cudaSuccess) {
        int s;
        j->block = block;
        if (p.dev_bytes > ring.peak_device)
            ring.peak_device = p.dev_bytes;
        ring.last_device = p.dev_bytes;
        /* the copy streams behind the allocation, the ring's events at a
         * state that says "free" */
        err = rt->stream_wait_stream(ring.h2d, c->stream);
        if (err == cudaSuccess)
            err = rt->stream_wait_stream(ring.d2h, c->stream);
        for (s = 0; s < GP_RING_SLOTS && err == cudaSuccess; s++)
            if ((err = rt->event_record(ring.ev_in[s], ring.h2d)) == cudaSuccess &&
                (err = rt->event_record(ring.ev_kernel[s], c->stream)) == cudaSuccess)
                err = rt->event_record(ring.ev_out[s], ring.d2h);
        if (err == cudaSuccess)
            err = trace_start(rt, c->stream);
        if (err == cudaSuccess) {
            ring.calls++;
            ring.chunks += p.nchunks;
            switch (j->fam->name[0]) {
            case 'r': err = run_reduce(&r, &p, block); break;
            case 's': err = run_scan(&r, &p, block); break;
            default: err = run_transpose(&r, &p, block); break;
            }
        }
    }
    err = drain(j, err);
    trace_finish(rt);
    pthread_mutex_unlock(&ring_lock);
    PyEval_RestoreThread(r.ts);
    ring.last_wall_s = now_s() - r.t0;
    if (r.shown)
        PySys_WriteStderr("\rgpuprims %s: %s %lld elements in %.1f s\n", j->fam->name,
                          r.interrupted ? "stopped at" : "done,", (long long)r.done, ring.last_wall_s);
    gp_job_release(j);
    if (r.interrupted) {
        ring.interrupted++;
        return NULL; /* KeyboardInterrupt, set at the checkpoint */
    }
    if (err != cudaSuccess)
        return gp_job_raise_failed(j, err, "host pipeline");
    if (c->scalar)
        return gp_scalar_to_python(j->res->result, c->out_t);
    Py_RETURN_NONE;
}

/* ------------------------------------------------ plain copies, chunked */

int gp_pipeline_copy(PyObject *module, const gp_runtime *rt, void *dst, const void *src, size_t bytes,
                     int to_device)
{
    PyThreadState *ts;
    cudaError_t err;
    size_t chunk, at, done = 0;
    int64_t i, n;
    const cudaStream_t main = cudaStreamPerThread;
    if (bytes < ring.threshold)
        return 0;
    ts = PyEval_SaveThread();
    if (ring.direct && rt->host_pinned(to_device ? src : dst, bytes, NULL)) {
        /* page-locked host memory: one copy in place, no ring */
        err = rt->memcpy_async(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, main);
        if (err == cudaSuccess)
            err = rt->stream_sync(main);
        if (err != cudaErrorInvalidValue) {
            PyEval_RestoreThread(ts);
            if (err != cudaSuccess) {
                (void)rt->get_last_error();
                gp_raise_cuda(module, err, to_device ? "copy host to device (in place)" : "copy device to host (in place)");
                return -1;
            }
            pthread_mutex_lock(&ring_lock);
            if (to_device)
                ring.direct_in++;
            else
                ring.direct_out++;
            pthread_mutex_unlock(&ring_lock);
            return 1;
        }
        (void)rt->get_last_error(); /* not one page-locked block after all: through the ring */
    }
    pthread_mutex_lock(&ring_lock);
    err = ring_ensure(rt);
    chunk = ring.chunk_bytes && ring.chunk_bytes < ring.slot_bytes ? ring.chunk_bytes : ring.slot_bytes;
    if (bytes / 8 < chunk && bytes / 8 >= (1u << 20) && !ring.chunk_bytes)
        chunk = (bytes / 8 + 4095) & ~(size_t)4095; /* several chunks, so that copies overlap */
    n = (int64_t)((bytes + chunk - 1) / chunk);
    if (err == cudaSuccess)
        err = rt->stream_wait_stream(to_device ? ring.h2d : ring.d2h, main);
    for (i = 0; err == cudaSuccess && i < n + (to_device ? 0 : GP_RING_SLOTS); i++) {
        int s = (int)(i % GP_RING_SLOTS);
        if (to_device && i < n) {
            size_t b = bytes - (size_t)i * chunk < chunk ? bytes - (size_t)i * chunk : chunk;
            at = (size_t)i * chunk;
            if ((err = rt->event_sync(ring.ev_in[s])) != cudaSuccess)
                break;
            copy_parallel((char *)ring.buf[s], (const char *)src + at, b);
            if ((err = rt->memcpy_async((char *)dst + at, ring.buf[s], b, cudaMemcpyHostToDevice, ring.h2d)) ==
                cudaSuccess)
                err = rt->event_record(ring.ev_in[s], ring.h2d);
            done += b;
        } else if (!to_device) {
            /* device to host: the copies run GP_RING_SLOTS - 1 chunks ahead of the unpacking */
            if (i < n) {
                size_t b = bytes - (size_t)i * chunk < chunk ? bytes - (size_t)i * chunk : chunk;
                if ((err = rt->memcpy_async(ring.buf[s], (const char *)src + (size_t)i * chunk, b,
                                            cudaMemcpyDeviceToHost, ring.d2h)) != cudaSuccess ||
                    (err = rt->event_record(ring.ev_out[s], ring.d2h)) != cudaSuccess)
                    break;
            }
            if (i >= GP_RING_SLOTS - 1 && i - (GP_RING_SLOTS - 1) < n) {
                int64_t k = i - (GP_RING_SLOTS - 1);
                int sk = (int)(k % GP_RING_SLOTS);
                size_t b = bytes - (size_t)k * chunk < chunk ? bytes - (size_t)k * chunk : chunk;
                if ((err = rt->event_sync(ring.ev_out[sk])) != cudaSuccess)
                    break;
                copy_parallel((char *)dst + (size_t)k * chunk, (const char *)ring.buf[sk], b);
                done += b;
            }
        }
    }
    if (ring.rt == rt) {
        cudaError_t e = rt->stream_sync(ring.h2d);
        if (err == cudaSuccess)
            err = e;
        e = rt->stream_sync(ring.d2h);
        if (err == cudaSuccess)
            err = e;
    }
    if (err == cudaSuccess) {
        ring.calls++;
        ring.chunks += n;
    }
    pthread_mutex_unlock(&ring_lock);
    PyEval_RestoreThread(ts);
    (void)done;
    if (err != cudaSuccess) {
        (void)rt->get_last_error();
        gp_raise_cuda(module, err, to_device ? "copy host to device (pinned ring)" : "copy device to host (pinned ring)");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ for Python */

/* pipeline_config(pinned_limit=None, device_limit=None (-1: none),
 * threshold=None, chunk_bytes=None, interrupt_after=None, progress_s=None,
 * trace=None, serial=None, direct=None, store_blocks=None) -> dict of the
 * settings now.  The private knobs (threshold, chunk_bytes,
 * interrupt_after, progress_s: the expected seconds above which
 * progress=True shows its line) are for the tests; trace (records kept per
 * call, 0: off) and serial (no overlap) draw the pipeline's timeline
 * (pipeline_trace); direct=False sends page-locked operands through the
 * ring too; store_blocks: the blocks of the kernel that stores a
 * transpose's tiles into a mapped output (0: its tuned number), for the
 * benchmark's sweep. */
PyObject *gp_pipeline_config_py(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"pinned_limit", "device_limit", "threshold", "chunk_bytes", "interrupt_after",
                         "progress_s", "trace", "serial", "direct", "store_blocks", NULL};
    long long pinned = -2, device = -2, threshold = -2, chunk = -2, interrupt = -2, ntrace = -2;
    double progress_s = -2.0;
    int serial = -2, direct = -2, store_blocks = -2;
    gp_trace_rec *recs = NULL;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|LLLLLdLiii:pipeline_config", kw, &pinned, &device, &threshold,
                                     &chunk, &interrupt, &progress_s, &ntrace, &serial, &direct, &store_blocks))
        return NULL;
    if (ntrace != -2 && (ntrace < 0 || ntrace > (1 << 24))) {
        PyErr_SetString(PyExc_ValueError, "pipeline_config: trace is the number of records to keep per call, "
                                          "0 (off) to 16777216");
        return NULL;
    }
    if (ntrace > 0 && (recs = calloc((size_t)ntrace, sizeof(gp_trace_rec))) == NULL)
        return PyErr_NoMemory();
    if (progress_s != -2.0 && !(progress_s >= 0.0)) {
        PyErr_SetString(PyExc_ValueError, "pipeline_config: progress_s must be a number of seconds >= 0");
        return NULL;
    }
    if ((pinned != -2 && pinned < 4 * 4096) || (threshold != -2 && threshold < 0) || (chunk != -2 && chunk < 0) ||
        (device != -2 && device < -1) || (store_blocks != -2 && (store_blocks < 0 || store_blocks > 65535))) {
        PyErr_SetString(PyExc_ValueError, "pipeline_config: a size is negative, the pinned limit is "
                                          "below 16 KiB, or store_blocks is outside 0..65535");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&ring_lock);
    if (pinned != -2)
        ring.limit = (size_t)pinned;
    if (device != -2)
        ring.device_limit = device;
    if (threshold != -2)
        ring.threshold = (size_t)threshold;
    if (chunk != -2)
        ring.chunk_bytes = (size_t)chunk;
    if (interrupt != -2)
        ring.interrupt_after = (int)interrupt;
    if (progress_s != -2.0)
        ring.progress_s = progress_s;
    if (serial != -2)
        trace.serial = serial != 0;
    if (direct != -2)
        ring.direct = direct != 0;
    if (store_blocks != -2)
        ring.store_blocks = store_blocks;
    if (ntrace != -2) {
        gp_trace_rec *old = trace.rec;
        trace.rec = recs;
        trace.max = (int)ntrace;
        trace.n = 0;
        recs = old; /* freed below */
    }
    pthread_mutex_unlock(&ring_lock);
    Py_END_ALLOW_THREADS
    free(recs);
    return Py_BuildValue("{s:K,s:L,s:K,s:K,s:i,s:d,s:i,s:O,s:O,s:i}", "pinned_limit", (unsigned long long)ring.limit,
                         "device_limit", ring.device_limit, "threshold", (unsigned long long)ring.threshold,
                         "chunk_bytes", (unsigned long long)ring.chunk_bytes, "interrupt_after",
                         ring.interrupt_after, "progress_s", ring.progress_s, "trace", trace.max, "serial",
                         trace.serial ? Py_True : Py_False, "direct", ring.direct ? Py_True : Py_False,
                         "store_blocks", ring.store_blocks);
}

/* pipeline_trace() -> list of dicts {chunk, stage, stream, start_ms,
 * end_ms}: the last pipelined call's records (pipeline_config(trace=N)),
 * in the order they were taken, times from the earliest start. */
PyObject *gp_pipeline_trace_py(PyObject *module, PyObject *noargs)
{
    gp_trace_rec *recs = NULL;
    int n = 0, k, first;
    double t0 = 0.0;
    PyObject *list;
    (void)module;
    (void)noargs;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&ring_lock);
    if (trace.n > 0 && (recs = malloc((size_t)trace.n * sizeof(gp_trace_rec))) != NULL) {
        memcpy(recs, trace.rec, (size_t)trace.n * sizeof(gp_trace_rec));
        n = trace.n;
    }
    pthread_mutex_unlock(&ring_lock);
    Py_END_ALLOW_THREADS
    if (trace.n > 0 && recs == NULL)
        return PyErr_NoMemory();
    for (k = 0, first = 1; k < n; k++)
        if (recs[k].ok && (first || recs[k].start < t0)) {
            t0 = recs[k].start;
            first = 0;
        }
    list = PyList_New(0);
    for (k = 0; list != NULL && k < n; k++) {
        PyObject *d;
        if (!recs[k].ok)
            continue;
        d = Py_BuildValue("{s:L,s:s,s:s,s:d,s:d}", "chunk", (long long)recs[k].chunk, "stage",
                          gp_tr_stage[recs[k].stage], "stream", gp_tr_stream[recs[k].stage], "start_ms",
                          recs[k].start - t0, "end_ms", recs[k].end - t0);
        if (d == NULL || PyList_Append(list, d) < 0)
            Py_CLEAR(list);
        Py_XDECREF(d);
    }
    free(recs);
    return list;
}

/* pipeline_stats() -> dict: the ring's allocations and frees so far, the
 * pinned bytes held now, calls and chunks, the largest device allocation of
 * a pipelined call, interrupted calls, the last call's wall-clock seconds,
 * chunks copied from / into page-locked operands in place (direct_in,
 * direct_out; stored_out: of the latter, transpose tiles a kernel stored
 * into the mapped output). */
PyObject *gp_pipeline_stats_py(PyObject *module, PyObject *noargs)
{
    int s, held = 0;
    (void)module;
    (void)noargs;
    for (s = 0; s < GP_RING_SLOTS; s++)
        held += ring.buf[s] != NULL;
    return Py_BuildValue("{s:L,s:L,s:K,s:L,s:L,s:K,s:K,s:L,s:d,s:s,s:L,s:L,s:L}", "allocations", ring.allocations,
                         "frees", ring.frees, "pinned_bytes", (unsigned long long)(held * ring.slot_bytes), "calls",
                         ring.calls, "chunks", ring.chunks, "peak_device_bytes",
                         (unsigned long long)ring.peak_device, "last_device_bytes",
                         (unsigned long long)ring.last_device, "interrupted", ring.interrupted,
                         "last_wall_s", ring.last_wall_s, "backend", ring.rt != NULL ? ring.rt->name : "",
                         "direct_in", ring.direct_in, "direct_out", ring.direct_out, "stored_out", ring.stored_out);
}

/* free_memory(): the pinned ring given back, and the active backend's
 * pooled device memory (cudaMemPoolTrimTo) once its work is done. */
PyObject *gp_free_memory_py(PyObject *module, PyObject *noargs)
{
    const gp_runtime *rt = gp_rt(module);
    gp_state *st = gp_get_state(module);
    cudaError_t err = cudaSuccess;
    (void)noargs;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&ring_lock);
    ring_free();
    pthread_mutex_unlock(&ring_lock);
    if (st->device_ready || rt == &gp_runtime_emu)
        err = rt->pool_trim();
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) {
        (void)rt->get_last_error();
        return gp_raise_cuda(module, err, "free_memory");
    }
    Py_RETURN_NONE;
}

/* time_host_copy(nbytes, to_device, pinned, repeat) -> list of ms: one
 * host<->device copy of nbytes from (to) pinned or pageable host memory,
 * timed by the host clock around the copy and its wait (the bus roof the
 * host pipeline is measured against; after one untimed copy). */
PyObject *gp_time_host_copy_py(PyObject *module, PyObject *args)
{
    const gp_runtime *rt = gp_rt(module);
    unsigned long long nbytes;
    int to_device, pinned, repeat, k;
    void *host = NULL, *dev = NULL;
    cudaError_t err;
    double *ms;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "Kppi:time_host_copy", &nbytes, &to_device, &pinned, &repeat) ||
        gp_ensure_device(module) < 0)
        return NULL;
    if (repeat < 1 || nbytes == 0) {
        PyErr_SetString(PyExc_ValueError, "time_host_copy: nbytes and repeat must be positive");
        return NULL;
    }
    if ((ms = PyMem_Calloc((size_t)repeat, sizeof(double))) == NULL)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    err = pinned ? rt->host_alloc(&host, (size_t)nbytes)
                 : ((host = malloc((size_t)nbytes)) != NULL ? cudaSuccess : cudaErrorMemoryAllocation);
    if (err == cudaSuccess) {
        memset(host, 0x3c, (size_t)nbytes); /* pages touched: not timed */
        err = rt->malloc_async(&dev, (size_t)nbytes, cudaStreamPerThread);
    }
    for (k = -1; k < repeat && err == cudaSuccess; k++) {
        double t0 = now_s();
        err = to_device ? rt->memcpy_async(dev, host, (size_t)nbytes, cudaMemcpyHostToDevice, cudaStreamPerThread)
                        : rt->memcpy_async(host, dev, (size_t)nbytes, cudaMemcpyDeviceToHost, cudaStreamPerThread);
        if (err == cudaSuccess)
            err = rt->stream_sync(cudaStreamPerThread);
        if (k >= 0)
            ms[k] = 1e3 * (now_s() - t0);
    }
    if (dev != NULL)
        (void)rt->free_async(dev, cudaStreamPerThread);
    (void)rt->stream_sync(cudaStreamPerThread);
    if (host != NULL) {
        if (pinned)
            (void)rt->host_free(host);
        else
            free(host);
    }
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) {
        PyMem_Free(ms);
        (void)rt->get_last_error();
        return gp_raise_cuda(module, err, "time_host_copy");
    }
    list = PyList_New(repeat);
    for (k = 0; list != NULL && k < repeat; k++)
        PyList_SetItem(list, k, PyFloat_FromDouble(ms[k]));
    PyMem_Free(ms);
    return list;
}
