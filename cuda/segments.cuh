// segments.cuh - what the reduce and scan families share for listed
// segments (k + 1 offsets, as CUB's DeviceSegmented* take them): the
// deferral of long segments and the packs of short ones.
//
//   Deferred    a kernel for short segments cuts out every segment longer
//               than long_len and lists it; a second kernel reads the
//               listed segments in chunks of CHUNK elements, a block each
//               (reduce_deferred in cuda/reduce/segmented.cuh, the chunk
//               kernels of cuda/scan/packs.cuh)
//   Pack        a warp's pack of K neighbouring segments, and the runs of
//               them between deferred ones
//   PackTrips   a warp streaming one run of memory in trips of 16-byte
//               vectors through a shared stage, each segment's start marked
//               in the word of the lane that holds it
//
// The reduction's reduce_packs and the scan's scan_packs are the same
// stream with a different walk of each trip.
#pragma once

#include "async_copy.cuh"

GP_NAMESPACE_BEGIN
namespace segs {

// ------------------------------------------------- long segments, apart
// The length bins of the adaptive steps: a segment much longer than the
// mean would hold its warp (or block) for its whole length while the others
// idle, so the kernel that takes the short ones defers every segment longer
// than long_len to a list instead, and a second kernel reads each listed
// segment in chunks of CHUNK elements, a block each.  The list's order
// depends on the race of atomicAdd, which decides only which block reads
// which chunk: a segment's result depends on its length alone, so the bits
// are the same run to run.  ctl == nullptr: nothing is deferred.
struct Entry {
    int64_t p, first, chunks;  // the segment, its first chunk, its chunk count
};

struct Deferred {
    static constexpr int64_t CHUNK = 8192;  // elements a block of the second kernel reads
    int64_t long_len;
    // [0]: entries, [1]: chunks, [2]: the scan's listed wide packs (zeroed
    // before the call)
    unsigned long long *ctl;
    Entry *list;
    unsigned *ticket;  // per entry: chunks finished
    int64_t *owner;    // per chunk: its entry
    void *partial;     // per chunk: its value (Acc)

