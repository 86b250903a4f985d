// runtime.cpp - the emulator backend: runs a kernel launch on the CPU.
//
// The blocks of a launch run one after another.  The threads of a block are
// fibers (a stack and saved registers each) on the calling host thread:
// the scheduler resumes each ready thread in thread order, and a thread
// runs until it reaches __syncthreads() or a warp collective, where it
// switches back.  A barrier opens when every thread of the block waits at
// it; a collective completes when every lane of its mask has arrived, and
// then every lane's result is computed from the values all lanes brought.
// Running each thread alone up to its next barrier is what makes a missing
// barrier visible: a thread that reads what a later thread writes before
// the barrier reads the old value, as it can on a GPU.
//
// A barrier that some threads can never reach (they returned, or wait at a
// collective) ends the launch with cudaErrorLaunchFailure and a message
// naming the kernel, the block and the threads; so do collectives whose
// lanes exited.  Launch configurations a GPU refuses are refused with the
// status a GPU gives.
//
// Between blocks the launch reports its progress to the glue
// (gp_emu_poll), which can stop it there: Ctrl-C ends an emulated launch
// after the block it is in, with cudaErrorLaunchFailure, and the next
// launch starts from a clean state.
//
// Also here: the gp_runtime table of the emulator (memory is host memory,
// streams and events are trivial), and explain mode (gp_emu_trace_*).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime.h>  // emu/include

#include "../csrc/runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GP_EMU_ASAN 1
#endif

// The context switch: a few lines of assembly on x86-64 (glibc's
// swapcontext makes a system call per switch), ucontext elsewhere or with
// GP_EMU_UCONTEXT defined.
#if defined(__x86_64__) && !defined(GP_EMU_UCONTEXT)
#define GP_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

// Where no glue defines it (the self-test library): launches run to the end.
extern "C" __attribute__((weak)) int gp_emu_poll(const gp_emu_progress *) { return 0; }

