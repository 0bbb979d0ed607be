"""Theoretical occupancy from registers, shared memory and block size.

The same arithmetic as NVIDIA's occupancy calculator: how many blocks of this kernel
fit on one SM under each limit, the smallest wins, and occupancy is the resident
warps over the SM's maximum.  Kineto's ``est. achieved occupancy %`` is 0 for many
Hopper kernels (cuDNN, nvjet, large shared memory), so this value is the one that
counts and Kineto's goes beside it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability (CUDA C Programming Guide, table of
    technical specifications per compute capability; occupancy calculator constants)."""

    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    register_alloc_unit: int  # registers, allocated per warp
    shared_memory_per_sm: int  # bytes usable by blocks (carve-out maximum)
    max_shared_memory_per_block: int  # opt-in maximum
    reserved_shared_memory_per_block: int  # taken by the system for every block
    shared_memory_alloc_unit: int


ARCH_LIMITS: dict[tuple[int, int], ArchLimits] = {
    (8, 0): ArchLimits("sm80", 64, 32, 65536, 255, 256, 167936, 166912, 1024, 128),
    (8, 6): ArchLimits("sm86", 48, 16, 65536, 255, 256, 102400, 101376, 1024, 128),
    (8, 7): ArchLimits("sm87", 48, 16, 65536, 255, 256, 167936, 166912, 1024, 128),
    (8, 9): ArchLimits("sm89", 48, 24, 65536, 255, 256, 102400, 101376, 1024, 128),
    (9, 0): ArchLimits("sm90", 64, 32, 65536, 255, 256, 233472, 232448, 1024, 128),
}

WARP_SIZE = 32
SUB_PARTITIONS = 4  # register-file partitions per SM since Volta


@dataclass(frozen=True)
class Occupancy:
    pct: float
    active_blocks_per_sm: int
    active_warps_per_sm: int
    limiter: str  # "registers", "shared_memory", "warps", "blocks", or several joined by "+"
    blocks_by_limit: dict[str, int]


def _ceil_to(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def arch_limits(cc: tuple[int, int] | None) -> ArchLimits | None:
    if cc is None:
        return None
    return ARCH_LIMITS.get(cc)


def theoretical_occupancy(
    registers_per_thread: int,
    shared_memory_bytes: int,
    threads_per_block: int,
    limits: ArchLimits,
) -> Occupancy | None:
    """Occupancy of one kernel on one SM; ``None`` if the launch cannot fit at all."""
    if threads_per_block <= 0:
        return None
    warps_per_block = -(-threads_per_block // WARP_SIZE)
    by: dict[str, int] = {
        "warps": limits.max_warps_per_sm // warps_per_block,
        "blocks": limits.max_blocks_per_sm,
    }
    if registers_per_thread > 0:
        # cuda_occupancy.h (cudaOccMaxBlocksPerSMRegsLimit): registers go to warps in
        # units of 256 within each of the SM's 4 sub-partitions, so floor per partition.
        regs_per_warp = _ceil_to(registers_per_thread * WARP_SIZE, limits.register_alloc_unit)
        warps_per_partition = (limits.registers_per_sm // SUB_PARTITIONS) // regs_per_warp
        by["registers"] = warps_per_partition * SUB_PARTITIONS // warps_per_block
    else:
        by["registers"] = by["blocks"]
    smem = _ceil_to(
        shared_memory_bytes + limits.reserved_shared_memory_per_block,
        limits.shared_memory_alloc_unit,
    )
    by["shared_memory"] = limits.shared_memory_per_sm // smem if smem > 0 else by["blocks"]
    blocks = min(by.values())
    if blocks <= 0:
        return None
    # Name every limit that binds; "blocks"/"warps" only matter when nothing else binds first.  A resource
    # the kernel does not use (0 registers recorded, no shared memory on an arch that reserves none) sets
    # no limit of its own: it only echoes the block limit, so it is never named.
    unused = {"registers"} if registers_per_thread <= 0 else set()
    if smem <= 0:
        unused.add("shared_memory")
    binding = [k for k in ("registers", "shared_memory", "warps", "blocks") if by[k] == blocks and k not in unused]
    warps = blocks * warps_per_block
    return Occupancy(
        pct=100.0 * warps / limits.max_warps_per_sm,
        active_blocks_per_sm=blocks,
        active_warps_per_sm=warps,
        limiter="+".join(binding),
        blocks_by_limit=by,
    )