    __device__ bool defers(int64_t len) const { return ctl != nullptr && len > long_len; }
    // The segment p of len elements on the list (one thread per segment).
    __device__ void push(int64_t p, int64_t len) const {
        const unsigned long long e = atomicAdd(ctl, 1ull);
        const int64_t c = ceil_div<int64_t>(len, CHUNK);
        const int64_t first = int64_t(atomicAdd(ctl + 1, (unsigned long long)c));
        list[e] = {p, first, c};
        ticket[e] = 0;
        for (int64_t j = 0; j < c; ++j) owner[first + j] = int64_t(e);
    }
};

// The deferral length for segments of a mean length `mean`: LONG_FACTOR x
// the mean, and at least `at_least` (what the mapping reads in a few trips).
constexpr int64_t LONG_FACTOR = 16;

inline int64_t long_length(int64_t mean, int64_t at_least) {
    return LONG_FACTOR * mean > at_least ? LONG_FACTOR * mean : at_least;
}

// The deferral of segments longer than long_len among the n elements of
// the input.  Its scratch: at most n / (long_len + 1) entries and n / CHUNK
// + entries chunks.  None where no segment can be that long: fewer
// elements in all, or the caller's bound on every segment (gp_batch's
// longest, 0 where unknown) within it - then neither the counters' zeroing
// nor the kernels after are enqueued.
struct DeferShape {
    int64_t long_len, entries, chunks;
};

inline DeferShape defer_shape(const int64_t *offsets, int64_t n, int64_t long_len, int64_t longest) {
    if (offsets == nullptr || n <= long_len || (longest > 0 && longest <= long_len)) return {0, 0, 0};
    const int64_t entries = n / (long_len + 1) + 1;
    return {long_len, entries, n / Deferred::CHUNK + entries};
}

template <class Op>
size_t defer_bytes(const DeferShape &s) {
    if (s.entries == 0) return 0;
    return align_up(3 * sizeof(unsigned long long)) + align_up(size_t(s.entries) * sizeof(Entry)) +
           align_up(size_t(s.entries) * sizeof(unsigned)) +
           align_up(size_t(s.chunks) * sizeof(int64_t)) +
           align_up(size_t(s.chunks) * sizeof(typename Op::type));
}

// The Deferred in `scratch` (its ctl zeroed on the stream), or none.
inline cudaError_t defer_in(void *scratch, const DeferShape &s, cudaStream_t stream, Deferred &D) {
    D = Deferred{};
    if (s.entries == 0) return cudaSuccess;
    char *p = static_cast<char *>(scratch);
    D.long_len = s.long_len;
    D.ctl = reinterpret_cast<unsigned long long *>(p);
    p += align_up(3 * sizeof(unsigned long long));
    D.list = reinterpret_cast<Entry *>(p);
    p += align_up(size_t(s.entries) * sizeof(Entry));
    D.ticket = reinterpret_cast<unsigned *>(p);
    p += align_up(size_t(s.entries) * sizeof(unsigned));
    D.owner = reinterpret_cast<int64_t *>(p);
    p += align_up(size_t(s.chunks) * sizeof(int64_t));
    D.partial = p;
    return cudaMemsetAsync(D.ctl, 0, 3 * sizeof(unsigned long long), stream);
}

// ------------------------------------------------- packs of segments
// A warp per pack of K neighbouring segments (K = 1 ... 32, from the mean
// length: at least PackShape::ELEMS elements a pack on average), read as
// one flat run of memory: the pack's segments lie back to back, so a warp
// that streams the run in 16-byte vectors keeps its loads in flight
// whatever the segments' lengths, where a group of lanes per segment idles
// on the short ones and makes a trip per segment.  A pack starts and ends
// with a segment, so nothing crosses packs.  Segments longer than the
// deferral length are cut out: the pack reads the runs between them.
// Needs a 16-byte aligned input and an element size dividing 16.
template <int BLOCK_, int VPT_, int ELEMS_, int MIN_BLOCKS_, int STAGES_ = 2>
struct PackShape {
    static constexpr int BLOCK = BLOCK_;            // threads a block
    static constexpr int VPT = VPT_;                // 16-byte vectors a lane a trip (<= 32 items)
    static constexpr int ELEMS = ELEMS_;            // elements a pack, at least (pack_segments)
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;  // resident blocks an SM asked of the compiler
    static constexpr int STAGES = STAGES_;          // trips in shared memory: STAGES - 1 ahead
};

// The shape of both families' packs: 128 threads, 4 vectors a lane a trip
// (512 floats a warp), packs of about 2048 elements, 8 blocks an SM, two
// stages.  On an H200, float32, % of the copy roof:
//   the reduction (bench/results/tune-packs-nvidia-h200-2026-11-23.md,
//   sums of 2^26, input + output + offsets): segments of mean 64, 256,
//   1024, 2048, 4096 at 70.3, 70.6, 73.5, 73.9, 71.8% (run 7; run 6: 70.6,
//   71.3, 73.9, 74.0, 72.9; packs of 4096 in run 6: 70.6, 70.6, 72.6, 73.0,
//   72.9).  Within 1.5 points in run 6: 256 threads at 4 blocks an SM, 3
//   stages but at mean 64 (-2.7); slower: packs of 8192 (up to 4 points),
//   128 x 8 at 6 an SM (8.5 at mean 64), 256 threads at 5 an SM (5-8), 2
//   vectors a lane (9-12), 12 blocks an SM of 42 registers, spilling
//   (14-16).  Run 2: 4 stages and a resident grid that loads the next
//   pack's offsets early, 2-11 slower.  The kernel is bound by its
//   instructions per element and their latency, not by the bytes in
//   flight: runs 1-6 took it from 54 to 71% at mean 64 by cutting
//   instructions (the lane's vectors read once, one walk, no masks in the
//   inner trips, a plain warp reduction for trips where no segment starts);
//   the scan (bench/results/tune-segscan-packs-nvidia-h200-2026-11-23.md
//   run 2, inclusive cumsum of 2^26, input + output): segments of mean 8,
//   16, 64, 256, 1024, 4096, 8192 at 48.3, 67.8, 76.2, 76.8, 73.1, 72.6,
//   67.4%; 3 stages at 6 blocks an SM: 43.7, 61.6, 76.3, 77.7, 74.3, 74.0,
//   68.4%; 2 vectors a lane: 49.9, 69.7, 75.4, 75.6, 71.5, 70.8, 65.8%.
using PackTuning = PackShape<128, 4, 2048, 8>;

template <class Shape, class In>
struct PackGeometry {
    static constexpr int V = int(16 / sizeof(In));
    static constexpr int VPT = Shape::VPT * V <= 32 ? Shape::VPT : 32 / V;
    static constexpr int ITEMS = VPT * V, SUB = WARP * ITEMS, SLOTS = WARP * VPT + WARP * VPT / 8;
};

// The segments of a pack for a mean length len: the power of two (1 to 32)
// that covers ELEMS / len, so that a pack holds at least ELEMS elements on
// average where 32 segments can.  Rounded up, not down: segments of a mean of 1027 made
// packs of one segment (K = 2048 / 1027 = 1), which read 66.4% of the roof
// in bench/results/reduce-axis-nvidia-h200-2026-11-23-run4.md where packs
// of two and four segments of a mean of 1020 read 73.9 and 72.6% (tune-
// packs run 6): a warp's first trip of a pack waits for the offsets, then
// for the data, so packs of one short segment spend most of their time
// waiting.
template <class Shape = PackTuning>
inline int64_t pack_segments(int64_t len) {
    return pow2_between(ceil_div<int64_t>(Shape::ELEMS, len < 1 ? 1 : len), 1, WARP);
}

// Segments of a pack longer than this are deferred: 16x the mean and two
// packs' worth of elements.
template <class Shape = PackTuning>
inline int64_t pack_long_length(int64_t mean) {
    return long_length(mean, 2 * int64_t(Shape::ELEMS));
}

// Pack pk of K segments, seen by its warp: lane j holds segment s + j's
// bounds; which of them are deferred (pushed by the caller: `deferred`).
struct Pack {
    int64_t p, b, e;  // the lane's segment and its bounds (0, 0 past the pack)
    int last;         // segments in the pack
    bool here, deferred;
    unsigned long_mask, nonempty;  // bit j: segment s + j deferred; non-empty and not deferred