namespace gp_emu_rt {

uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;

namespace {

constexpr size_t STACK_BYTES = 256 * 1024;  // per thread, plus a guard page
constexpr size_t DEFAULT_DYNAMIC_SHARED = 48 * 1024;  // without an opt-in, as on every GPU since Volta
constexpr size_t OPT_IN_DYNAMIC_SHARED = 227 * 1024;  // the most a kernel may opt in to (sm_90)

enum State { READY, AT_BARRIER, AT_WARP, DONE };

struct Fiber {
#ifdef GP_EMU_ASM_SWITCH
    void *sp = nullptr;
#else
    ucontext_t ctx;
#endif
    char *stack = nullptr;  // lowest usable byte
    unsigned linear = 0;
    uint3 tid{};
    State state = DONE;
    // the collective this thread waits in
    Collective kind = SYNCWARP;
    unsigned mask = 0;
    unsigned long long value = 0, result = 0;
    int arg = 0, width = 32;
#ifdef GP_EMU_ASAN
    void *fake_stack = nullptr;
#endif
};

std::mutex launch_mutex;  // one emulated launch at a time in the process
std::vector<Fiber> fibers;  // stacks kept from launch to launch
std::vector<unsigned char> shared_bytes;

struct Launch {
    const char *name;
    void (*body)(void *);
    void *ctx;
    unsigned nthreads;
    Fiber *current = nullptr;
    int barriers = 0;  // barriers opened in this block
#ifdef GP_EMU_ASM_SWITCH
    void *sched_sp = nullptr;
#else
    ucontext_t sched_ctx;
#endif
#ifdef GP_EMU_ASAN
    void *sched_fake_stack = nullptr;
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
#endif
};
Launch *L = nullptr;

thread_local std::string last_detail;  // the glue reads it after a failed call

// ------------------------------------------------------------ context switch
#ifdef GP_EMU_ASM_SWITCH
// gp_emu_swap(save, load): push the callee-saved registers and the FP
// control words, store rsp in *save, load rsp from `load`, pop, return there.
extern "C" void gp_emu_swap(void **save, void *load);
extern "C" void gp_emu_fiber_entry(void);
asm(R"(
    .text
    .p2align 4
    .type gp_emu_swap, @function
gp_emu_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size gp_emu_swap, .-gp_emu_swap

    .p2align 4
    .type gp_emu_trampoline, @function
gp_emu_trampoline:
    andq $-16, %rsp
    call gp_emu_fiber_entry
    ud2
    .size gp_emu_trampoline, .-gp_emu_trampoline
)");
extern "C" void gp_emu_trampoline(void);
#endif

void fiber_main();

#ifdef GP_EMU_ASM_SWITCH
extern "C" __attribute__((used, visibility("hidden"))) void gp_emu_fiber_entry(void) { fiber_main(); }
#else
void fiber_entry_uc() { fiber_main(); }
#endif

void to_fiber(Fiber &f) {
#ifdef GP_EMU_ASAN
    __sanitizer_start_switch_fiber(&L->sched_fake_stack, f.stack, STACK_BYTES);
#endif
#ifdef GP_EMU_ASM_SWITCH
    gp_emu_swap(&L->sched_sp, f.sp);
#else
    swapcontext(&L->sched_ctx, &f.ctx);
#endif
#ifdef GP_EMU_ASAN
    __sanitizer_finish_switch_fiber(L->sched_fake_stack, nullptr, nullptr);
#endif
}

void to_scheduler(Fiber &f, bool exiting) {
#ifdef GP_EMU_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, L->sched_bottom, L->sched_size);
#else
    (void)exiting;
#endif
#ifdef GP_EMU_ASM_SWITCH
    gp_emu_swap(&f.sp, L->sched_sp);
#else
    swapcontext(&f.ctx, &L->sched_ctx);
#endif
#ifdef GP_EMU_ASAN
    __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

void fiber_main() {
#ifdef GP_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &L->sched_bottom, &L->sched_size);
#endif
    Fiber &f = *L->current;
    L->body(L->ctx);
    f.state = DONE;
    to_scheduler(f, true);
    std::abort();  // a finished thread is never resumed
}

char *new_stack() {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void *p = mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    mprotect(p, page, PROT_NONE);  // overflowing the stack faults instead of corrupting
    return static_cast<char *>(p) + page;
}

bool prepare(Fiber &f) {
    if (f.stack == nullptr && (f.stack = new_stack()) == nullptr) return false;
#ifdef GP_EMU_ASAN
    __asan_unpoison_memory_region(f.stack, STACK_BYTES);  // frames an abandoned thread left
    f.fake_stack = nullptr;
#endif
#ifdef GP_EMU_ASM_SWITCH
    auto *top = reinterpret_cast<uint64_t *>(f.stack + STACK_BYTES);
    uint64_t *sp = top - 8;
    unsigned mxcsr = 0;
    unsigned short fpucw = 0;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpucw));
    sp[0] = uint64_t(mxcsr) | (uint64_t(fpucw) << 32);
    for (int i = 1; i < 7; ++i) sp[i] = 0;  // r15 r14 r13 r12 rbx rbp
    sp[7] = reinterpret_cast<uint64_t>(&gp_emu_trampoline);
    f.sp = sp;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = STACK_BYTES;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_entry_uc, 0);
#endif
    f.state = READY;
    return true;
}

std::string thread_list(State s) {
    std::string out;
    int shown = 0, count = 0;
    for (unsigned i = 0; i < L->nthreads; ++i) {
        if (fibers[i].state != s) continue;
        ++count;
        if (shown < 8) {
            out += (shown ? ", " : "") + std::to_string(i);
            ++shown;
        }
    }
    if (count > shown) out += ", ... (" + std::to_string(count) + " threads)";
    return out;
}

