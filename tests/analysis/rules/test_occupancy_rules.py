"""Each rounding rule of NVIDIA's occupancy calculator, on every architecture in the table.

Every expected value below is worked by hand from the rules of the CUDA occupancy
calculator (cuda_occupancy.h) and the per-compute-capability limits of the CUDA C
Programming Guide ("Technical Specifications per Compute Capability"):

    limit              sm80     sm86     sm87     sm89     sm90
    warps per SM         64       48       48       48       64
    blocks per SM        32       16       16       24       32
    registers per SM  65536    65536    65536    65536    65536
    smem per SM      167936   102400   167936   102400   233472   (164, 100, 164, 100, 228 KiB)
    reserved / block   1024     1024     1024     1024     1024
    smem unit           128      128      128      128      128
    register unit       256 registers per warp, in 4 sub-partitions of 16384 registers

Rules, in the calculator's order:
  warps/block   = ceil(threads / 32)
  regs/warp     = ceil(regs * 32, 256);  warps by regs = floor(16384 / regs/warp) * 4
  blocks(regs)  = floor(warps by regs / warps/block)
  smem/block    = ceil(smem + 1024, 128); blocks(smem) = floor(smem per SM / smem/block)
  blocks(warps) = floor(max warps / warps/block)
  active blocks = min of those and the per-SM block limit; occupancy = warps / max warps.

Each case is chosen so that dropping one rule changes the answer; the docstring of each
says what the wrong arithmetic would give.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from attnscope.analysis.fingerprint.occupancy import ARCH_LIMITS, theoretical_occupancy

SM80, SM86, SM87, SM89, SM90 = (ARCH_LIMITS[cc] for cc in ((8, 0), (8, 6), (8, 7), (8, 9), (9, 0)))


def test_the_table_holds_the_programming_guide_limits():
    """The constants themselves, per architecture (CUDA C Programming Guide, table 21/24)."""
    rows = {
        "sm80": (64, 32, 65536, 167936, 166912),
        "sm86": (48, 16, 65536, 102400, 101376),
        "sm87": (48, 16, 65536, 167936, 166912),
        "sm89": (48, 24, 65536, 102400, 101376),
        "sm90": (64, 32, 65536, 233472, 232448),
    }
    for lim in (SM80, SM86, SM87, SM89, SM90):
        got = (
            lim.max_warps_per_sm,
            lim.max_blocks_per_sm,
            lim.registers_per_sm,
            lim.shared_memory_per_sm,
            lim.max_shared_memory_per_block,
        )
        assert got == rows[lim.name], lim.name
        assert (lim.register_alloc_unit, lim.reserved_shared_memory_per_block, lim.shared_memory_alloc_unit) == (
            256,
            1024,
            128,
        )


# ---- register allocation granularity ---------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "blocks", "pct"),
    [
        # 33 regs · 32 = 1056 → 1280 per warp (5 units of 256).  16384 // 1280 = 12 warps per
        # partition → 48 warps.  Block 64 threads = 2 warps → 24 blocks by registers.
        # sm90: warps allow 64 // 2 = 32, blocks 32 → 24 blocks = 48 warps = 48/64 = 75 %.
        # Without the 256 rounding: 16384 // 1056 = 15 → 60 warps → 30 blocks → 93.75 %.
        (SM90, 24, 75.0),
        # sm80: same limits as sm90 for this launch → 75 %.
        (SM80, 24, 75.0),
        # sm86/sm87: 48 warps → 24 blocks by warps, but only 16 blocks per SM → 16 blocks,
        # 32 warps = 32/48 = 66.67 %, limited by blocks (registers allow 24).
        (SM86, 16, 100 * 32 / 48),
        (SM87, 16, 100 * 32 / 48),
        # sm89: 24 blocks by registers, 24 by warps (48 // 2), 24 blocks per SM → 48/48 = 100 %.
        (SM89, 24, 100.0),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_register_allocation_granularity(limits, blocks, pct):
    occ = theoretical_occupancy(33, 0, 64, limits)
    assert occ is not None
    assert occ.blocks_by_limit["registers"] == 24
    assert occ.active_blocks_per_sm == blocks
    assert occ.pct == pytest.approx(pct)


def test_register_granularity_alone_decides_sm90():
    """The sm90 case above, limiter named: registers (24) beat warps (32) and blocks (32)."""
    occ = theoretical_occupancy(33, 0, 64, SM90)
    assert occ is not None
    assert occ.limiter == "registers"
    assert occ.blocks_by_limit == {"warps": 32, "blocks": 32, "registers": 24, "shared_memory": 228}


def test_registers_per_sub_partition_not_per_sm_on_sm86_and_sm89():
    """88 regs · 32 = 2816 per warp (already 11·256).  Per partition 16384 // 2816 = 5 warps → 20
    warps per SM; whole-SM arithmetic would give 65536 // 2816 = 23.  1-warp blocks: 20 blocks by
    registers.  sm86 allows 16 blocks per SM, which bind first: 16/48 = 33.33 %.  sm89 allows 24,
    so registers bind: 20/48 = 41.67 % (whole-SM arithmetic: 23/48 = 47.9 %)."""
    occ86 = theoretical_occupancy(88, 0, 32, SM86)
    occ89 = theoretical_occupancy(88, 0, 32, SM89)
    assert occ86 is not None and occ89 is not None
    assert occ86.blocks_by_limit["registers"] == occ89.blocks_by_limit["registers"] == 20
    assert occ86.pct == pytest.approx(100 * 16 / 48) and occ86.limiter == "blocks"
    assert occ89.pct == pytest.approx(100 * 20 / 48) and occ89.limiter == "registers"


# ---- warps per block rounded up ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "by_warps", "pct"),
    [
        # 161 threads → ceil(161/32) = 6 warps (5 full + 1 partial).  sm86: 48 // 6 = 8 blocks →
        # 48 warps = 100 %.  Rounding down (5 warps) would give 48 // 5 = 9 blocks of 5 = 93.75 %.
        (SM86, 8, 100.0),
        (SM87, 8, 100.0),
        (SM89, 8, 100.0),
        # sm80/sm90: 64 // 6 = 10 blocks → 60 warps = 93.75 %.  Rounding down: 64 // 5 = 12
        # blocks of 5 warps = 60 warps → the same 93.75 % but 12 blocks; the count tells.
        (SM80, 10, 93.75),
        (SM90, 10, 93.75),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_warps_per_block_round_up(limits, by_warps, pct):
    # 16 regs → 512 per warp → 32 warps per partition → 128 warps: registers never bind here.
    occ = theoretical_occupancy(16, 0, 161, limits)
    assert occ is not None
    assert occ.blocks_by_limit["warps"] == by_warps
    assert occ.active_blocks_per_sm == by_warps
    assert occ.active_warps_per_sm == 6 * by_warps
    assert occ.pct == pytest.approx(pct)
    assert occ.limiter == "warps"


def test_partial_warp_counts_in_register_limit_too():
    """65 threads = 3 warps (not 2).  64 regs → 2048 per warp → 8 per partition → 32 warps.
    Registers: 32 // 3 = 10 blocks → 30 warps; sm90 warps 64 // 3 = 21, blocks 32 →
    10 blocks = 30/64 = 46.875 %.  With 2 warps per block it would be 16 blocks, 50 %."""
    occ = theoretical_occupancy(64, 0, 65, SM90)
    assert occ is not None
    assert occ.blocks_by_limit["registers"] == 10
    assert occ.active_warps_per_sm == 30
    assert occ.pct == pytest.approx(46.875)


# ---- shared memory: 128-byte granularity and 1 KiB reserved per block ---------------------------


def test_shared_memory_rounds_to_128_bytes_on_sm89():
    """33109 + 1024 = 34133 B → ceil to 128 = 267·128 = 34176 B.  102400 // 34176 = 2 blocks
    (3 would need 102528).  Unrounded: 102400 // 34133 = 3 (3·34133 = 102399).
    Block 128 threads = 4 warps, 32 regs (64 warps by registers) → 2 blocks = 8/48 = 16.67 %
    (unrounded: 12/48 = 25 %)."""
    occ = theoretical_occupancy(32, 33109, 128, SM89)
    assert occ is not None
    assert occ.blocks_by_limit["shared_memory"] == 2
    assert occ.pct == pytest.approx(100 * 8 / 48)
    assert occ.limiter == "shared_memory"


def test_shared_memory_rounding_on_sm90():
    """57344 + 1024 = 58368 = 456·128, exact; 233472 // 58368 = 4 (4·58368 = 233472, fits
    exactly).  One more byte: 58369 → 457·128 = 58496 → 233472 // 58496 = 3.
    Block 256 threads = 8 warps, 32 regs (64 warps → 8 blocks by registers), warps 8:
    4 blocks = 32 warps = 50 %; 3 blocks = 24 warps = 37.5 %."""
    at = theoretical_occupancy(32, 57344, 256, SM90)
    over = theoretical_occupancy(32, 57345, 256, SM90)
    assert at is not None and over is not None
    assert at.blocks_by_limit["shared_memory"] == 4 and at.pct == pytest.approx(50.0)
    assert over.blocks_by_limit["shared_memory"] == 3 and over.pct == pytest.approx(37.5)


def test_reserved_shared_memory_per_block_on_sm80():
    """41984 B = 167936 / 4 exactly.  Plus 1024 reserved = 43008 (= 336·128) → 167936 // 43008
    = 3 blocks (4 would need 172032).  Without the reservation: 4 blocks.
    Block 256 threads = 8 warps, 32 regs → 8 blocks by registers, 8 by warps:
    3 blocks = 24 warps = 37.5 % (without the reservation 32 warps = 50 %)."""
    occ = theoretical_occupancy(32, 41984, 256, SM80)
    assert occ is not None
    assert occ.blocks_by_limit["shared_memory"] == 3
    assert occ.pct == pytest.approx(37.5)
    assert occ.limiter == "shared_memory"


def test_reserved_shared_memory_applies_to_a_kernel_without_shared_memory():
    """No dynamic or static shared memory still takes 1024 B per block: sm86 102400 // 1024 =
    100 blocks by shared memory (not 'unlimited')."""
    occ = theoretical_occupancy(32, 0, 128, SM86)
    assert occ is not None
    assert occ.blocks_by_limit["shared_memory"] == 100


def test_sm87_has_sm80_shared_memory_with_sm86_warps():
    """60000 + 1024 = 61024 → 477·128 = 61056 B.  sm87 (164 KiB): 167936 // 61056 = 2 blocks;
    sm86 (100 KiB): 102400 // 61056 = 1.  Block 4 warps: sm87 8/48 = 16.67 %, sm86 4/48 = 8.33 %;
    sm80 (64 warps): 2 blocks = 8/64 = 12.5 %."""
    occ87 = theoretical_occupancy(32, 60000, 128, SM87)
    occ86 = theoretical_occupancy(32, 60000, 128, SM86)
    occ80 = theoretical_occupancy(32, 60000, 128, SM80)
    assert occ87 is not None and occ86 is not None and occ80 is not None
    assert occ87.pct == pytest.approx(100 * 8 / 48)
    assert occ86.pct == pytest.approx(100 * 4 / 48)
    assert occ80.pct == pytest.approx(12.5)


def test_largest_opt_in_block_fits_once_and_one_byte_more_does_not():
    """sm90: 232448 (227 KiB opt-in) + 1024 = 233472 = the whole SM → 1 block; 384 threads =
    12 warps = 18.75 %.  232449 → 233473 → 233600 > 233472 → no block fits → None.
    sm86: 101376 + 1024 = 102400 → 1 block of 12 warps = 25 %; 101377 → None."""
    at90 = theoretical_occupancy(32, 232448, 384, SM90)
    at86 = theoretical_occupancy(32, 101376, 384, SM86)
    assert at90 is not None and at90.pct == pytest.approx(18.75)
    assert at86 is not None and at86.pct == pytest.approx(25.0)
    assert theoretical_occupancy(32, 232449, 384, SM90) is None
    assert theoretical_occupancy(32, 101377, 384, SM86) is None


# ---- block limits per SM ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "blocks", "pct"),
    [
        # 1-warp blocks, 16 regs (512 per warp → 128 warps by registers), no shared memory:
        # only the per-SM block limit binds.  blocks / max warps:
        (SM80, 32, 50.0),  # 32/64
        (SM86, 16, 100 * 16 / 48),  # 33.33 %
        (SM87, 16, 100 * 16 / 48),
        (SM89, 24, 50.0),  # 24/48
        (SM90, 32, 50.0),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_block_limit_per_sm(limits, blocks, pct):
    occ = theoretical_occupancy(16, 0, 32, limits)
    assert occ is not None
    assert occ.active_blocks_per_sm == blocks
    assert occ.pct == pytest.approx(pct)
    assert occ.limiter == "blocks"


@pytest.mark.parametrize(
    ("limits", "pct"),
    [
        # 1024 threads = 32 warps.  sm80/sm90: 64 // 32 = 2 blocks → 100 %.  sm86/87/89:
        # 48 // 32 = 1 block → 32/48 = 66.67 %.  32 regs → 1024 per warp → 64 warps → 2 blocks.
        (SM80, 100.0),
        (SM86, 100 * 32 / 48),
        (SM87, 100 * 32 / 48),
        (SM89, 100 * 32 / 48),
        (SM90, 100.0),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_max_warps_per_sm(limits, pct):
    occ = theoretical_occupancy(32, 0, 1024, limits)
    assert occ is not None
    assert occ.pct == pytest.approx(pct)


# ---- degenerate launches ------------------------------------------------------------------------


def test_one_thread_is_one_warp():
    """A 1-thread block still takes a whole warp: 16 regs, sm90 → 32 blocks (the block limit)
    of 1 warp = 32/64 = 50 %."""
    occ = theoretical_occupancy(16, 0, 1, SM90)
    assert occ is not None
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm, occ.pct) == (32, 32, 50.0)


def test_unknown_registers_leave_the_register_limit_out():
    """A trace without 'registers per thread' gives 0: no register limit (it equals the block
    limit), so 128-thread blocks on sm90 are limited by warps: 16 blocks = 100 %."""
    occ = theoretical_occupancy(0, 0, 128, SM90)
    assert occ is not None
    assert occ.blocks_by_limit["registers"] == 32
    assert occ.pct == 100.0 and occ.limiter == "warps"


def test_one_register_is_one_allocation_unit():
    """1 reg · 32 = 32 → 256 per warp; 16384 // 256 = 64 warps per partition → 256 warps → 256
    one-warp blocks by registers (never binding)."""
    occ = theoretical_occupancy(1, 0, 32, SM90)
    assert occ is not None
    assert occ.blocks_by_limit["registers"] == 256


def test_block_counts_are_whole_numbers():
    """Blocks and warps are integers (the JSON shows 24, not 24.0), whichever limit binds."""
    for regs, smem, threads in ((33, 0, 64), (32, 57344, 256), (16, 0, 161), (16, 0, 32)):
        occ = theoretical_occupancy(regs, smem, threads, SM90)
        assert occ is not None
        assert type(occ.active_blocks_per_sm) is int and type(occ.active_warps_per_sm) is int
        assert all(type(v) is int for v in occ.blocks_by_limit.values())


def test_an_arch_without_reserved_shared_memory_leaves_the_shared_memory_limit_out():
    """An architecture that reserves nothing per block (before CUDA 11 none did), and a kernel
    with no shared memory: 0 bytes per block, so shared memory limits nothing; like the
    register limit of a kernel with no register count, it takes the per-SM block limit (32).
    sm80's other limits, 32 regs, 128 threads = 4 warps: warps 64 // 4 = 16, registers
    1024/warp → 16384 // 1024 = 16 per partition · 4 = 64 warps // 4 = 16 blocks → 100 %."""
    no_reserve = replace(SM80, reserved_shared_memory_per_block=0)
    occ = theoretical_occupancy(32, 0, 128, no_reserve)
    assert occ is not None
    assert occ.blocks_by_limit == {"warps": 16, "blocks": 32, "registers": 16, "shared_memory": 32}
    assert occ.pct == 100.0 and occ.limiter == "registers+warps"


def test_a_resource_the_kernel_does_not_use_is_never_named_the_limiter() -> None:
    """sm90, 1 warp per block: 64 // 1 = 64 by warps, 32 by blocks. With 0 registers recorded the register limit
    only echoes the block limit (32), so the limiter is 'blocks'. On an sm80 that reserved no shared memory per
    block, 0 B of shared memory likewise echoes the block limit (32) and is not named."""
    from dataclasses import replace

    from attnscope.analysis.fingerprint.occupancy import ARCH_LIMITS, theoretical_occupancy

    h = theoretical_occupancy(0, 0, 32, ARCH_LIMITS[(9, 0)])
    assert h is not None and (h.active_blocks_per_sm, h.limiter) == (32, "blocks")
    bare = replace(ARCH_LIMITS[(8, 0)], reserved_shared_memory_per_block=0)
    a = theoretical_occupancy(0, 0, 32, bare)
    assert a is not None and a.limiter == "blocks" and a.blocks_by_limit["shared_memory"] == 32
    r = theoretical_occupancy(32, 0, 32, ARCH_LIMITS[(9, 0)])  # 32 regs: 1024/warp, 16384 per partition → 64 warps
    assert r is not None and r.limiter == "blocks" and r.blocks_by_limit["registers"] == 64