    __device__ Pack(const int64_t *__restrict__ offsets, int64_t count, int K, int64_t pk,
                    const Deferred &D, int lane) {
        const int64_t s = pk * K;
        p = s + lane;
        last = int(count - s < K ? count - s : K);
        here = lane < last;
        b = here ? __ldg(offsets + p) : 0;
        e = here ? __ldg(offsets + p + 1) : 0;
        deferred = here && D.defers(e - b);
        long_mask = __ballot_sync(FULL_MASK, deferred);
        nonempty = __ballot_sync(FULL_MASK, here && !deferred && e > b);
    }

    // body(run, run_b, run_e) for each run of segments between deferred
    // ones with an element to read: `run` the mask of its non-empty
    // segments, [run_b, run_e) its elements.  Uniform over the warp.
    template <class Body>
    __device__ void runs(Body body) const {
        for (int r0 = 0; r0 < last;) {
            const unsigned ahead = long_mask >> r0;
            const int r1 =
                ahead != 0 ? r0 + __ffs(int(ahead)) - 1 : last;  // segments r0 ... r1 - 1
            const unsigned span = r1 - r0 == WARP ? FULL_MASK : ((1u << (r1 - r0)) - 1u) << r0;
            const unsigned run = span & nonempty;
            const int64_t run_b = __shfl_sync(FULL_MASK, b, r0);
            const int64_t run_e = __shfl_sync(FULL_MASK, e, r1 > 0 ? r1 - 1 : 0);
            r0 = r1 + 1;
            if (run != 0) body(run, run_b, run_e);
        }
    }
};

// The warp's segmented scan of a trip (Sengupta et al.'s flagged operator):
// `part` is each lane's part after its last segment start (the whole lane
// where it holds none), F the lanes that hold a start, `carry` the open
// segment's part before the trip.  Returns what comes before each lane's
// first element in its segment; `inc` ends as the lane's inclusive value
// (lane 31's: the part of the segment open at the trip's end).
template <class T, class Op>
__device__ __forceinline__ T warp_before(T part, T carry, unsigned F, int lane, Op op, T &inc) {
    const unsigned below = (1u << lane) - 1u, upto = F & (below | (1u << lane));
    const int restart = upto != 0 ? 31 - __clz(int(upto)) : -1;  // the last lane <= this with a start
    inc = part;
#pragma unroll
    for (int d = 1; d < WARP; d <<= 1) {
        const T y = __shfl_up_sync(FULL_MASK, inc, d);
        if (lane >= d && lane - d >= restart) inc = op(y, inc);
    }
    const T prev = __shfl_up_sync(FULL_MASK, inc, 1);
    return lane == 0 ? carry : (F & below) != 0 ? prev : op(carry, prev);
}

// A warp's trips over one run [run_b, run_e) of the input, SUB = 32 x
// ITEMS elements a trip, counted from the run's first aligned vector (so
// every element lands in a fixed place of a fixed trip: the order of the
// work depends on the offsets only).  Each trip:
//   1. its vectors land in the warp's shared stage by cp.async (lane l
//      copies vectors l, l + 32, ...: coalesced; a 16-byte pad every 128
//      bytes), STAGES - 1 trips' copies issued ahead of the trip's work;
//   2. each segment start in the trip is marked in the word of the lane
//      that holds it (bit k: element k of the lane's run of ITEMS = VPT x
//      V neighbouring elements): stream's lanes each mark their own
//      segment's start (`starts`, at b), stream_marked's call mark(c0);
//   3. trip(c0, stage, h, raw, rb, re, inner): c0 the trip's first
//      element, stage its shared copy (vector q at slot q + q / 8), h the
//      lane's marks, raw its VPT vectors, [rb, re) its elements that belong
//      to the run, inner whether every lane's elements all do (compiled
//      apart by the callers: no masks in the inner trips).  trip() may
//      write into the stage (the scan's results go out through it): a
//      __syncwarp follows before the stage is filled again.
// The marks must be zero on the first call (they are cleared as read).
template <class Shape, class In>
struct PackTrips {
    using G = PackGeometry<Shape, In>;
    static constexpr int V = G::V, VPT = G::VPT, ITEMS = G::ITEMS, SUB = G::SUB;
    static constexpr int STAGES = Shape::STAGES;
    static_assert(V * sizeof(In) == 16 && ITEMS <= 32, "an element size dividing 16, <= 32 a lane");
    uint4 (*stages)[G::SLOTS];  // the warp's STAGES stages
    unsigned *marks;            // the warp's 32 words of marks
    int lane;