// ------------------------------------------------------------- explain mode
struct TraceRegion {
    std::string name;
    int itemsize;
    unsigned char *live;  // the memory watched
    size_t bytes;
    std::vector<unsigned char> before;  // at the start of the running thread's slice
    std::vector<int> writer;            // since the last step
};
struct StoredStep {
    std::string kernel;
    gp_trace_step step;
    std::vector<std::string> names;
    std::vector<int> itemsizes;
    std::vector<std::vector<unsigned char>> data;
    std::vector<std::vector<int>> writers;
    std::vector<gp_trace_region> regions;
};
struct Trace {
    bool on = false;
    size_t max_bytes = 0, used = 0;
    int launches = 0;
    std::string error;
    std::vector<StoredStep> steps;
    std::vector<TraceRegion> regions;  // of the running block
    std::vector<std::pair<int, std::pair<void *, int>>> args;  // pointer args of the pending launch
} trace;

std::mutex alloc_mutex;
std::map<uintptr_t, size_t> allocations;  // emulated device memory: start -> bytes

size_t bytes_to_end_of_allocation(const void *p) {
    std::lock_guard<std::mutex> lock(alloc_mutex);
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return 0;
    --it;
    return a < it->first + it->second ? it->first + it->second - a : 0;
}

void trace_block_begin() {
    trace.regions.clear();
    if (!shared_bytes.empty())
        trace.regions.push_back({"shared", 1, shared_bytes.data(), shared_bytes.size(), {}, {}});
    for (auto &a : trace.args) {
        // from the pointer to the end of its allocation, at most 8 KiB: a
        // traced input has at most 64 elements, a block tile 1024 of 8 bytes
        size_t bytes = bytes_to_end_of_allocation(a.second.first);
        if (bytes > 8192) bytes = 8192;
        if (bytes == 0) continue;
        trace.regions.push_back({"arg" + std::to_string(a.first), a.second.second,
                                 static_cast<unsigned char *>(a.second.first), bytes, {}, {}});
    }
    for (auto &r : trace.regions) r.writer.assign(r.bytes, -1);
}

void trace_slice_begin() {
    for (auto &r : trace.regions) r.before.assign(r.live, r.live + r.bytes);
}

void trace_slice_end(unsigned thread) {
    for (auto &r : trace.regions)
        for (size_t i = 0; i < r.bytes; ++i)
            if (r.live[i] != r.before[i]) r.writer[i] = int(thread);
}

void trace_step(int barrier) {
    size_t bytes = 0;
    for (auto &r : trace.regions) bytes += r.bytes * (1 + sizeof(int));
    if (trace.used + bytes > trace.max_bytes) {
        if (trace.error.empty()) trace.error = "the trace grew past its memory limit; use a smaller input";
        return;
    }
    trace.used += bytes;
    trace.steps.emplace_back();
    StoredStep &s = trace.steps.back();
    s.kernel = L->name;
    s.step.launch = trace.launches - 1;
    s.step.block[0] = block_idx.x, s.step.block[1] = block_idx.y, s.step.block[2] = block_idx.z;
    s.step.block_dim[0] = block_dim.x, s.step.block_dim[1] = block_dim.y, s.step.block_dim[2] = block_dim.z;
    s.step.barrier = barrier;
    for (auto &r : trace.regions) {
        s.names.push_back(r.name);
        s.itemsizes.push_back(r.itemsize);
        s.data.emplace_back(r.live, r.live + r.bytes);
        s.writers.push_back(r.writer);
        r.writer.assign(r.bytes, -1);
    }
}

// --------------------------------------------------------------- scheduler
cudaError_t fail(const std::string &why) {
    last_detail = std::string("emulator: kernel ") + L->name + ", block (" + std::to_string(block_idx.x) +
                  ", " + std::to_string(block_idx.y) + ", " + std::to_string(block_idx.z) + "): " + why;
    return cudaErrorLaunchFailure;
}

