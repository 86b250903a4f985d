"""Write the teaching notebooks (01_reduction ... 08_scaling_out) as .ipynb
without outputs:

    python notebooks/make_notebooks.py

Each step's "what changed" text comes from the registry when the notebook
runs (gpuprims.variants); the "why it is faster" notes are here.  The tests
execute the notebooks headless (tests/test_notebooks.py) and check that the
cells tagged "table" produced a table.
"""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

SETUP = '''import numpy as np
import gpuprims

info = gpuprims.device_info()
print(f"{info['name']}: {info['multiprocessors']} SMs, {info['total_memory'] / 2**30:.0f} GiB, "
      f"L2 {info['l2_cache_bytes'] / 2**20:.0f} MiB")


def step(family, name, x, **kw):
    """One step of the journey: what the registry says it changes, then its time."""
    v = next(v for v in gpuprims.variants(family) if v.name == name)
    print(f"{v.name} - {v.title}  [{v.source}]")
    print(v.description)
    r = gpuprims.benchmark(family, name, x, repeat=10, k=2, **kw)
    print(f"-> {r.median_ms:.4f} ms, {r.gbps:.0f} GB/s = {r.roof_pct:.0f}% of the copy roof, "
          f"matches NumPy: {'yes' if r.matches else 'NO'}")
    return r


def show_plot(table):
    try:
        table.plot()
    except ImportError as e:  # matplotlib is optional
        print(e)


def show_profile(*args, **kwargs):
    """gpuprims.profile, or why it cannot run here (no ncu, no permission)."""
    try:
        return gpuprims.profile(*args, **kwargs)
    except gpuprims.ProfilerError as e:
        print(f"hardware metrics unavailable here: {e}")
'''


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def code(text, tags=()):
    meta = {"tags": list(tags)} if tags else {}
    return {"cell_type": "code", "execution_count": None, "metadata": meta, "outputs": [],
            "source": text.strip("\n")}


