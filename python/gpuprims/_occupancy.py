"""The occupancy calculation of "Programming for the GPU", part II (how to
optimize CUDA code, from the machine's perspective: the execution model),
for a GPU described by its limits: how many blocks, warps and threads of a
kernel can be resident at once, and which limit decides.

This is the pure model, runnable anywhere; it needs no GPU.
"""
from __future__ import annotations

import math


def occupancy_model(*, sm_count: int, threads_per_sm: int, blocks_per_sm: int,
                    registers_per_sm: int, registers_per_thread: int, block,
                    shared_memory_per_sm: int = 0, shared_memory_per_block: int = 0,
                    register_granularity: int | None = None, register_partitions: int = 1) -> dict:
    """Resident blocks / warps / threads per SM and on the whole GPU.

    The article's calculation: each limit gives a number of whole blocks per
    SM - threads (threads_per_sm // threads per block), blocks
    (blocks_per_sm), registers (registers_per_sm // registers_per_thread
    threads, then whole blocks of them) and shared memory
    (shared_memory_per_sm // shared_memory_per_block) - and the smallest
    wins.  `block` is the block shape: an int or a tuple (x, y[, z]).
    `register_granularity` (e.g. 256 registers per warp on current GPUs)
    rounds each warp's registers up as the hardware allocates them; the
    article ignores it (None).  `register_partitions`: the register file is
    split among the SM's schedulers (4 since Volta) and a warp takes its
    registers from one part, so whole warps are counted per part.

    Returns a dict: blocks_per_sm, warps_per_sm, threads_per_sm,
    resident_threads (all SMs), limited_by (the deciding limit's name) and
    blocks_by (each limit's block count).
    """
    shape = (block,) if isinstance(block, int) else tuple(block)
    threads_per_block = math.prod(shape)
    if threads_per_block < 1 or registers_per_thread < 1 or sm_count < 1:
        raise ValueError("block size, registers per thread and SM count must be positive")
    warps_per_block = math.ceil(threads_per_block / 32)
    if register_granularity:
        regs_per_warp = math.ceil(registers_per_thread * 32 / register_granularity) * register_granularity
        parts = max(int(register_partitions), 1)
        by_registers = ((registers_per_sm // parts) // regs_per_warp) * parts // warps_per_block
    else:
        by_registers = (registers_per_sm // registers_per_thread) // threads_per_block
    blocks_by = {
        "threads": threads_per_sm // threads_per_block,
        "blocks": blocks_per_sm,
        "registers": by_registers,
    }
    if shared_memory_per_block:
        blocks_by["shared memory"] = shared_memory_per_sm // shared_memory_per_block
    limited_by = min(blocks_by, key=lambda k: blocks_by[k])
    blocks = blocks_by[limited_by]
    return {
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * warps_per_block,
        "threads_per_sm": blocks * threads_per_block,
        "resident_threads": blocks * threads_per_block * sm_count,
        "limited_by": limited_by,
        "blocks_by": blocks_by,
    }


# Registers are allocated per warp in units of 256, from one of the 4 parts
# of the register file (one per scheduler), on every GPU gpuprims builds for
# (compute capability 7.5 to 12.x; the CUDA occupancy calculator's model).
REGISTER_GRANULARITY = 256
REGISTER_PARTITIONS = 4


def _shared_allocated(raw) -> int:
    """Shared memory a block takes from the SM: its static and dynamic bytes
    plus the driver's reserved bytes per block, rounded up to the allocation
    unit (128 bytes from compute capability 8.0, 256 before), as the CUDA
    occupancy calculator counts it (cuda_occupancy.h)."""
    unit = 128 if raw["compute_capability"][0] >= 8 else 256
    total = raw["static_shared_bytes"] + raw["dynamic_shared_bytes"] + raw["reserved_shared_per_block"]
    return -(-total // unit) * unit


def occupancy_report(raw: dict) -> dict:
    """The occupancy API's figures for one kernel (`raw`, from the compiled
    core) with the article's model run on the same numbers: which limit
    (threads, blocks, registers, shared memory) decides, and whether the
    model agrees with the API.  Pure: runs anywhere."""
    block = raw["block_size"]
    shared = raw["static_shared_bytes"] + raw["dynamic_shared_bytes"]
    model = occupancy_model(
        sm_count=raw["sm_count"], threads_per_sm=raw["threads_per_sm"],
        blocks_per_sm=raw["max_blocks_per_sm"], registers_per_sm=raw["registers_per_sm"],
        registers_per_thread=max(raw["registers_per_thread"], 1), block=block,
        shared_memory_per_sm=raw["shared_memory_per_sm"],
        shared_memory_per_block=_shared_allocated(raw),
        register_granularity=REGISTER_GRANULARITY, register_partitions=REGISTER_PARTITIONS)
    blocks = raw["blocks_per_sm"]
    warps_per_block = math.ceil(block / raw["warp_size"])
    out = dict(raw)
    out.update({
        "shared_bytes_per_block": shared,
        "warps_per_sm": blocks * warps_per_block,
        "threads_per_sm": blocks * block,
        "max_threads_per_sm": raw["threads_per_sm"],
        "occupancy": blocks * block / raw["threads_per_sm"],
        "resident_threads": blocks * block * raw["sm_count"],
        "limited_by": model["limited_by"],
        "blocks_by": model["blocks_by"],
        "model_blocks_per_sm": model["blocks_per_sm"],
        "model_agrees": model["blocks_per_sm"] == blocks,
    })
    return out


def occupancy(family: str, variant: str = "auto", block_size: int | None = None):
    """Resident blocks, warps and threads per SM of a variant's main kernel
    (instantiated for float32 sum) on this GPU, from the CUDA occupancy API
    (cudaOccupancyMaxActiveBlocksPerMultiprocessor), with the kernel's
    registers and shared memory (cudaFuncGetAttributes) and the limit that
    decides (threads, blocks, registers or shared memory: the article's model
    run on the same numbers, cross-checked against the API in
    "model_agrees").

    block_size: threads per block (default: the variant's own).  Returns a
    dict; variant="all" returns a Table with a row per variant of the
    family (the library and host rows say that occupancy is not available
    for them).  ValueError for CUB, cuBLAS, the copy and host variants.
    """
    from . import _core
    from ._registry import lookup, variants

    if variant == "all":
        return _occupancy_table(family, block_size)
    v = lookup(family, variant)
    if v.where == "host" or v.is_baseline:
        raise ValueError(
            f"occupancy is not available for {family} variant {v.name!r}: it is "
            f"{'host code' if v.where == 'host' else 'a library call, not a kernel of gpuprims'}; "
            f"choose one of: {', '.join(x.name for x in variants(family) if not x.is_baseline)}")
    if block_size is not None and (not isinstance(block_size, int) or not 1 <= block_size <= 1024):
        raise ValueError(f"block_size must be an int from 1 to 1024, got {block_size!r}")
    report = occupancy_report(_core.occupancy(family, v.index, block_size or 0))
    report["family"], report["variant"] = family, v.name
    return report


OCCUPANCY_COLUMNS = (
    ("variant", "variant", "", "<"), ("block_size", "block", "", ">"),
    ("registers_per_thread", "regs/thread", "", ">"), ("shared_bytes_per_block", "smem/block (B)", "", ">"),
    ("blocks_per_sm", "blocks/SM", "", ">"), ("warps_per_sm", "warps/SM", "", ">"),
    ("threads_per_sm", "threads/SM", "", ">"), ("occupancy", "occupancy", ".0%", ">"),
    ("limited_by", "limited by", "", "<"), ("model_agrees", "model = API", "", "<"),
)


def _occupancy_table(family, block_size):
    from ._registry import variants
    from ._table import Column, Table

    rows = []
    for v in variants(family):
        if v.where == "host" or v.is_baseline:
            rows.append({"variant": v.name, "note": "not available (not a kernel of gpuprims)"})
            continue
        rows.append(occupancy(family, v.name, block_size))
    cols = [Column(k, h, f, a) for k, h, f, a in OCCUPANCY_COLUMNS]
    return Table(rows, cols, title=f"{family}: occupancy of each variant's main kernel (float32)",
                 plot_key="occupancy", plot_label="occupancy (resident threads / max)")