cudaError_t run_block() {
    for (unsigned i = 0; i < L->nthreads; ++i) {
        Fiber &f = fibers[i];
        f.linear = i;
        f.tid = uint3{i % block_dim.x, (i / block_dim.x) % block_dim.y, i / (block_dim.x * block_dim.y)};
        if (!prepare(f)) return cudaErrorMemoryAllocation;
    }
    L->barriers = 0;
    if (trace.on) trace_block_begin();
    for (;;) {
        bool ran = false;
        for (unsigned i = 0; i < L->nthreads; ++i) {
            Fiber &f = fibers[i];
            if (f.state != READY) continue;
            ran = true;
            L->current = &f;
            thread_idx = f.tid;
            if (trace.on) trace_slice_begin();
            to_fiber(f);
            if (trace.on) trace_slice_end(i);
        }
        if (ran) continue;  // a completed collective may have readied earlier lanes
        unsigned done = 0, at_barrier = 0, at_warp = 0;
        for (unsigned i = 0; i < L->nthreads; ++i) {
            done += fibers[i].state == DONE;
            at_barrier += fibers[i].state == AT_BARRIER;
            at_warp += fibers[i].state == AT_WARP;
        }
        if (done == L->nthreads) break;
        if (at_barrier == L->nthreads) {  // everyone arrived: open it
            if (trace.on) trace_step(L->barriers);
            ++L->barriers;
            for (unsigned i = 0; i < L->nthreads; ++i) fibers[i].state = READY;
            continue;
        }
        std::string why;
        if (at_barrier > 0)
            why = "__syncthreads() number " + std::to_string(L->barriers + 1) + " is not reached by every thread: threads " +
                  thread_list(AT_BARRIER) + " wait at it, " +
                  (done ? "threads " + thread_list(DONE) + " have returned" : std::string()) +
                  (done && at_warp ? ", " : "") +
                  (at_warp ? "threads " + thread_list(AT_WARP) + " wait in a warp collective" : std::string()) +
                  " (a barrier must be reached by all threads of the block)";
        else
            why = "a warp collective waits for lanes that have returned: threads " + thread_list(AT_WARP) +
                  " wait, threads " + thread_list(DONE) + " have returned (every lane of the mask must take part)";
        return fail(why);
    }
    if (trace.on) trace_step(-1);
    return cudaSuccess;
}

}  // namespace

void syncthreads() {
    Fiber &f = *L->current;
    f.state = AT_BARRIER;
    to_scheduler(f, false);
}

void yield() {
    Fiber &f = *L->current;
    f.state = READY;
    to_scheduler(f, false);
}

unsigned long long warp_collective(Collective kind, unsigned mask, unsigned long long value, int arg, int width) {
    Fiber &f = *L->current;
    const unsigned lane = f.linear % 32, first = f.linear - lane;
    const unsigned in_warp = L->nthreads - first >= 32 ? 32 : L->nthreads - first;
    const unsigned exists = in_warp == 32 ? 0xffffffffu : (1u << in_warp) - 1;
    const unsigned need = (mask & exists) | (1u << lane);
    f.kind = kind, f.mask = need, f.value = value, f.arg = arg;
    f.width = width >= 1 && width <= 32 && (width & (width - 1)) == 0 ? width : 32;
    f.state = AT_WARP;
    for (unsigned l = 0; l < 32; ++l)
        if ((need >> l & 1) && fibers[first + l].state != AT_WARP) {
            to_scheduler(f, false);  // the last lane to arrive completes it
            return f.result;
        }
    // Every lane is here: each lane's result from the values all brought.
    unsigned ballot = 0;
    for (unsigned l = 0; l < 32; ++l)
        if ((need >> l & 1) && fibers[first + l].value != 0) ballot |= 1u << l;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(need >> l & 1)) continue;
        Fiber &g = fibers[first + l];
        const unsigned w = unsigned(g.width), seg = l & ~(w - 1), sub = l & (w - 1);
        unsigned src = l;
        switch (g.kind) {
        case SHFL_IDX: src = seg + (unsigned(g.arg) & (w - 1)); break;
        case SHFL_UP: src = sub >= unsigned(g.arg) ? l - unsigned(g.arg) : l; break;
        case SHFL_DOWN: src = sub + unsigned(g.arg) < w ? l + unsigned(g.arg) : l; break;
        case SHFL_XOR: src = (sub ^ unsigned(g.arg)) < w ? seg + (sub ^ unsigned(g.arg)) : l; break;
        default: break;
        }
        if (src >= in_warp) src = l;
        switch (g.kind) {
        case SYNCWARP: g.result = 0; break;
        case BALLOT: g.result = ballot; break;
        case ANY: g.result = ballot != 0; break;
        case ALL: g.result = (ballot & need) == need; break;
        default: g.result = fibers[first + src].value; break;
        }
        g.state = READY;
    }
    return f.result;
}

