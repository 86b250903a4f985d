"""The occupancy calculation of seed 001_ea7aef14ff7ea879 (execution model),
for a GPU described by its limits: how many blocks, warps and threads of a
kernel can be resident at once, and which limit decides.

This is the pure model, runnable anywhere; it needs no GPU.
"""
from __future__ import annotations

import math


def occupancy_model(*, sm_count: int, threads_per_sm: int, blocks_per_sm: int,
                    registers_per_sm: int, registers_per_thread: int, block,
                    shared_memory_per_sm: int = 0, shared_memory_per_block: int = 0,
                    register_granularity: int | None = None) -> dict:
    """Resident blocks / warps / threads per SM and on the whole GPU.

    The seed's calculation: each limit gives a number of whole blocks per
    SM - threads (threads_per_sm // threads per block), blocks
    (blocks_per_sm), registers (registers_per_sm // registers_per_thread
    threads, then whole blocks of them) and shared memory
    (shared_memory_per_sm // shared_memory_per_block) - and the smallest
    wins.  `block` is the block shape: an int or a tuple (x, y[, z]).
    `register_granularity` (e.g. 256 registers per warp on current GPUs)
    rounds each warp's registers up as the hardware allocates them; the
    seed ignores it (None).

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
        by_registers = (registers_per_sm // regs_per_warp) // warps_per_block
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
