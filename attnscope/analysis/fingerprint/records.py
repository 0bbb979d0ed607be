"""Kernel records of an attributed trace: one per GPU event, or on CPU one per leaf compute op.  Pure, no torch."""

from __future__ import annotations

from functools import lru_cache

from attnscope.analysis.fingerprint import kernels as K
from attnscope.analysis.fingerprint.attribution import Attribution, OpTree
from attnscope.analysis.fingerprint.copy_context import copy_kind
from attnscope.analysis.fingerprint.occupancy import ArchLimits, theoretical_occupancy
from attnscope.core.types import Category, KernelRecord
from attnscope.trace import CpuOp

# Kineto's "Input type" strings of floating tensors → attnscope's dtype names.
DTYPE_OF_TYPE: dict[str, str] = {
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "c10::Float8_e4m3fn": "fp8_e4m3",
    "c10::Float8_e5m2": "fp8_e5m2",
}


@lru_cache(maxsize=4096)
def _occupancy(regs: int, smem: int, threads: int, limits: ArchLimits) -> tuple[float, str] | None:
    occ = theoretical_occupancy(regs, smem, threads, limits)
    return (round(occ.pct, 2), occ.limiter) if occ else None


def op_input_dtype(op: CpuOp) -> str | None:
    """The op's first floating tensor input type, as a dtype name (None when not recorded)."""
    for t in op.input_types or ():
        d = DTYPE_OF_TYPE.get(t)
        if d is not None:
            return d
    return None


def _by_name(name: str, kind: str) -> tuple[Category, bool | None, str | None, bool]:
    """(category, tensor cores, their precision, matrix kernel?) of a GPU event, from its name."""
    c = K.classify_gpu(name, kind)
    return c, K.tensor_cores(name, c), K.tensor_core_precision(name, c), K.is_matrix_kernel(name, c)


def gpu_kernel_records(att: Attribution, limits: ArchLimits | None) -> list[KernelRecord]:
    """One record per GPU event, in start order, with the op that launched it and that op's input dtype."""
    out: list[KernelRecord] = []
    append = out.append
    ops, op_names = att.tree.ops, att.tree.op_names
    dtypes: dict[int, str | None] = {}
    # 10^5 events of a few hundred kernels and launch shapes: what depends on the name and launch shape
    # alone (classification, tensor cores, occupancy) is worked out once each.
    static: dict[tuple[object, ...], tuple[Category, bool | None, str | None, bool, float | None, str | None]] = {}
    for g, li in zip(att.gpu, att.launcher, strict=True):
        name, kind, b, regs, smem = g.name, g.kind, g.block, g.registers_per_thread, g.shared_memory_bytes
        key = (name, kind, regs, smem, b)
        info = static.get(key)
        if info is None:
            occ = None
            if limits is not None and b is not None and kind == "kernel":
                occ = _occupancy(regs or 0, smem or 0, b[0] * b[1] * b[2], limits)
            info = static[key] = (*_by_name(name, kind), *(occ or (None, None)))
        cat, tc, tc_precision, matrix, occ_pct, limiter = info
        dtype = launched_by = None
        if li >= 0:
            launched_by = op_names[li]
            if matrix:
                if li not in dtypes:
                    dtypes[li] = op_input_dtype(ops[li])  # matrix kernels only: their dtype decides the TF32 advice
                dtype = dtypes[li]
                if dtype is not None:
                    tc = K.tensor_cores_for_dtype(name, cat, dtype)  # where the dtype decides (fp32 flex)
                    tc_precision = tc_precision if tc else None
            else:
                dtype = dtypes.get(li)  # an op that launched a matrix kernel before this one
        # positional, in KernelRecord's field order (keywords cost 3× the time at 10^5 records; a test pins it):
        # name, category, duration_us, device, launched_by, tensor_cores, tensor_core_precision, grid, block,
        # registers_per_thread, shared_memory_bytes, theoretical_occupancy_pct, occupancy_limiter,
        # kineto_occupancy_pct, bytes, stream, start_us, input_dtype
        append(
            KernelRecord(
                name,
                cat,
                g.dur,
                "gpu",
                launched_by,
                tc,
                tc_precision,
                g.grid,
                b,
                regs,
                smem,
                occ_pct,
                limiter,
                g.kineto_occupancy_pct,
                g.bytes,
                g.stream,
                g.ts,
                dtype,
            )
        )
    return out


def _is_scalar_op(op: CpuOp) -> bool:
    """Whether every input the op recorded is a scalar (no dims).  Without recorded inputs: an aten op (its trace
    was made with ``record_shapes=False``) is not known to be one, and counts; any other name (a range such as
    ``record_param_comms`` or an autograd node, which record no inputs in any trace) is passed over, as before."""
    dims = op.input_dims
    if dims is None:
        return not op.name.startswith("aten::")
    return not any(isinstance(d, list) and len(d) > 0 for d in dims)


def _cpu_category(tree: OpTree, i: int) -> Category:
    """A leaf op's category; a same-dtype ``aten::copy_`` of a contiguous source (copy kind ``value``) is
    ``memcpy``: the plain memory copy a GPU runs as a Memcpy rather than a kernel, so on every device the count of
    kernels leaves it apart (``num_memcpy``), as the study counts."""
    op = tree.ops[i]
    if op.name == "aten::copy_":
        types = op.input_types or []
        if len(types) >= 2 and types[0] == types[1] and copy_kind(tree, i) == "value":
            return "memcpy"
    return K.classify_cpu(op.name)


def cpu_kernel_records(tree: OpTree) -> list[KernelRecord]:
    """On CPU the unit of work is a leaf compute aten op (no device kernels exist); a plain memory copy is a
    ``memcpy`` record (:func:`_cpu_category`)."""
    n = len(tree.ops)
    counted = [False] * n

    def candidate(i: int) -> bool:
        op = tree.ops[i]
        return op.name not in K.CPU_METADATA_OPS and not _is_scalar_op(op)

    def visit(i: int, inside_atomic: bool) -> bool:
        op = tree.ops[i]
        atomic = op.name in K.CPU_ATOMIC_OPS
        below = False
        for c in tree.children[i]:
            below |= visit(c, inside_atomic or (atomic and candidate(i)))
        if inside_atomic or not candidate(i):
            return below
        if atomic or not below:
            counted[i] = True
            return True
        return below

    for i in range(n):
        if tree.parent[i] == -1:
            visit(i, False)
    return [
        KernelRecord(
            name=tree.ops[i].name,
            category=_cpu_category(tree, i),
            duration_us=tree.ops[i].dur,
            device="cpu",
            launched_by=tree.ops[tree.parent[i]].name if tree.parent[i] >= 0 else None,
            start_us=tree.ops[i].ts,
        )
        for i in range(n)
        if counted[i]
    ]