void *dynamic_shared() { return shared_bytes.empty() ? nullptr : shared_bytes.data(); }

void note_pointer_arg(int index, void *p, int itemsize) {
    if (trace.on && p != nullptr) trace.args.push_back({index, {p, itemsize}});
}

int multiprocessors() { return 2; }

namespace {
constexpr std::chrono::milliseconds POLL_EVERY{50};  // Ctrl-C is felt within this and one block

cudaError_t interrupted(const gp_emu_progress &p) {
    last_detail = std::string("emulator: kernel ") + p.kernel + " stopped after " + std::to_string(p.blocks_done) +
                  " of its " + std::to_string(p.blocks) + " blocks (interrupted)";
    return cudaErrorLaunchFailure;
}
}  // namespace

// Each kernel's opt-in (cudaFuncSetAttribute): the dynamic shared memory a
// launch of it may take, where it is over the default.
static std::mutex opt_in_mutex;
static std::map<const void *, size_t> opted_in;

cudaError_t set_max_dynamic_shared(const void *kernel, int bytes) {
    if (bytes < 0 || size_t(bytes) > OPT_IN_DYNAMIC_SHARED) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(opt_in_mutex);
    opted_in[kernel] = size_t(bytes);
    return cudaSuccess;
}

cudaError_t launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t,
                   void (*body)(void *), void *ctx) {
    std::lock_guard<std::mutex> lock(launch_mutex);
    auto args = std::move(trace.args);
    trace.args.clear();
    last_detail.clear();
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 || grid.x == 0 ||
        grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
        last_detail = std::string("emulator: kernel ") + name + ": launch configuration (" +
                      std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " + std::to_string(grid.z) +
                      ") x (" + std::to_string(block.x) + ", " + std::to_string(block.y) + ", " +
                      std::to_string(block.z) + ") is over the limits of a GPU (1024 threads per block)";
        return cudaErrorInvalidConfiguration;
    }
    size_t most = DEFAULT_DYNAMIC_SHARED;
    {
        std::lock_guard<std::mutex> opt_lock(opt_in_mutex);
        const auto it = opted_in.find(kernel);
        if (it != opted_in.end()) most = std::max(most, it->second);
    }
    if (smem > most) {
        last_detail = std::string("emulator: kernel ") + name + ": " + std::to_string(smem) +
                      " bytes of dynamic shared memory, over the " + std::to_string(most) +
                      (most == DEFAULT_DYNAMIC_SHARED ? " bytes a launch gets without an opt-in (cudaFuncSetAttribute)"
                                                      : " bytes the kernel opted in to");
        return cudaErrorInvalidValue;
    }
    if (fibers.size() < threads) fibers.resize(threads);
    Launch launch_state{};
    launch_state.name = name;
    launch_state.body = body;
    launch_state.ctx = ctx;
    launch_state.nthreads = unsigned(threads);
    L = &launch_state;
    block_dim = block;
    grid_dim = grid;
    if (trace.on) {
        trace.args = std::move(args);
        ++trace.launches;
    }
    cudaError_t err = cudaSuccess;
    // The glue hears of the launch, then about every POLL_EVERY between
    // blocks: it may stop the launch there (Ctrl-C) and say it is long.
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto next_poll = start + POLL_EVERY;
    gp_emu_progress progress{name, 1ull * grid.x * grid.y * grid.z, 0, unsigned(threads), 0.0};
    if (gp_emu_poll(&progress) != 0) err = interrupted(progress);
    for (unsigned z = 0; z < grid.z && err == cudaSuccess; ++z)
        for (unsigned y = 0; y < grid.y && err == cudaSuccess; ++y)
            for (unsigned x = 0; x < grid.x && err == cudaSuccess; ++x) {
                if (progress.blocks_done > 0 && clock::now() >= next_poll) {
                    progress.elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
                    if (gp_emu_poll(&progress) != 0) {
                        err = interrupted(progress);
                        break;
                    }
                    next_poll = clock::now() + POLL_EVERY;
                }
                block_idx = uint3{x, y, z};
                // Fresh shared memory holds garbage on a GPU; here a pattern
                // (NaN for floats, large negative integers) a missing store shows.
                shared_bytes.assign(smem, 0xff);
                err = run_block();
                ++progress.blocks_done;
            }
    shared_bytes.clear();
    trace.args.clear();
    L = nullptr;
    return err;
}

