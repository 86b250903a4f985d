"""The occupancy model against the worked example of "Programming for the
GPU", part II (RTX A4500: 56 SMs, 2048 threads and 32 blocks per SM, 64K registers per SM,
a kernel of 68 registers per thread).  Runs anywhere."""
import pytest

import gpuprims

A4500 = dict(sm_count=56, threads_per_sm=2048, blocks_per_sm=32, registers_per_sm=65536,
             shared_memory_per_sm=164 * 1024, registers_per_thread=68)


def test_article_first_scenario_32x16_blocks():
    r = gpuprims.occupancy_model(**A4500, block=(32, 16))
    assert r["resident_threads"] == 28_672  # the article: 56 SMs x 512 threads
    assert r["blocks_per_sm"] == 1 and r["limited_by"] == "registers"
    assert r["blocks_by"]["threads"] == 4


def test_article_second_scenario_16x8_blocks():
    r = gpuprims.occupancy_model(**A4500, block=(16, 8))
    assert r["resident_threads"] == 50_176  # the article: 56 x 128 x 7
    assert r["blocks_per_sm"] == 7 and r["limited_by"] == "registers"
    assert r["blocks_by"]["threads"] == 16 and r["warps_per_sm"] == 28


def test_other_limits_decide_when_they_are_smaller():
    few_regs = dict(A4500, registers_per_thread=16)
    assert gpuprims.occupancy_model(**few_regs, block=256)["limited_by"] == "threads"
    assert gpuprims.occupancy_model(**few_regs, block=32)["limited_by"] == "blocks"
    r = gpuprims.occupancy_model(**few_regs, block=256, shared_memory_per_block=48 * 1024)
    assert r["limited_by"] == "shared memory" and r["blocks_per_sm"] == 3


def test_register_granularity_rounds_each_warp_up():
    # 36 registers x 32 lanes = 1152 per warp, allocated as 1280 in units of
    # 256: 51 warps fit in 64K, so 12 blocks of 4 warps, where the article's
    # model (65536 // 36 = 1820 threads) allows 14.
    kernel = dict(A4500, registers_per_thread=36)
    assert gpuprims.occupancy_model(**kernel, block=128)["blocks_by"]["registers"] == 14
    r = gpuprims.occupancy_model(**kernel, block=128, register_granularity=256)
    assert r["blocks_by"]["registers"] == 12 and r["blocks_per_sm"] == 12
    # The article's 16 x 8 example is the same either way: 2304 per warp, 28 warps, 7 blocks.
    assert gpuprims.occupancy_model(**A4500, block=(16, 8), register_granularity=256)["blocks_per_sm"] == 7


def test_bad_description_raises():
    with pytest.raises(ValueError):
        gpuprims.occupancy_model(**A4500, block=0)


def test_register_partitions_count_whole_warps_per_part():
    # 40 registers x 32 lanes = 1280 per warp: the whole file would hold 51
    # warps (25 blocks of 2), but each of its 4 parts (16K registers) holds
    # 12, so 48 warps: 24 blocks of 2.
    kernel = dict(A4500, registers_per_thread=40, blocks_per_sm=64, threads_per_sm=4096)
    whole = gpuprims.occupancy_model(**kernel, block=64, register_granularity=256)
    parts = gpuprims.occupancy_model(**kernel, block=64, register_granularity=256, register_partitions=4)
    assert whole["blocks_by"]["registers"] == 25 and parts["blocks_by"]["registers"] == 24