    template <class Trip>
    __device__ void stream(const In *__restrict__ in, int64_t n, int64_t run_b, int64_t run_e,
                           bool starts, int64_t b, Trip trip) const {
        stream_marked(
            in, n, run_b, run_e,
            [&](int64_t c0) {
                if (starts && b >= c0 && b < c0 + SUB) mark(int(b - c0));
            },
            trip);
    }

    // Marks the start at element o (0 ... SUB - 1) of the trip.  Several
    // lanes may mark one word, and one start may be marked twice (empty
    // segments share their start with the next one): an or.
    __device__ void mark(int o) const { atomicOr(&marks[o / ITEMS], 1u << (o % ITEMS)); }

    template <class Mark, class Trip>
    __device__ void stream_marked(const In *__restrict__ in, int64_t n, int64_t run_b, int64_t run_e,
                                  Mark mark_trip, Trip trip) const {
        const int64_t first = run_b / V * V;
        const int trips = int(ceil_div<int64_t>(run_e - first, SUB));
        // The vectors of the trip at c0 into stage `buf`: those that hold
        // elements of the run; the one that holds the input's last element
        // (past n: no whole 16 bytes) element by element.
        const auto fetch = [&](int64_t c0, int buf) {
            // The run and the input from c0 on, in elements, within 0 ... SUB.
            const int rb = int(run_b - c0 > 0 ? run_b - c0 : 0);
            const int re = int(run_e - c0 < SUB ? run_e - c0 : SUB);
            const int end = int(n - c0 < SUB ? n - c0 : SUB);
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const int q = u * WARP + lane, g = q * V;
                uint4 *dst = &stages[buf][q + q / 8];
                if (g < re && g + V > rb) {
                    if (g + V <= end) {
                        async_copy16(dst, in + c0 + g);
                    } else {  // the vector that holds the input's last element
                        In v[V];
#pragma unroll
                        for (int k = 0; k < V; ++k) v[k] = g + k < end ? in[c0 + g + k] : In();
                        memcpy(dst, v, 16);
                    }
                }
            }
            async_commit();
        };
#pragma unroll
        for (int t = 0; t + 1 < STAGES; ++t) {  // a group each, empty past the run
            if (t < trips)
                fetch(first + int64_t(t) * SUB, t);
            else
                async_commit();
        }
        for (int t = 0; t < trips; ++t) {
            const int64_t c0 = first + int64_t(t) * SUB;
            uint4 *stage = stages[t % STAGES];
            if (t + STAGES - 1 < trips)
                fetch(c0 + (STAGES - 1) * int64_t(SUB), (t + STAGES - 1) % STAGES);
            else
                async_commit();
            async_wait_groups<STAGES - 1>();  // trip t's group has landed
            mark_trip(c0);
            __syncwarp();  // the trip's copies and marks, seen by the whole warp
            const unsigned h = marks[lane];
            marks[lane] = 0;  // read by this lane alone; the next marks follow a __syncwarp
            uint4 raw[VPT];
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const int q = lane * VPT + u;
                raw[u] = stage[q + q / 8];
            }
            // The lane's elements rb ... re-1 belong to the run (all of
            // them but in the run's first and last trips).
            const int at = lane * ITEMS;
            const auto in_lane = [&](int64_t x) {  // x - c0 - at, clamped to 0 ... ITEMS
                const int64_t r = x - c0;
                return int(r > at ? (r < at + ITEMS ? r : at + ITEMS) : at) - at;
            };
            const int rb = in_lane(run_b), re = in_lane(run_e);
            const bool inner = __all_sync(FULL_MASK, rb == 0 && re == ITEMS);
            trip(c0, stage, h, raw, rb, re, inner);
            __syncwarp();  // the stage and marks are read (and written) before they are rewritten
        }
    }
};

}  // namespace segs
GP_NAMESPACE_END