cudaError_t memset_async(void *p, int value, size_t bytes, cudaStream_t) {
    if (bytes) std::memset(p, value, bytes);
    return cudaSuccess;
}

cudaError_t memcpy_async(void *dst, const void *src, size_t bytes, int, cudaStream_t) {
    if (bytes) std::memmove(dst, src, bytes);
    return cudaSuccess;
}

}  // namespace gp_emu_rt

// ------------------------------------------------- the glue's runtime table
namespace {
using namespace gp_emu_rt;

cudaError_t emu_device_count(int *count) { *count = 1; return cudaSuccess; }
cudaError_t emu_setup(void) { return cudaSuccess; }
cudaError_t emu_get_device(int *dev) { *dev = 0; return cudaSuccess; }

cudaError_t emu_device_props(gp_device_props *p, int) {
    std::memset(p, 0, sizeof(*p));
    std::snprintf(p->name, sizeof(p->name), "gpuprims emulator (CPU, not a GPU)");
    p->major = 0, p->minor = 0;
    p->multiprocessors = multiprocessors();
    p->warp_size = 32;
    p->max_threads_per_block = 1024;
    p->max_threads_per_multiprocessor = 1024;
    p->max_blocks_per_multiprocessor = 1;
    p->shared_memory_per_multiprocessor = 48 * 1024;
    return cudaSuccess;
}

cudaError_t emu_kernel_occupancy(const void *, int, size_t, gp_kernel_occupancy *) {
    return cudaErrorNotSupported;  // the occupancy API describes a GPU
}

cudaError_t emu_malloc(void **p, size_t bytes) {
    // 256-byte aligned like cudaMalloc, and exactly `bytes` long, so that
    // AddressSanitizer sees a write one element past the end.
    if (posix_memalign(p, 256, bytes ? bytes : 1) != 0) return cudaErrorMemoryAllocation;
    std::lock_guard<std::mutex> lock(alloc_mutex);
    allocations[reinterpret_cast<uintptr_t>(*p)] = bytes;
    return cudaSuccess;
}
// The emulated pool's statistics (pool_stats): what malloc_async handed
// out and free_async took back; nothing is cached, so reserved is used.
gp_pool_stats pool_counts;
cudaError_t emu_malloc_async(void **p, size_t bytes, cudaStream_t) {
    const cudaError_t err = emu_malloc(p, bytes);
    if (err == cudaSuccess) {
        std::lock_guard<std::mutex> lock(alloc_mutex);
        pool_counts.allocations++;
        pool_counts.used += bytes;
        if (pool_counts.used > pool_counts.used_high) pool_counts.used_high = pool_counts.used;
    }
    return err;
}
cudaError_t emu_free_async(void *p, cudaStream_t) {
    if (p != nullptr) {
        std::lock_guard<std::mutex> lock(alloc_mutex);
        auto it = allocations.find(reinterpret_cast<uintptr_t>(p));
        if (it != allocations.end()) pool_counts.used -= it->second;
        allocations.erase(reinterpret_cast<uintptr_t>(p));
    }
    std::free(p);
    return cudaSuccess;
}
cudaError_t emu_memcpy_async(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    return memcpy_async(dst, src, bytes, int(kind), s);
}
cudaError_t emu_stream_sync(cudaStream_t) { return cudaSuccess; }
cudaError_t emu_stream_wait(cudaStream_t, cudaStream_t) { return cudaSuccess; }

// Events hold host times: the emulator's timings are CPU times of the
// emulation, never GPU times (the Python layer labels them so).
struct EmuEvent {
    std::chrono::steady_clock::time_point t;
};
cudaError_t emu_event_create(cudaEvent_t *e) {
    *e = reinterpret_cast<cudaEvent_t>(new EmuEvent());
    return cudaSuccess;
}
cudaError_t emu_event_record(cudaEvent_t e, cudaStream_t) {
    reinterpret_cast<EmuEvent *>(e)->t = std::chrono::steady_clock::now();
    return cudaSuccess;
}
cudaError_t emu_event_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = std::chrono::duration<float, std::milli>(reinterpret_cast<EmuEvent *>(b)->t -
                                                   reinterpret_cast<EmuEvent *>(a)->t).count();
    return cudaSuccess;
}
cudaError_t emu_event_destroy(cudaEvent_t e) {
    delete reinterpret_cast<EmuEvent *>(e);
    return cudaSuccess;
}
cudaError_t emu_last_error(void) { return cudaSuccess; }

