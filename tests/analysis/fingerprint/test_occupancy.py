"""Theoretical occupancy against hand arithmetic (CUDA occupancy calculator rules)."""

from __future__ import annotations

import pytest

from attnscope.analysis.fingerprint.occupancy import ARCH_LIMITS, theoretical_occupancy

SM90 = ARCH_LIMITS[(9, 0)]


def test_flash_fwd_on_h200_is_12_5_pct_limited_by_registers_and_smem():
    # 255 regs → 255·32 = 8160 → 8192 per warp (256-unit); 16384 per sub-partition / 8192 = 2
    # warps × 4 partitions = 8 warps; block = 128 threads = 4 warps → 2 blocks by registers.
    # smem 49152 + 1024 reserved = 50176; 233472 // 50176 = 4 blocks by smem.
    occ = theoretical_occupancy(255, 49152, 128, SM90)
    assert occ is not None
    assert occ.blocks_by_limit["registers"] == 2
    assert occ.blocks_by_limit["shared_memory"] == 4
    assert occ.active_warps_per_sm == 8
    assert occ.pct == pytest.approx(100 * 8 / 64)  # 12.5 %
    assert occ.limiter == "registers"


def test_flash_fwd_with_96k_smem_binds_both_limits():
    # smem 98304 + 1024 = 99328; 233472 // 99328 = 2 blocks, same as registers → both named.
    occ = theoretical_occupancy(255, 98304, 128, SM90)
    assert occ is not None and occ.active_blocks_per_sm == 2
    assert occ.limiter == "registers+shared_memory"


def test_cudnn_sdpa_kernel_is_18_75_pct():
    # 168 regs → 5376 per warp; 16384 // 5376 = 3 warps per partition → 12 warps;
    # block 384 threads = 12 warps → 1 block.  smem 134144+1024 = 135168 → 1 block.
    occ = theoretical_occupancy(168, 134144, 384, SM90)
    assert occ is not None
    assert occ.active_blocks_per_sm == 1
    assert occ.pct == pytest.approx(100 * 12 / 64)  # 18.75 %
    assert occ.limiter == "registers+shared_memory"


def test_register_partitioning_floors_per_sub_partition():
    # 40 regs → 1280 per warp.  Whole-SM arithmetic would give 65536//1280 = 51 warps;
    # per sub-partition 16384//1280 = 12 → 48 warps.  Block of 32 threads (1 warp):
    # 48 blocks by registers, but max 32 blocks per SM on sm90 → 32 warps = 50 %.
    occ = theoretical_occupancy(40, 0, 32, SM90)
    assert occ is not None
    assert occ.blocks_by_limit["registers"] == 48
    assert occ.active_blocks_per_sm == 32 and occ.limiter == "blocks"
    assert occ.pct == pytest.approx(50.0)


def test_elementwise_kernel_full_occupancy_limited_by_warps():
    # 18 regs → 576 → 768 per warp (256-unit); 16384//768 = 21 warps/partition → 84 ≥ 64.
    # block 128 = 4 warps → 64//4 = 16 blocks by warps → 100 %.
    occ = theoretical_occupancy(18, 0, 128, SM90)
    assert occ is not None and occ.pct == pytest.approx(100.0)
    assert occ.limiter == "warps"


@pytest.mark.parametrize(
    ("cc", "regs", "smem", "threads", "expected_pct", "limiter"),
    [
        # sm80: 164 KB smem/SM. 64 regs → 2048/warp, 16384//2048 = 8 → 32 warps; block 256 = 8 warps → 4 blocks.
        # smem 40000+1024 = 41024 → 41088 (128-unit); 167936 // 41088 = 4 → both bind; 32/64 = 50 %.
        ((8, 0), 64, 40000, 256, 50.0, "registers+shared_memory"),
        # sm86: 48 warps/SM, 100 KB smem. 32 regs → 1024/warp, 16 per partition → 64 warps;
        # block 512 = 16 warps → 3 blocks by warps (48//16), 4 by regs; smem 0 → 48/48 = 100 %.
        ((8, 6), 32, 0, 512, 100.0, "warps"),
        # sm89: 48 warps, 24 blocks, 100 KB smem. smem 48000+1024 = 49024 → 49024 (already ×128);
        # 102400 // 49024 = 2 blocks of 4 warps → 8/48 = 16.67 %.
        ((8, 9), 32, 48000, 128, 100 * 8 / 48, "shared_memory"),
    ],
)
def test_other_architectures(cc, regs, smem, threads, expected_pct, limiter):
    occ = theoretical_occupancy(regs, smem, threads, ARCH_LIMITS[cc])
    assert occ is not None
    assert occ.pct == pytest.approx(expected_pct)
    assert occ.limiter == limiter


def test_launch_that_cannot_fit_gives_none():
    assert theoretical_occupancy(32, 240000, 128, SM90) is None
    assert theoretical_occupancy(32, 0, 0, SM90) is None