def notebook(cells):
    for i, c in enumerate(cells):
        c["id"] = f"c{i:02d}"
    return {"cells": cells,
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def journey(family, intro, steps, size_code, compare_code, compare_text, metrics_text, metrics_code,
            extra=()):
    cells = [md(intro), code(SETUP), code(size_code)]
    for name, why in steps:
        cells.append(md(f"### `{name}`\n\n{why}"))
        cells.append(code(f'step("{family}", "{name}", X, **KW)'))
    cells.append(md(compare_text))
    cells.append(code(compare_code, tags=["table"]))
    cells.append(code("show_plot(table)"))
    cells.append(md(metrics_text))
    cells.append(code(metrics_code, tags=["metrics"]))
    cells.extend(extra)
    return notebook(cells)


REDUCE_STEPS = [
    ("neighbored", "The tutorial's first kernel. Only threads whose index is a multiple of 2*stride work, "
     "so every warp stays diverged to the end and issues instructions for idle lanes: many "
     "instructions per warp, poor load efficiency."),
    ("neighbored_less", "Same pairs, but thread t takes pair t: the working threads are packed into "
     "the first warps, whole warps idle and cost nothing. Fewer instructions per warp; loads still "
     "strided."),
    ("interleaved", "Partners half a block apart: a warp reads 32 consecutive words, so the loads "
     "are coalesced (load efficiency jumps from ~25% to ~100% in the tutorial's table)."),
    ("unroll2", "Each thread first adds two blocks' worth of data: half the blocks, each tree step "
     "serves twice the data, two loads in flight per thread."),
    ("unroll4", "Four loads in flight per thread: the memory system stays busier."),
    ("unroll8", "Eight loads in flight: close to the memory bandwidth; the tree is now a small part "
     "of the time."),
    ("unroll_warp8", "The last 6 tree steps run inside one warp without __syncthreads(): six "
     "block-wide barriers fewer per block (the tutorial watched stall_sync for the effect, and saw "
     "less than the book promised). __syncwarp() keeps it correct since Volta."),
    ("complete_unroll_warp8", "The whole tree written out: no loop counter, no loop branch."),
    ("complete_unroll_template", "The block size as a template parameter: the guards are resolved "
     "at compile time and the dead steps vanish."),
    ("warp_shuffle", "Warps reduce in registers with __shfl_down_sync: no shared-memory round trips "
     "and one barrier per block."),
    ("single_pass", "16-byte loads, a grid sized to fill the GPU once, and the last block finishing "
     "the job: one launch, reading the input at the memory's speed."),
]

SCAN_STEPS = [
    ("naive", "Every thread sums its own prefix: O(n^2) work. Correct, and the slowest way there is."),
    ("hillis_steele", "log2 n steps of adding the element 2^d to the left, all in shared memory; two "
     "barriers per step keep reads and writes apart. n log n work, one block."),
    ("hillis_steele_double_buffer", "Read one buffer, write the other: one barrier per step."),
    ("blelloch", "Up-sweep and down-sweep: O(n) work. Its power-of-two strides pile a warp's "
     "accesses on a few shared-memory banks (bank conflicts)."),
    ("blelloch_padded", "One pad word per 32 elements spreads those strides over all banks: the "
     "conflicts disappear (see the bank-conflict metrics below)."),
    ("hillis_steele_multiblock", "Scan-then-fan: each block scans a tile and writes its total, the "
     "totals are scanned, a last pass adds each tile's prefix. Any n."),
    ("blelloch_multiblock", "The same structure over padded Blelloch tiles: less work per tile."),
    ("warp_shuffle", "Each thread scans 16 elements in registers, warps scan with __shfl_up_sync, "
     "reduce-then-scan over tiles: the input is read twice, the output written once."),
    ("decoupled_lookback", "One pass: each warp's tile publishes its total and looks back at its "
     "predecessors' (Merrill & Garland), reading the input once; persistent warps keep their next "
     "tiles loading into shared memory (bulk copies on Hopper, cp.async before) while they wait, "
     "and publish each tile's total as soon as it lands. Bitwise reproducible: the "
     "prefix of a tile is always the same tree of tile totals (the blocks of the base-32 digits "
     "of its index), where CUB adds whatever has been published (see its `distinct` column)."),
]

TRANSPOSE_STEPS = [
    ("serial", "The CPU loop in one GPU thread: no parallelism at all."),
    ("per_row", "One thread per output row: parallel, but a warp's writes are a row apart."),
    ("per_element", "One thread per element: reads coalesced, writes still strided - each warp's "
     "store touches 32 different memory segments (low store efficiency)."),
    ("tiled", "A 32 x 32 tile staged in shared memory: reads and writes both coalesced. Reading a "
     "tile column is a 32-way bank conflict."),
    ("tiled_padded", "tile[32][33]: a column now spans all 32 banks, no conflicts."),
    ("tiled_coarsened", "32 x 8 threads, 4 elements each: fewer threads, more loads in flight."),
    ("tiled_wide", "16-byte accesses, a tuned tile and block order, evict-first stores: at the "
     "copy roof."),
    ("nd_naive", "Any rank, the textbook way: each thread takes its output index apart into "
     "coordinates (a division and a remainder per axis) and reads the input element those "
     "coordinates and the strides point at. On a matrix it is per_element with divisions added."),
    ("nd_tiled", "Any rank at the copy's speed (cuTT): on a matrix of 4- or 8-byte elements it runs "
     "tiled_wide's kernel; of 1- or 2-byte ones, a tile that transposes 4 x 4 bytes (2 x 2 halves) "
     "in registers so that shared memory moves 32-bit words instead of single elements."),
]

TRANSPOSE_ND_CASES = """CASES = [((512, 256, 512), (2, 1, 0)), ((512, 256, 512), (0, 2, 1)), ((512, 256, 512), (1, 0, 2)),
         ((64, 128, 64, 128), (0, 2, 1, 3)), ((64, 128, 64, 128), (0, 3, 1, 2)),
         ((64, 128, 64, 128), (3, 2, 1, 0)), ((16,) * 6, None)]"""

TRANSPOSE_ND = [
    md("""## Any rank: `numpy.transpose(x, axes)`

`gpuprims.transpose(x, axes)` takes arrays of any rank, any strides (negative ones too) and any
permutation, and gives `numpy.ascontiguousarray(numpy.transpose(x, axes))`. The first way to
do it, `nd_naive`, is the textbook one: thread `o` takes output element `o` apart into
coordinates - one division and one remainder per axis, slowest last - and reads the input at
the sum of coordinates times strides. Two things make it slow. The index arithmetic: a 64-bit
division costs tens of instructions, and a rank-6 array pays six of them for every 4 bytes it
moves, more work than the memory transfer itself. And the memory access: a warp's 32 writes
are consecutive, but its reads land wherever the permutation sends them - 32 different memory
segments when the output's fastest axis is not the input's.

`nd_tiled` follows cuTT (Hynninen and Lyakh, arXiv:1705.01598). First a plan, on the host:
axes of size 1 are dropped, and axes that stay next to each other and in the same order in the
input and in the output are fused into one (where the strides allow). What is left is the
transpose the kernel really has to do - often far simpler than the permutation looks:"""),
    code(TRANSPOSE_ND_CASES + """
for shape, axes in CASES + [((2, 3, 4, 5), (2, 3, 0, 1)), ((1, 7, 1, 5), None)]:
    print(f"{str(shape):22} {str(axes):20} {gpuprims.transpose_plan(shape, axes)}")"""),
    md("""Letters name the original axes (`i` for axis 0, `j` for 1, ...): `jk:8192` is axes 1
and 2 fused into one of 8192 elements. Then one of two kernels:

- **tile**: the input's fastest axis moves. A block stages a tile in shared memory whose rows
  run along the input's fastest axis (read as runs of the input) and whose columns run along the
  input axis that is the output's fastest (written as runs of the output); the other axes are a
  batch, taken apart once per tile rather than once per element. Where an axis is shorter than a
  tile (the 16^6 reversal), the tile's side continues over a second axis, so tiles stay full.
  Even once per tile, the index arithmetic shows: taking a tile's number apart by 64-bit
  divisions cost 2-5% of the copy roof, so the host computes a multiplier for each axis and the
  kernel divides by multiplying (Granlund and Montgomery, 1994: a multiply-high, a subtraction
  and two shifts). And the order of the tiles matters: blocks start in index order, so the tiles
  are numbered in the output's order (its fastest axis fastest), and the blocks in flight write
  neighbouring parts of the output, as a copy would.
- **copy**: the fastest axis stays in place, as in `(1, 0, 2)`: every output row is a run of
  the input, and the transpose is a batched copy of those runs.

Both move 16-byte vectors where the strides allow, for every element size. Every result is
NumPy's:"""),
    code("""rng = np.random.default_rng(0)
for dtype in ("int8", "float16", "float32", "complex128"):
    x = (rng.standard_normal((6, 10, 4, 12)) * 100).astype(dtype)
    for axes in [(0, 3, 1, 2), (3, 2, 1, 0), (1, 0, 2, 3)]:
        assert np.array_equal(gpuprims.transpose(x, axes), np.transpose(x, axes))
        assert np.array_equal(gpuprims.transpose(x[::-1, ::2], axes), np.transpose(x[::-1, ::2], axes))
print("equal to numpy.transpose")"""),
    md("""### The table

float32, 2^26 elements each (256 MiB): the naive kernel against the tiled one, with the copy
roof - a device-to-device copy of the same bytes - measured in the same run, and CuPy's
`ascontiguousarray(x.transpose(axes))` and PyTorch's `x.permute(axes).contiguous()` on the
same device array where they are installed (`x CuPy`, `x PyTorch`: their time over `auto`'s)."""),
    code("""nd = gpuprims.compare_permutations(CASES, "float32", repeat=10)
nd""", tags=["table"]),
]


def explain(family, first, second, text):
    """Cells that watch two steps work on the emulator (gpuprims.trace): the
    memory at every block barrier and the threads that changed it."""
    return [
        md(text),
        code(f'''tiny = np.arange(1, 17, dtype=np.float32)  # one block, 16 elements
for name in ("{first}", "{second}"):
    t = gpuprims.trace("{family}", name, tiny)  # runs on the emulator (the CPU), GPU or not
    print(t, end="\\n\\n")
    show_plot(t)''', tags=["trace"]),
    ]


def reduction():
    intro = """# The reduction journey

After Tony Tan's "CUDA Freshman" posts 3.4 (avoiding branch divergence) and 3.5 (loop
unrolling), notes on *Professional CUDA C Programming* (Cheng, Grossman, McKercher, 2014),
chapter 3, and Harris's "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007): from a kernel
where most threads of a warp sit idle to one that reads memory as fast as a copy. Each step below prints
what changed (from the registry, `gpuprims.variants("reduce")`) and its time on this GPU;
`compare` then times the whole journey against CUB, the copy roof and NumPy in one run, and
`profile` shows the hardware metrics of the tutorial's table (load/store efficiency, instructions
per warp, barrier stalls) measured with Nsight Compute."""
    return journey(
        "reduce", intro, REDUCE_STEPS,
        'N = 1 << 24  # 64 MiB of float32: larger than the L2 (which is flushed between runs anyway)\n'
        'X = N\nKW = {"op": "sum"}',
        'table = gpuprims.compare("reduce", n=N, op="sum")\ntable',
        "## The whole journey in one run\n\nRows in journey order, then CUB, the copy roof and NumPy. "
        "`x prev` is the speed-up over the row before, `x first` over the first step, `x CUB` over "
        "CUB; `max err` is the distance to the exactly rounded sum (`math.fsum`) in ULPs; "
        "`distinct` counts different results over repeated runs (1: deterministic).",
        "## Why: the tutorial's metric table\n\nCUDA Freshman 3.5 explains the steps with nvprof's "
        "`gld_efficiency`, `gst_efficiency`, `inst_per_warp`, `dram_read_throughput` and "
        "`stall_sync`; here they are measured with Nsight Compute (`gpuprims.profile`, preset "
        "\"seed\"). A multi-pass variant shows one row per kernel.",
        'show_profile("reduce", n=N, metrics="seed")',
        extra=explain("reduce", "neighbored", "interleaved",
                      "## Watch the tree\n\nThe emulator runs the same kernels on the CPU and "
                      "records the work tile at every `__syncthreads()` with the threads that "
                      "changed it: `neighbored` keeps threads 0, 2, 4, ... busy (scattered over "
                      "the warp), `interleaved` the first threads, adding partners half a block "
                      "away."))


def scan():
    intro = """# The scan journey

After the blog post "CUDA learning (2): parallel scan" (Hillis and Steele, 1986; Blelloch, 1990;
the padding and scan-then-fan of Harris, Sengupta and Owens, *GPU Gems 3*, chapter 39) and
Merrill and Garland's decoupled look-back (NVIDIA, 2016): inclusive and exclusive prefix sums,
from the naive O(n^2) kernel through Hillis-Steele and Blelloch (single block, then any length by scan-then-fan) to warp shuffles and a one-pass
decoupled look-back. Single-block steps declare their limit (`max_n`), so they are shown on a
1024-element input; the table then compares everything at 2^24 elements, where those steps say
that they were skipped."""
    return journey(
        "scan", intro, SCAN_STEPS,
        'SMALL, N = 1024, 1 << 24\nX = SMALL  # every step fits one block here\nKW = {"op": "sum"}',
        'small = gpuprims.compare("scan", n=SMALL)\nprint(small)\n'
        'table = gpuprims.compare("scan", n=N)\ntable',
        "## The whole journey in one run\n\nFirst at 1024 elements (every variant runs), then at "
        "2^24 (the single-block steps are skipped and say so). `max err` is in ULPs of the "
        "prefix's sum of |x|: the scale a float scan's rounding grows with.",
        "## Why: bank conflicts\n\nBlelloch's tree strides land a warp's shared-memory accesses on "
        "the same banks; padding removes the conflicts (Nsight Compute, preset "
        "\"bank_conflicts\").",
        'show_profile("scan", ["hillis_steele", "blelloch", "blelloch_padded"], n=SMALL, '
        'metrics="bank_conflicts")',
        extra=explain("scan", "hillis_steele", "blelloch",
                      "## Watch the steps\n\nOn the emulator (the same kernels on the CPU): "
                      "the shared memory at every barrier. Hillis-Steele adds the element 2^d "
                      "to the left with every thread at every step; Blelloch builds a "
                      "reduction tree up, puts the identity at the root and passes partial "
                      "sums down, with fewer threads at the top of the tree."))


def transpose():
    intro = """# The transpose journey

After Orchid's "GPU program optimization (2): matrix transpose" (2016) and Ruetsch and
Micikevicius, "Optimizing Matrix Transpose in CUDA" (NVIDIA, 2009): a matrix transpose from one
GPU thread to a kernel that moves data at the speed of a copy, then to any rank. The lesson is memory access: reads and writes of a warp must both be coalesced, and the
shared-memory tile that makes that possible must avoid bank conflicts. The one-thread and
per-row steps are limited (`max_n`), so the steps run on 1024 x 1024; the table compares the
journey on 8192 x 8192 against cuBLAS `geam` and the copy roof. The last section permutes the
axes of 3- to 6-D arrays (`numpy.transpose(x, axes)`), after cuTT."""
    return journey(
        "transpose", intro, TRANSPOSE_STEPS,
        'SMALL, SHAPE = (1024, 1024), (8192, 8192)\nX, KW = SMALL, {}',
        'table = gpuprims.compare("transpose", shape=SHAPE)\ntable',
        "## The whole journey in one run\n\nOn 8192 x 8192 float32 (256 MiB), where `serial` is "
        "over its limit and says so. `x cuBLAS` compares with `cublasSgeam`.",
        "## Why: coalescing and bank conflicts\n\nGlobal load and store efficiency (the share of "
        "each memory sector a warp's access uses) and the shared-memory bank conflicts of the "
        "tiled steps (Nsight Compute).",
        'show_profile("transpose", ["per_element", "tiled", "tiled_padded", "tiled_wide"], '
        'shape=(4096, 4096), metrics=["gld_efficiency", "gst_efficiency", '
        '"shared_ld_bank_conflicts"])',
        extra=TRANSPOSE_ND)


def occupancy():
    cells = [
        md("""# Occupancy: how many threads are resident

After part II of the series "Programming for the GPU" (how to optimize CUDA code from the
machine's perspective): an SM keeps a block resident only while it has room for all of
the block's threads, registers and shared memory, and a limit on blocks. Its worked
example is an RTX A4500 (56 SMs, 2048 threads and 32 blocks per SM, 64K registers per SM) running
a kernel of 68 registers per thread."""),
        code('''import gpuprims

A4500 = dict(sm_count=56, threads_per_sm=2048, blocks_per_sm=32, registers_per_sm=65536,
             registers_per_thread=68)
for block in [(32, 16), (16, 8)]:
    r = gpuprims.occupancy_model(**A4500, block=block)
    print(f"block {block}: {r['blocks_per_sm']} blocks/SM, {r['resident_threads']:,} resident threads, "
          f"limited by {r['limited_by']} {r['blocks_by']}")'''),
        md("""32 x 16 blocks need 68 x 512 = 34,816 registers: one block per SM, 28,672 threads on the
GPU. 16 x 8 blocks need 8,704 registers: seven fit, 50,176 threads. Smaller blocks waste fewer
registers at the boundary.

## The kernels of gpuprims on this GPU

`gpuprims.occupancy` asks the CUDA occupancy API about each variant's compiled kernel (float32):
its registers and shared memory, how many of its blocks fit on an SM, and which limit decides.
`model = API` checks that calculation (with the hardware's register allocation in units of
256 per warp) against the API."""),
        code('''info = gpuprims.device_info()
print(f"{info['name']}: {info['multiprocessors']} SMs, {info['max_threads_per_multiprocessor']} threads "
      f"and {info['max_blocks_per_multiprocessor']} blocks per SM, "
      f"{info['registers_per_multiprocessor']} registers, "
      f"{info['shared_memory_per_multiprocessor'] // 1024} KiB shared memory per SM")
table = gpuprims.occupancy("reduce", "all")
table''', tags=["table"]),
        code('gpuprims.occupancy("scan", "all")', tags=["table"]),
        code('gpuprims.occupancy("transpose", "all")', tags=["table"]),
        md("""## Block size decides which limit binds

The interleaved reduction at different block sizes: small blocks run into the limit on blocks
per SM, large ones into threads per SM."""),
        code('''for block in [32, 64, 128, 256, 512, 1024]:
    r = gpuprims.occupancy("reduce", "interleaved", block_size=block)
    print(f"{block:5} threads: {r['blocks_per_sm']:3} blocks/SM, {r['warps_per_sm']:3} warps/SM, "
          f"occupancy {r['occupancy']:.0%}, limited by {r['limited_by']}")'''),
        md("""## Theoretical and achieved occupancy

The API gives the theoretical figure; Nsight Compute measures what the kernels achieve (warps
active per cycle), together with the barrier stalls that keep resident warps from issuing."""),
        code('''try:
    achieved = gpuprims.profile("reduce", ["interleaved", "warp_shuffle", "single_pass"], n=1 << 24,
                                metrics="occupancy")
except gpuprims.ProfilerError as e:
    achieved = None
    print(f"hardware metrics unavailable here: {e}")
achieved''', tags=["metrics"]),
    ]
    return notebook(cells)


def axis_and_segments():
    cells = [
        md("""# Axes and segments: mapping problems to threads

`numpy.sum(x, axis)` and `numpy.cumsum(x, axis)` solve many independent problems at once, one per
position of the other axes; CUB's `DeviceSegmentedReduce` solves ragged ones given by offsets.
On a GPU the question is no longer how to reduce one long array (notebooks 01 and 02) but how to
hand problems to threads: a thread, a few lanes, a warp, a block or several blocks per problem, or
lanes *across* problems. The rows of `gpuprims.variants("reduce")` and `("scan")` flagged
`batched` (an axis) or `segmented` (offsets) are those mappings; `variant="auto"`
(`segmented_adaptive`) picks one by the shape."""),
        code(SETUP),
        code('''for v in gpuprims.variants("reduce"):
    if v.batched or v.segmented:
        print(f"{v.name:22} {'axis ' if v.batched else '     '}{'segments' if v.segmented else '':9} {v.title}")'''),
        md("""## A long axis and a short one

The same 2^26 float32 (256 MiB) seen as 64 rows of 2^20 and as 2^20 rows of 64: summing each row
is 64 long problems or a million short ones. Both give NumPy's answer; the tables below show how
differently the mappings fare."""),
        code('''rng = np.random.default_rng(0)
long_rows = rng.random((64, 1 << 20), dtype=np.float32)
short_rows = long_rows.reshape(1 << 20, 64)
d_long, d_short = gpuprims.to_device(long_rows), gpuprims.to_device(short_rows)
for name, d, h in (("64 x 2^20", d_long, long_rows), ("2^20 x 64", d_short, short_rows)):
    for axis in (-1, 0):
        got = gpuprims.sum(d, axis=axis).get()
        ref = h.sum(axis=axis, dtype=np.float64)
        print(f"{name} axis={axis:2}: {got.shape[0]:8} sums, largest relative error "
              f"{np.max(np.abs(got - ref) / np.abs(ref)):.1e}")'''),
        md("""## The plan: (outer, len, inner)

Any axis of an N-D array, in any strides, is `outer x len x inner` problems: `outer` is the product
of the axes before it, `inner` of those after, and problem `(o, i)` reads
`x[o*s_outer + k*s_len + i*s_inner]` for `k < len` (`gp_batch` in `cuda/gpuprims.h`). A C array
along its last axis is `inner = 1`, `s_len = 1`: each problem is a run of consecutive elements.
Along axis 0 it is `outer = 1`: problem `i` is column `i`, its elements a whole row apart."""),
        code('''def plan(shape, axis):
    """(outer, len, inner) of a C array along one axis: what gpuprims passes its kernels."""
    axis %= len(shape)
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


for shape, axis in [((64, 1 << 20), -1), ((1 << 20, 64), -1), ((1 << 20, 64), 0), ((8, 300, 5), 1)]:
    print(f"{str(shape):16} axis={axis:2} -> (outer, len, inner) = {plan(shape, axis)}")'''),
        md("""## Why a column reduction needs another mapping

Give each column to a thread (`batched_thread`) and, at each step, the 32 threads of a warp read
32 elements of one row: consecutive addresses, one coalesced load. Give each column to a *warp*
(`segmented_warp`, right for rows) and the warp's lanes read 32 elements of one column, each a
row apart: 32 separate memory transactions for 32 floats. But a thread per column leaves the GPU
idle when there are few columns (64 columns: 64 threads). `batched_columns` keeps lanes across
columns and splits the rows over many blocks (a shared-memory tree across rows combines them), so
that even a few columns fill the GPU with coalesced loads.

The emulator runs the same kernels on the CPU: `gpuprims.trace` records which thread wrote each
output - here on 8 x 5 numbers, no GPU needed."""),
        code('''tiny = np.arange(1, 41, dtype=np.float32).reshape(8, 5)
print("columns (axis=0), batched_columns: lanes across columns")
print(gpuprims.trace("reduce", "batched_columns", tiny, axis=0).owners_text())
print("\\nrows (axis=1), segmented_warp: a warp per row")
print(gpuprims.trace("reduce", "segmented_warp", tiny, axis=1).owners_text())''', tags=["trace"]),
        md("""## The tables

`gpuprims.compare(..., axis=...)` times every row that takes an axis on one device array, with
CUB's segmented reduction (rows only: it reads each problem as consecutive elements), a copy of the
same bytes (the roof) and NumPy's own `x.sum(axis)`; every output is checked against a float64
reference within the tests' bounds (`ok`)."""),
        code('''table = gpuprims.compare("reduce", x=d_short, axis=-1, repeat=10, k=2)
table''', tags=["table"]),
        code('''gpuprims.compare("reduce", x=d_short, axis=0, repeat=10, k=2)''', tags=["table"]),
        code('''gpuprims.compare("reduce", x=d_long, axis=-1, repeat=10, k=2)''', tags=["table"]),
        code('''gpuprims.compare("scan", x=d_short, axis=0, repeat=10, k=2)''', tags=["table"]),
        md("""## Segments

Ragged problems are given by k+1 boundaries, CUB's offsets: segment `i` is
`x[offsets[i]:offsets[i+1]]`. A reduction gives one value per segment and the identity for an
empty one (0 for a sum, the dtype's largest value for min, its smallest for max); a scan restarts
at every boundary and an empty segment adds nothing.

`numpy.add.reduceat(x, offsets[:-1])` is the same sum where every segment is non-empty and the
last boundary is `len(x)`. Its rule for an empty segment differs: where `offsets[i] ==
offsets[i+1]` reduceat returns the element `x[offsets[i]]`, not 0 (and it refuses a start equal to
`len(x)`)."""),
        code('''x = np.arange(1, 11, dtype=np.float32)
offsets = np.array([0, 3, 3, 7, 10])         # segments [0:3], [3:3] (empty), [3:7], [7:10]
print("gpuprims.sum(segments)     ", gpuprims.sum(x, segments=offsets))
print("numpy.add.reduceat         ", np.add.reduceat(x, offsets[:-1]), "<- x[3] for the empty segment")
print("gpuprims.cumsum(segments)  ", gpuprims.cumsum(x, segments=offsets))
print("exclusive max scan         ", gpuprims.scan(x, "max", inclusive=False, segments=offsets))'''),
        md("""### Which thread took which segment

Short segments waste a block (`segmented_block`: one block each, most of its threads idle) or a
warp (`segmented_warp`); `segmented_subwarp` packs several segments into a warp (groups of 2-16
lanes); `segmented_split` gives a very long one several blocks; `segmented_adaptive` chooses by
length - segments of a mean of 64 to 4096 elements (on 16-byte aligned data) it reads in packs: a
warp streams up to 32 neighbouring segments as one run of memory and marks where each starts, so no
lane waits on a short segment (`reduce_packs`, cuda/reduce/segmented.cuh); the cumsum does the same for
means of 2 to 8192 (`cuda/scan/packs.cuh`; below a mean of 12, up to 512 segments a warp), and past
them scans each segment as a 1-D scan with a look-back tree of its own, all on one grid of tiles laid
over the data (`segmented_lookback`'s long path: only a tile where segments meet is scanned more than
once). On the emulator, 40 numbers in segments of 3, 0, 17 and 20 elements:"""),
        code('''x = np.arange(1, 41, dtype=np.float32)
offsets = [0, 3, 3, 20, 40]
for name in ("segmented_block", "segmented_warp", "segmented_subwarp", "batched_thread"):
    t = gpuprims.trace("reduce", name, x, segments=offsets)
    print(f"{name}: sums {t.result}")
    print(t.owners_text(), end="\\n\\n")''', tags=["trace"]),
        md("""### Segmented tables

2^24 float32 with random segment lengths (uniform in [0, 2 x mean], empty ones included), of mean
16 and of mean 4096. The segmented scan has no NumPy equivalent; its NumPy row is the vectorized
reference the outputs are checked against."""),
        code('''n = 1 << 24
d = gpuprims.to_device(rng.random(n, dtype=np.float32))


def random_offsets(n, mean):
    ends = np.cumsum(rng.integers(0, 2 * mean + 1, size=2 * n // mean + 16))
    return np.concatenate([[0], ends[ends < n], [n]]).astype(np.int64)


short_segments, long_segments = random_offsets(n, 16), random_offsets(n, 4096)
table = gpuprims.compare("reduce", x=d, segments=short_segments, repeat=10, k=2)
table''', tags=["table"]),
        code('''gpuprims.compare("reduce", x=d, segments=long_segments, repeat=10, k=2)''', tags=["table"]),
        code('''gpuprims.compare("scan", x=d, segments=short_segments, repeat=10, k=2)''', tags=["table"]),
        md("""Segments of a mean of 65536: 256 of them, each a run of 1-D tiles with its own look-back."""),
        code('''gpuprims.compare("scan", x=d, segments=random_offsets(n, 65536), repeat=10, k=2)''', tags=["table"]),
    ]
    return notebook(cells)


def determinism():
    cells = [
        md("""# The same bits everywhere: determinism levels

Floating-point addition is not associative: `(a + b) + c` and `a + (b + c)` round differently. A
parallel sum adds in an order set by the grid, the block size, the tuning and - where atomics
combine partial sums - by which block finishes first. So the "same" sum can differ in its last
bits from run to run, and between two GPUs. CCCL names three levels, and gpuprims takes the same
names in `determinism=`:

- `"not_guaranteed"`: any order (atomics allowed);
- `"run_to_run"`: the same bits on the same GPU every time (gpuprims' default: every variant);
- `"gpu_to_gpu"`: the same bits on every GPU, every launch configuration, every chunking of a host
  array - and, in gpuprims, on the emulator (the CPU).

Integer sums, min and max are exact in any order: every level runs the same kernels. The rest of
this notebook is about float sums."""),
        code(SETUP),
        code('''rng = np.random.default_rng(19)
n = 1 << 24
# mixed signs and magnitudes: the order of additions matters
x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
d = gpuprims.to_device(x)


def bits(value):
    return np.asarray(value).tobytes().hex()


def distinct(fn, runs=20):
    """How many different results (bit for bit) `runs` calls of fn give."""
    return len({bits(fn()) for _ in range(runs)})'''),
        md("""## Repeated runs: CuPy, PyTorch, CUB and gpuprims

Each library sums the same 2^24 float32 on the device 20 times; the count is the number of
different bit patterns it returned (1: run-to-run deterministic). CuPy and PyTorch are used where
installed."""),
        code('''counts = {}
try:
    import cupy as cp
    cx = cp.asarray(x)
    counts["cupy x.sum()"] = distinct(lambda: cx.sum().get())
except Exception as e:  # not installed, or no GPU for it
    print(f"CuPy not measured: {type(e).__name__}: {e}")
try:
    import torch
    tx = torch.from_numpy(x).cuda()
    counts["torch.sum"] = distinct(lambda: tx.sum().cpu().numpy())
except Exception as e:
    print(f"PyTorch not measured: {type(e).__name__}: {e}")
counts["CUB DeviceReduce (variant='cub')"] = distinct(lambda: gpuprims.sum(d, variant="cub"))
counts["gpuprims run_to_run"] = distinct(lambda: gpuprims.sum(d))
counts["gpuprims gpu_to_gpu"] = distinct(lambda: gpuprims.sum(d, determinism="gpu_to_gpu"))
for name, c in counts.items():
    print(f"{name:34} {c} distinct result{'s' if c > 1 else ''} in 20 runs")'''),
        md("""`compare`'s `distinct` column counts the same thing for every row it times (here over `k=10`
further runs of each), next to the time: the price of each level. With
`determinism="gpu_to_gpu"` it keeps the reproducible rows and CUB's own reproducible reduction
(CCCL 3.5's `cuda::execution::determinism::gpu_to_gpu`) where the build has it."""),
        code('''table = gpuprims.compare("reduce", x=d, variants=["single_pass", "single_pass_reproducible"], k=10, repeat=20)
table''', tags=["table"]),
        code('''gpuprims.compare("reduce", x=d, determinism="gpu_to_gpu", k=10, repeat=20)''', tags=["table"]),
        md("""## run_to_run against gpu_to_gpu

Run-to-run is a promise about one GPU and one launch configuration. Permute the input (the same
numbers, another order) or change the grid and a run_to_run sum may change its last bits; the
gpu_to_gpu sum cannot: its result depends on the multiset of values only. `GPUPRIMS_TEST_GRID`
is the test hook that overrides the reproducible kernels' grid (as a different GPU, SM count or
tuning would)."""),
        code('''import os

perm = rng.permutation(n)
dp = gpuprims.to_device(x[perm])
for level in ("run_to_run", "gpu_to_gpu"):
    a, b = gpuprims.sum(d, determinism=level), gpuprims.sum(dp, determinism=level)
    print(f"{level:10}: {a!r} vs permuted {b!r}: {'same bits' if bits(a) == bits(b) else 'DIFFERENT bits'}")

grids = {}
for grid in ("1", "7", "132", "1000"):
    os.environ["GPUPRIMS_TEST_GRID"] = grid
    grids[grid] = bits(gpuprims.sum(d, determinism="gpu_to_gpu"))
del os.environ["GPUPRIMS_TEST_GRID"]
print(f"gpu_to_gpu over grids of {', '.join(grids)} blocks: {len(set(grids.values()))} distinct result(s)")'''),
        md("""## The emulator gives the GPU's bits

The emulator runs the same kernels on the CPU. A gpu_to_gpu sum there has the GPU's bits, so a
CI machine without a GPU can check what every GPU will return (the tests compare both against
golden bits stored in the repository). A run_to_run sum has no such promise: the emulator's grid
is not the GPU's."""),
        code('''small = x[: 1 << 16]
results = {}
for backend in ("cuda", "emulator"):
    gpuprims.set_backend(backend)
    results[backend] = {level: gpuprims.sum(small, determinism=level) for level in ("run_to_run", "gpu_to_gpu")}
gpuprims.set_backend("cuda")
for level in ("run_to_run", "gpu_to_gpu"):
    g, e = results["cuda"][level], results["emulator"][level]
    print(f"{level:10}: GPU {g!r}, emulator {e!r}: {'same bits' if bits(g) == bits(e) else 'different bits'}")'''),
        md("""## Accuracy against math.fsum

Reproducible is not less accurate. Against the exactly rounded sum (`math.fsum` of the float64
values) in units of the result's last place, on data that cancels heavily (magnitudes from 1e-30 to
1e30, mostly cancelling pairs):"""),
        code('''import math

mag = 10.0 ** rng.uniform(-30, 30, 1 << 20)
hard = np.concatenate([mag, -mag * (1 + rng.standard_normal(mag.size) * 1e-7)]).astype(np.float32)
rng.shuffle(hard)
exact = math.fsum(hard.astype(np.float64).tolist())
ulp = float(np.spacing(np.float32(abs(exact)))) if exact else float(np.finfo(np.float32).tiny)
for name, value in [("numpy (pairwise)", hard.sum()),
                    ("gpuprims run_to_run", gpuprims.sum(hard)),
                    ("gpuprims gpu_to_gpu", gpuprims.sum(hard, determinism="gpu_to_gpu"))]:
    print(f"{name:22} {float(value): .8e}  error {abs(float(value) - exact) / ulp:10.3g} ulp")
print(f"{'exact (math.fsum)':22} {exact: .8e}")'''),
        md("""## Why binning works

The reproducible sum follows Ahrens, Demmel and Nguyen, "Algorithms for Efficient Reproducible
Floating Point Summation", ACM Transactions on Mathematical Software 46(3), 2020 (the method of
ReproBLAS and of CCCL's `gpu_to_gpu` reduction; `cuda/rfa.cuh` here):

1. The exponent range is cut into **fixed bins** of W bits. The bin boundaries do not depend on
   the data, only on the format.
2. Each value is split into its parts in the few highest bins that the largest |x| seen so far
   reaches. Each part is an exact multiple of its bin's unit, so adding parts within a bin is
   **exact**: no rounding, so no order dependence, as long as fewer than about 2^(p - W) parts
   are added before the bin is renormalized (p: the precision).
3. Which bins are kept depends only on max|x|, which is itself order-independent. Merging two
   states (two threads, two blocks, two chunks, two GPUs) aligns their bins and adds exactly.

The state at the end is therefore a function of the multiset of inputs; one final rounding turns
it into a float. The error bound is n 2^-42 max|x| (float32; float64: n 2^-52 max|x|) plus that
one rounding: never worse than a plain sum's bound, as the accuracy cell above shows."""),
        md("""## Scans

A scan's every prefix is a sum; a gpu_to_gpu scan needs the binned state carried through the
tile totals and the look-back. A prefix depends on the order by definition, so the property to
check is another one: each prefix is bitwise the gpu_to_gpu sum of that prefix, on the GPU and on
the emulator. The cell asks the registry whether this build has such a scan."""),
        code('''scan_rows = [v.name for v in gpuprims.variants("scan") if v.reproducible]
if not scan_rows:
    print("This build has no gpu_to_gpu float scan yet: determinism='gpu_to_gpu' is the "
          "reductions' only for now (a float cumsum with it raises ValueError).")
else:
    part = x[: 1 << 12]
    y = gpuprims.cumsum(part, determinism="gpu_to_gpu")
    picks = [0, 1, 100, part.size - 1]
    same = all(bits(y[i]) == bits(gpuprims.sum(part[: i + 1], determinism="gpu_to_gpu")) for i in picks)
    gpuprims.set_backend("emulator")
    e = gpuprims.cumsum(part, determinism="gpu_to_gpu")
    gpuprims.set_backend("cuda")
    print(f"reproducible scan rows: {', '.join(scan_rows)}")
    print(f"prefix i == gpu_to_gpu sum of x[:i+1] at {picks}: {same}")
    print(f"GPU and emulator bits equal: {bits(y) == bits(e)}")'''),
    ]
    return notebook(cells)


def scaling_out():
    cells = [
        md("""# Scaling out: a chunked scan as Dask tasks

A scan longer than one block is done by scan-then-fan (Harris, Sengupta and Owens, *GPU Gems 3*,
chapter 39, and the blog post "CUDA learning (2): parallel scan"): every block scans its tile and
writes its total, the totals are scanned, and every block adds the total of the blocks before it.
An array split into chunks over several GPUs is scanned the same way, one level up: every chunk is
scanned on its GPU, the chunks' carries are scanned, and every chunk gets its carry added.
`gpuprims.dask` builds that graph with Dask's own `cumreduction`, gpuprims' kernels doing the work
on each chunk; for NumPy chunks it builds the other classic order, reduce-then-scan: every chunk's
total first, the carries from the totals, then every chunk scanned on from its carry. Dask's
scheduler (or dask-cuda's workers, one per GPU) runs it."""),
        code('''import numpy as np
import dask
import dask.array as da
import gpuprims
import gpuprims.dask as gd

info = gpuprims.device_info()
print(f"{info['name']} ({gpuprims.backend()} backend)")


def layers(lazy):
    """The task graph by layer, in dependency order: its name and how many tasks it has."""
    graph = lazy.dask
    order, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        for dep in sorted(graph.dependencies.get(name, ())):
            visit(dep)
        order.append(name)

    visit(lazy.name)
    for name in order:
        kinds = {}
        for key in graph.layers[name]:  # (name, "extra", i): a carry; (name, i, level, j): a tree node
            kind = "carries" if key[1] == "extra" else "tree nodes" if len(key) > 1 + lazy.ndim else "chunks"
            kinds[kind] = kinds.get(kind, 0) + 1
        print(f"{name.rsplit('-', 1)[0]:24} " + ", ".join(f"{n} {k}" for k, n in kinds.items()))'''),
        md("""## The graph of a chunked scan

Eight NumPy chunks of 1000 elements. `method="sequential"` (the default): each chunk's total
(`gpuprims-cumsum-total`, gpuprims.reduce, 8 tasks, in parallel), the carries from the totals in
order (one small task on the host: the carry of chunk k is the carry of chunk k - 1 plus that
chunk's total), then each chunk scanned on its GPU continuing from its carry
(`gpuprims-cumsum-carried`, 8 tasks): the host pipeline puts the carry in front of the chunk as
it does between its own pieces, so no fan pass touches the output again. (CuPy chunks, and scans
along an axis of an N-D array, take `cumreduction`'s chain instead: each chunk scanned, the carry
passed from chunk to chunk and added to each.)"""),
        code('''x = da.from_array(np.random.default_rng(0).random(8000, dtype=np.float32) * 2 - 1, chunks=1000)
y = gd.cumsum(x)
layers(y)
got = y.compute()
print("matches numpy.cumsum:", np.allclose(got, np.cumsum(x.compute(), dtype=np.float64), atol=1e-4))'''),
        md("""`method="blelloch"`: the chunks' totals (`gpuprims-cumsum-total`, gpuprims.reduce) go
through Blelloch's up-sweep and down-sweep - the tree of the seeds' `scan3`, with chunks for
elements - so the carries take 2 log2(chunks) levels of tasks instead of a chain of chunks; then
every chunk is scanned and gets its carry."""),
        code('''z = gd.cumsum(x, method="blelloch")
layers(z)
print("same values as sequential (to rounding):", np.allclose(z.compute(), got, atol=1e-5))
try:
    z.visualize(filename=None)  # the picture, where graphviz is installed
except Exception as e:  # noqa: BLE001 - graphviz is optional
    print(f"(no picture here: {type(e).__name__})")'''),
        md("""## The same bits for any chunking: `determinism="gpu_to_gpu"`

A float sum's rounding depends on the order of its additions, and a chunking fixes an order:
`"run_to_run"` (the default) gives the same bits every time for one chunking, but another chunking -
another number of GPUs or workers - can move the last bits. `"gpu_to_gpu"` sums every chunk to
binned states (Ahrens, Demmel and Nguyen, *ACM TOMS* 46(3), 2020): integer counts of multiples of
fixed powers of two, so merging two states is exact and Dask's combine tree can have any shape;
the merged states are rounded once, at the end. The bits are those of one
`gpuprims.sum(whole_array, determinism="gpu_to_gpu")` call, on every GPU and on the emulator.
Values over twelve decades with both signs make the rounding show."""),
        code('''import math

rng = np.random.default_rng(2)
w = (rng.choice([-1.0, 1.0], 100_000) * 10.0 ** rng.uniform(-6, 6, 100_000)).astype(np.float32)
for det in ("run_to_run", "gpu_to_gpu"):
    for chunks in (100_000, 7_001, 1_000):
        s = np.float32(gd.sum(da.from_array(w, chunks=chunks), determinism=det).compute())
        print(f"{det:10}  {len(range(0, w.size, chunks)):3} chunks: {float(s)!r:>12}  bits {int(s.view(np.uint32)):#010x}")
one = gpuprims.sum(w, determinism="gpu_to_gpu")
print(f"one gpuprims.sum call, gpu_to_gpu: {float(one)!r:>12}  bits {int(one.view(np.uint32)):#010x}")
print(f"correctly rounded (math.fsum):     {float(np.float32(math.fsum(w.astype(float))))!r:>12}")'''),
        md("""## On 1 and 2 GPUs

NumPy chunks held by the workers (host memory), summed and scanned with a dask-cuda
`LocalCUDACluster`: one worker per GPU, each chunk going through its worker's GPU. Without
dask-cuda, or with one GPU, the table has the threaded scheduler on this GPU only."""),
        code('''import subprocess
import time

from gpuprims import Table
from gpuprims._table import Column

CHUNK, CHUNKS = 1 << 24, 8  # 8 chunks of 64 MiB
try:
    n_gpus = len([l for l in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.splitlines()
                  if l.startswith("GPU ")])
except OSError:
    n_gpus = 1


def timed(fn, repeat=3):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure(where, workers, client=None):
    x = da.random.default_rng(1).random(CHUNK * CHUNKS, dtype=np.float32, chunks=CHUNK)
    x = client.persist(x) if client else x.persist()
    keep = (lambda a: client.persist(a)) if client else (lambda a: a.persist())
    rows = []
    for name, fn in [("sum", lambda: gd.sum(x).compute()), ("cumsum", lambda: keep(gd.cumsum(x)))]:
        s = timed(fn)
        rows.append({"variant": f"{name}, {where}", "workers": workers, "seconds": s,
                     "gbps": x.nbytes / s / 1e9})
    return rows


rows = []
try:
    from dask_cuda import LocalCUDACluster
    from distributed import Client
except ImportError:
    LocalCUDACluster = None
if LocalCUDACluster is None:
    with dask.config.set(scheduler="threads"):
        rows += measure("threads, 1 GPU", 1)
else:
    for workers in sorted({1, min(2, n_gpus)}):
        with LocalCUDACluster(n_workers=workers, CUDA_VISIBLE_DEVICES=",".join(map(str, range(workers)))) as cluster, \\
                Client(cluster) as client:
            rows += measure(f"{workers} GPU(s)", workers, client)
table = Table(rows, [Column("variant", "case", align="<"), Column("workers", "workers"),
                     Column("seconds", "s", ".3f"), Column("gbps", "GB/s", ".1f")],
              title=f"gpuprims.dask: {CHUNKS} NumPy chunks of {CHUNK} float32, wall clock, median of 3")
table''', tags=["table"]),
        md("""The host-resident case moves every chunk over its GPU's own bus link, so two GPUs can
come close to twice the rate of one - if the host can feed both links. A pageable NumPy chunk is
packed into pinned memory by host threads before it crosses (notebook 06), and on a 2x H200 machine
two workers together pack no more than about 48 GB/s, the host's memory being the limit: two GPUs
then sum 1.27x as fast as one. `gd.pin(x)` copies the chunks into page-locked memory once (persist
it on the workers), after which every call copies them in place: 1.68x on two GPUs, 70% of each
link's roof (the README's table; `bench/bench_dask.py` measures it at 16 GiB against each GPU's
pinned host->device roof)."""),
    ]
    return notebook(cells)


def host_pipeline():
    cells = [
        md("""# The host pipeline: why pinned memory and streams matter

A NumPy array lives in pageable host memory. The GPU's copy engines read only page-locked
(pinned) memory, so a `cudaMemcpy` from a pageable buffer is staged by the driver through a small
pinned buffer of its own, a piece at a time: the bus runs at a fraction of its speed (Harris,
"How to Optimize Data Transfers in CUDA C/C++", NVIDIA developer blog). And a copy in, a kernel
and a copy out issued one after the other leave the bus idle while the kernel runs and the SMs idle
while the bus works. The CUDA C++ Programming Guide's "Overlapping Data Transfers" splits the
data into chunks and issues each chunk's copy in, kernel and copy out on streams, so that chunk
i+1 is copied in while chunk i is computed and chunk i-1 copied out.

gpuprims does both for every NumPy operand (csrc/pipeline.c): host threads pack each chunk into a
ring of pinned buffers, a copy stream moves it in, the call's stream computes, a second copy
stream moves the result out. Below, the timeline of the chunks - recorded with CUDA events on
the streams where each stage ran - without the overlap and with it."""),
        code('''import time

import numpy as np
import gpuprims
from gpuprims import Table, _core
from gpuprims._pipeline_trace import trace_pipeline
from gpuprims._table import Column

info = gpuprims.device_info()
print(f"{info['name']} ({gpuprims.backend()} backend)")
MiB = 1 << 20
N = 256 * MiB // 4  # 256 MiB of float32
x = np.random.default_rng(0).random(N, dtype=np.float32)


def timed(fn, repeat=3):
    """The median wall-clock ms of fn() after one call to warm up."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t0))
    return float(np.median(times))


def without_overlap(fn):
    """fn with the pipeline waiting after every stage (the "before" picture)."""
    def run():
        before = _core.pipeline_config()["serial"]
        _core.pipeline_config(serial=True)
        try:
            return fn()
        finally:
            _core.pipeline_config(serial=before)
    return run


def show(timeline):
    print(timeline)
    try:
        timeline.plot()
    except ImportError as e:  # matplotlib is optional: the text timeline is above
        print(e)'''),
        md("""## Pageable and pinned copies

`time_host_copy` times one host->device copy of 256 MiB from pageable memory (what a plain
`cudaMemcpy` of a NumPy array does) and from pinned memory (the bus roof). `to_device` of a
NumPy array goes through the pinned ring; with the ring's threshold raised above the array, the
same call is the plain pageable copy."""),
        code('''pageable = min(_core.time_host_copy(x.nbytes, True, False, 3))
pinned = min(_core.time_host_copy(x.nbytes, True, True, 3))
ring = timed(lambda: gpuprims.to_device(x))
threshold = _core.pipeline_config()["threshold"]
_core.pipeline_config(threshold=1 << 62)  # no NumPy array goes through the ring
try:
    plain = timed(lambda: gpuprims.to_device(x))
finally:
    _core.pipeline_config(threshold=threshold)
for name, ms in [("cudaMemcpy from pageable memory", pageable), ("cudaMemcpy from pinned memory", pinned),
                 ("to_device, plain copy", plain), ("to_device, through the pinned ring", ring)]:
    print(f"{name:36} {ms:8.2f} ms  {x.nbytes / ms / 1e6:6.1f} GB/s")'''),
        md("""## A sum of a NumPy array: the chunks' timeline

Each row is a stream (the host's packing and unpacking on the `host` row); each chunk's stages
carry its letter. Serial: every stage waits for the one before it, as a `cudaMemcpy` followed by a
kernel would. Overlapped: while the copy engine moves chunk B in, the host packs chunk C and the
SMs reduce chunk A - the call takes about as long as its busiest row."""),
        code('''sum_serial = trace_pipeline(gpuprims.sum, x, serial=True, label="sum")
show(sum_serial)'''),
        code('''sum_over = trace_pipeline(gpuprims.sum, x, label="sum")
show(sum_over)
print(f"speedup from the overlap: {sum_serial.span_ms / sum_over.span_ms:.2f}x; "
      f"copy engine busy {sum_over.busy_ms('h2d') / sum_over.span_ms:.0%} of the call")'''),
        md("""## A cumulative sum: copies both ways

A scan's result comes back as large as its input: a second copy stream carries chunk i-1 out while
chunk i+1 goes in (the bus moves data both ways at once), and the host unpacks each result chunk
(the small letters) while later chunks move."""),
        code('''scan_serial = trace_pipeline(gpuprims.cumsum, x, serial=True, label="cumsum")
show(scan_serial)
scan_over = trace_pipeline(gpuprims.cumsum, x, label="cumsum")
show(scan_over)
print(f"speedup from the overlap: {scan_serial.span_ms / scan_over.span_ms:.2f}x")'''),
        md("""## End to end against the bus and NumPy

Untraced calls, the median of three: the pipeline without overlap and with it, NumPy on the host,
and the bus roof measured in this run - pinned copies of the same bytes (for the scan, the
larger of the two directions: both run at once)."""),
        code('''roof_in = min(_core.time_host_copy(x.nbytes, True, True, 3))
roof_out = min(_core.time_host_copy(x.nbytes, False, True, 3))
rows = []
for name, fn, ref, roof in [("sum", lambda: gpuprims.sum(x), lambda: np.sum(x), roof_in),
                            ("cumsum", lambda: gpuprims.cumsum(x), lambda: np.cumsum(x), max(roof_in, roof_out))]:
    serial_ms, over_ms, numpy_ms = timed(without_overlap(fn)), timed(fn), timed(ref)
    rows.append({"variant": name, "serial": serial_ms, "overlapped": over_ms, "speedup": serial_ms / over_ms,
                 "roof": roof, "of_roof": roof / over_ms, "numpy": numpy_ms, "vs_numpy": numpy_ms / over_ms})
table = Table(rows, [Column("variant", "call", align="<"), Column("serial", "serial ms", ".1f"),
                     Column("overlapped", "overlapped ms", ".1f"), Column("speedup", "overlap gain", ".2f"),
                     Column("roof", "bus roof ms", ".1f"), Column("of_roof", "of roof", ".0%"),
                     Column("numpy", "NumPy ms", ".1f"), Column("vs_numpy", "vs NumPy", ".1f")],
              title=f"NumPy in, 256 MiB float32, wall clock, median of 3 ({info['name']})")
table''', tags=["table"]),
        md("""The overlapped call approaches the roof because the copy engine seldom waits: the host
packs the next chunk and the kernel reduces the previous one while it copies. What is left is
the first chunk's packing and the last chunk's kernel (and, for the scan, its copy out and
unpacking) - the pipeline's fill and drain, which more, smaller chunks shorten at the price of
more events and launches per call."""),
        md("""## Page-locked arrays: nothing to pack

An array that already lives in page-locked memory - `gpuprims.empty_pinned(shape, dtype)`, CuPy's
`cupyx.empty_pinned`, a PyTorch tensor's `pin_memory()` - needs no staging: the pipeline gives each
chunk's own address to the copy engine (and, for `out=` in page-locked memory, each result chunk's),
so the host row of the timeline stays empty and the call runs at the speed of the bus. A
transpose's result tiles land in the output as rows with gaps between them; when both arrays are
page-locked a small kernel stores them, over the bus, straight where they go (the output is mapped
into the GPU's address space), because the copy engine's pitched copies slow down when kernels run
between them. The chunks are the same, so the bits are too. Allocating page-locked memory is slow (about half a second a GiB
on an H200 machine: more than twenty copies of it), so it pays for data that crosses the bus more
than once."""),
        code('''xp = gpuprims.empty_pinned(x.shape, x.dtype)  # page-locked, uninitialized
xp[...] = x
yp = gpuprims.empty_pinned(x.shape, np.float32)
show(trace_pipeline(gpuprims.sum, xp, label="sum, page-locked"))
assert gpuprims.sum(xp).tobytes() == gpuprims.sum(x).tobytes()  # the same chunks, the same bits
rows = []
for name, pageable, locked, roof in [
        ("sum", lambda: gpuprims.sum(x), lambda: gpuprims.sum(xp), roof_in),
        ("cumsum", lambda: gpuprims.cumsum(x), lambda: gpuprims.cumsum(xp, out=yp), max(roof_in, roof_out))]:
    a, b = timed(pageable), timed(locked)
    rows.append({"variant": name, "pageable": a, "pinned": b, "gain": a / b, "roof": roof, "of_roof": roof / b})
Table(rows, [Column("variant", "call", align="<"), Column("pageable", "pageable ms", ".1f"),
             Column("pinned", "page-locked ms", ".1f"), Column("gain", "gain", ".2f"),
             Column("roof", "bus roof ms", ".1f"), Column("of_roof", "page-locked of roof", ".0%")],
      title=f"NumPy in, 256 MiB float32, pageable vs page-locked, median of 3 ({info['name']})")''', tags=["table"]),
    ]
    return notebook(cells)


def main():
    for name, nb in [("01_reduction", reduction()), ("02_scan", scan()), ("03_transpose", transpose()),
                     ("04_occupancy", occupancy()), ("05_axis_and_segments", axis_and_segments()),
                     ("06_host_pipeline", host_pipeline()), ("07_determinism", determinism()),
                     ("08_scaling_out", scaling_out())]:
        path = HERE / f"{name}.ipynb"
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        print(path)


if __name__ == "__main__":
    main()