// The host pipeline's runtime: pinned memory is plain host memory, a
// stream is a handle that orders nothing (every operation of the emulator
// has finished when it returns), so waiting on an event has nothing to do.
// Its blocks are kept in a table, so that host_pinned answers as the CUDA
// runtime would for cudaHostAlloc'd memory: the pipeline's direct copies
// (no staging) run on the emulator too.
std::mutex pinned_mutex;
std::map<uintptr_t, size_t> pinned_blocks;  // start -> bytes
cudaError_t emu_host_alloc(void **p, size_t bytes) {
    *p = std::malloc(bytes ? bytes : 1);
    if (*p == nullptr) return cudaErrorMemoryAllocation;
    std::lock_guard<std::mutex> lock(pinned_mutex);
    pinned_blocks[reinterpret_cast<uintptr_t>(*p)] = bytes ? bytes : 1;
    return cudaSuccess;
}
cudaError_t emu_host_free(void *p) {
    {
        std::lock_guard<std::mutex> lock(pinned_mutex);
        pinned_blocks.erase(reinterpret_cast<uintptr_t>(p));
    }
    std::free(p);
    return cudaSuccess;
}
int emu_host_pinned(const void *p, size_t bytes, const void **mapped) {  // mapped: at its own address
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (mapped != nullptr) *mapped = nullptr;
    if (p == nullptr || bytes == 0) return 0;
    std::lock_guard<std::mutex> lock(pinned_mutex);
    auto it = pinned_blocks.upper_bound(a);
    if (it == pinned_blocks.begin()) return 0;
    --it;
    if (a - it->first + bytes > it->second) return 0;
    if (mapped != nullptr) *mapped = p;
    return 1;
}
cudaError_t emu_memcpy2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                               cudaMemcpyKind, cudaStream_t) {
    if (width > dpitch || width > spitch) return cudaErrorInvalidValue;
    for (size_t r = 0; r < height; ++r)
        std::memmove(static_cast<char *>(dst) + r * dpitch, static_cast<const char *>(src) + r * spitch, width);
    return cudaSuccess;
}
cudaError_t emu_stream_create(cudaStream_t *s) {
    *s = reinterpret_cast<cudaStream_t>(new char(0));
    return cudaSuccess;
}
cudaError_t emu_stream_destroy(cudaStream_t s) {
    delete reinterpret_cast<char *>(s);
    return cudaSuccess;
}
cudaError_t emu_stream_wait_event(cudaStream_t, cudaEvent_t) { return cudaSuccess; }
cudaError_t emu_event_sync(cudaEvent_t) { return cudaSuccess; }
cudaError_t emu_pool_trim(void) { return cudaSuccess; }
cudaError_t emu_pool_stats(gp_pool_stats *out, int reset) {
    std::lock_guard<std::mutex> lock(alloc_mutex);
    if (reset) pool_counts.used_high = pool_counts.used;
    *out = pool_counts;
    out->reserved = pool_counts.used, out->reserved_high = pool_counts.used_high;
    return cudaSuccess;
}

