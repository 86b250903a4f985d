// Step 21 - segmented_flat: the segments laid end to end are one flat array,
// read in fixed tiles whatever the lengths.
// Sources: head flags and the segmented operator (Sengupta, Harris, Zhang
// and Owens, "Scan primitives for GPU computing", Graphics Hardware 2007);
// an even partition of the flat data with a search for where each part's
// rows begin (Merrill and Garland, "Merge-based parallel sparse
// matrix-vector multiplication", SC16: its merge-path partition, here cut
// on the elements alone); CUB's DeviceSegmentedReduce for the interface
// (offsets, the identity for an empty segment).
//
// What changed from steps 12-17: work is no longer handed out per segment.
// Block t reads tile t, TILE = BLOCK x ITEMS neighbouring elements of the
// input (FlatShape; ITEMS = VPT 16-byte vectors a thread), all its 16-byte
// vectors in one coalesced sweep (cp.async into shared memory), and then
// each thread owns a contiguous run of ITEMS elements:
//   1. before it, flat_bounds finds each tile's first offset once for all
//      tiles (bounds[t]: the first segment whose offset is at or past
//      t x TILE; a warp per tile, a 32-way search);
//   2. the offsets that fall in the tile (offsets[bounds[t] ..
//      bounds[t+1])) mark their elements (a byte an element) and count,
//      per thread, how many fall in its run; an empty segment (two equal
//      offsets) gets the identity there and then;
//   3. a block scan of the counts gives each thread the index of the first
//      segment that starts in its run; the thread walks its run with the
//      marks, writes each segment that starts and ends in the run, and
//      keeps its head part (the segment open at its first element) and its
//      tail part (the one open at its last);
//   4. a block-wide segmented scan of (flag "a segment starts in my run",
//      tail or whole value) - Sengupta et al.'s operator - completes the
//      segments that cross threads: the thread where one ends adds what
//      the threads before it carry;
//   5. the tile's results, a contiguous range of out, are staged in shared
//      memory and written coalesced.
// What crosses a tile boundary goes to per-tile records: the value of the
// segment open at the tile's start (up to where it ends in the tile) and
// the tile's flagged total (the tail of its last segment, or everything).
// flat_fixup then finishes each segment that began in an earlier tile, in
// the tile where it ends: the records of the tiles it spans, in tile order
// (a thread a segment for a few tiles, a warp for many).  Three launches,
// the second and third started early (programmatic dependent launch) so
// that their blocks wait on the GPU, not on the host.
// Why the steps before were slow on ragged segments: a thread, a group of
// lanes or a warp per segment reads a segment of 64 floats from wherever it
// starts (rarely a 16-byte boundary: scalar edges), idles lanes on short
// ones and waits on the long ones of its group (the mapping is chosen from
// the mean).  Here every load is a full 16-byte vector of a coalesced
// sweep and every block reads the same bytes, whatever the lengths; the
// price is the search (a few loads a tile), each offset's neighbours read
// by the marks (from L1), a few block-wide steps a tile and the records'
// launch.
// Every segment is reduced in an order fixed by its offsets and the tile
// shape (a thread's run in order, the block scan's tree, the records in
// tile order): the same bits every run, and on any GPU with the same tile
// shape (the grid is the tile count, not a function of the SMs).
// Rows of a C array along the last axis (an axis read with s_n == 1 and
// rows back to back) are the same problem with offsets p x len, computed
// instead of read (no bounds kernel); any other layout (a strided axis)
// runs step 15's blocks per problem.
// Still slow here, measured (bench/results/tune-segflat-nvidia-h200-
// 2026-11-23.md, float32 sums of 2^26 on an H200): the tile kernel alone
// runs at 21-53% of the copy roof for segments of mean 4 to 4096 (78% for
// mean 65536, where a tile holds no offset): the marks, the walk over 32
// elements a thread and the block-wide scans cost more than the uneven
// reads they replace, so the adaptive step (17) runs the per-segment
// mappings (they lead by 1.04-3.5x at every mean but 4096); CUB's block a segment
// leads at mean 4096.
// Assumes: contiguous segments (gp_batch's), any n and alignment (a
// misaligned input is read element by element, coalesced), any number of
// segments, empty ones included (runs of equal offsets are found by a
// binary search, never a fixed buffer).
#include "segmented_flat.cuh"

GP_NAMESPACE_BEGIN

namespace {
template <class In, class Op>
using Flat = reduce::flat::FlatWith<reduce::flat::FlatTuning, In, Op>;
}  // namespace

cudaError_t gp_reduce_segmented_flat(gp_reduce_args *a) {
    return reduce::seg::dispatch<Flat>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_flat_kernel,
             reduce::flat::reduce_flat<reduce::flat::FlatTuning, float, Sum<float>, reduce::flat::ListedOffsets>)
GP_NAMESPACE_END