const char *emu_error_name(cudaError_t err) {
    switch (err) {
#define GP_NAME(e) case e: return #e;
        GP_NAME(cudaSuccess) GP_NAME(cudaErrorInvalidValue) GP_NAME(cudaErrorMemoryAllocation)
        GP_NAME(cudaErrorInvalidConfiguration) GP_NAME(cudaErrorInvalidDevicePointer)
        GP_NAME(cudaErrorInsufficientDriver) GP_NAME(cudaErrorNoDevice) GP_NAME(cudaErrorSharedObjectInitFailed)
        GP_NAME(cudaErrorInvalidResourceHandle) GP_NAME(cudaErrorNotReady) GP_NAME(cudaErrorIllegalAddress)
        GP_NAME(cudaErrorLaunchOutOfResources) GP_NAME(cudaErrorIllegalInstruction)
        GP_NAME(cudaErrorMisalignedAddress) GP_NAME(cudaErrorLaunchFailure) GP_NAME(cudaErrorNotSupported)
        GP_NAME(cudaErrorUnknown)
#undef GP_NAME
    default: return "cudaErrorUnknown";
    }
}
const char *emu_error_string(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
    }
}
const char *emu_detail(void) { return last_detail.empty() ? nullptr : last_detail.c_str(); }
}  // namespace

extern "C" {
cudaError_t gp_cast_emu(const void *, gp_dtype, void *, gp_dtype, int64_t, cudaStream_t);
cudaError_t gp_copy2d_emu(void *, size_t, const void *, size_t, size_t, size_t, unsigned, cudaStream_t);
int gp_combo_supported_emu(gp_op, gp_dtype, gp_dtype);
int gp_variant_reads_emu(const gp_variant *, gp_op, gp_dtype, gp_dtype);

const gp_runtime gp_runtime_emu = {
    "emulator",
    emu_device_count, emu_setup, emu_get_device, emu_device_props,
    emu_malloc_async, emu_free_async, emu_malloc, emu_malloc,
    emu_memcpy_async, memset_async,
    emu_stream_sync, emu_stream_wait,
    emu_event_create, emu_event_record, emu_event_elapsed, emu_event_destroy,
    emu_last_error, emu_error_name, emu_error_string, emu_detail, emu_kernel_occupancy,
    gp_cast_emu, gp_combo_supported_emu, gp_variant_reads_emu,
    emu_host_alloc, emu_host_free, emu_stream_create, emu_stream_destroy, emu_stream_wait_event,
    emu_event_sync, emu_pool_trim, emu_pool_stats, emu_host_pinned, emu_memcpy2d_async, gp_copy2d_emu,
};

void gp_emu_trace_start(size_t max_bytes) {
    std::lock_guard<std::mutex> lock(launch_mutex);
    trace = Trace();
    trace.on = true;
    trace.max_bytes = max_bytes;
}

int gp_emu_trace_stop(void) {
    std::lock_guard<std::mutex> lock(launch_mutex);
    trace.on = false;
    for (auto &s : trace.steps) {  // point the C view at the stored vectors
        s.regions.clear();
        for (size_t i = 0; i < s.data.size(); ++i) {
            gp_trace_region r;
            r.name = s.names[i].c_str();
            r.itemsize = s.itemsizes[i];
            r.bytes = s.data[i].size();
            r.data = s.data[i].data();
            r.writer = s.writers[i].data();
            s.regions.push_back(r);
        }
        s.step.kernel = s.kernel.c_str();
        s.step.nregions = int(s.regions.size());
        s.step.regions = s.regions.data();
    }
    return int(trace.steps.size());
}

const gp_trace_step *gp_emu_trace_step(int i) {
    return i >= 0 && size_t(i) < trace.steps.size() ? &trace.steps[size_t(i)].step : nullptr;
}

void gp_emu_trace_clear(void) {
    std::lock_guard<std::mutex> lock(launch_mutex);
    trace = Trace();
}

const char *gp_emu_trace_error(void) { return trace.error.empty() ? nullptr : trace.error.c_str(); }
}
