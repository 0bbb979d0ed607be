"""The one place that classifies kernels and CPU ops: category, attention family, tensor cores.

Every rule is a row in an ordered table (first match wins) so the README can quote it
and a test can pin each row.  Names were read off real H200 traces (torch 2.11, CUDA 13).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Literal

from attnscope.core.types import Category, KernelRecord

_I = re.IGNORECASE

# (pattern, category) for GPU kernel names. Order matters: copy kernels are launched
# through the elementwise templates, so they are matched first. "gemm" not after "fb": fbgemm_gpu is a library's
# namespace (its embedding lookups, permutes and quantizers carry it); its matrix kernels are named by cutlass.
# "Cijk_" opens the GEMM kernels of ROCm's Tensile (hipBLAS/hipBLASLt: C[i,j] = sum over k of A·B), which name no
# "gemm". "norm" not before "al_": a random normal fill (aten::normal_, randn) is no reduction; "reduce" not before
# "d_divisor": cuDNN passes a `cudnn::reduced_divisor` to kernels of every kind (its FFT convolutions).
GPU_CATEGORY_RULES: tuple[tuple[re.Pattern[str], Category], ...] = (
    (re.compile(r"nccl|all_?reduce|all_?gather|reduce_?scatter|sendrecv", _I), "communication"),
    (
        re.compile(
            r"flash_fwd|flash_bwd|flash::|pytorch_flash|fmha|attention|_sdpa_|"
            r"cudnn_generated_fort_native_sdpa|flex_attention|flex_decoding|mha_fwd|mha_bwd|"
            r"cudnn::fusion::|cudnn::compute_dot_do_o|_attn_fwd|_attn_bwd|FlashAttn|BatchDecodeWith|BatchPrefillWith|"
            r"SingleDecodeWith|SinglePrefillWith|MergeStates|MergeState",
            _I,
        ),
        "attention",
    ),
    (
        re.compile(
            r"nvjet|(?<!fb)gemm|^Cijk_|xmma|cutlass|cublas|gemv|sgemm|hgemm|matmul|triton_mm|"
            r"triton_tem_fused_mm|triton_tem_fused_addmm|triton_tem_fused_bmm|Kernel2",
            _I,
        ),
        "gemm",
    ),
    (re.compile(r"softmax", _I), "softmax"),
    (
        re.compile(
            r"copy_kernel|direct_copy|_copy_kernel|CatArrayBatchedCopy|transpose|"
            r"contiguous|to_copy|convert",
            _I,
        ),
        "copy",
    ),
    (
        re.compile(
            r"reduce(?!d_divisor)|norm(?!al_)|triton_red_|triton_per_|cub::|scan|argmax|argmin|"
            r"cross_entropy|nll_loss|sum_kernel",
            _I,
        ),
        "reduction",
    ),
    (
        re.compile(
            r"elementwise|triton_poi_|fill|triu_tril|index|where|masked|scatter|gather|multi_tensor_apply|"
            r"embedding|dropout|arange|rand|cat_|unary|binary",
            _I,
        ),
        "elementwise",
    ),
)

# aten ops whose time on CPU is matrix work / attention / etc.
CPU_CATEGORY_RULES: tuple[tuple[re.Pattern[str], Category], ...] = (
    (
        re.compile(
            r"flash_attention|efficient_attention|cudnn_attention|flex_attention|"
            r"scaled_dot_product"
        ),
        "attention",
    ),
    (re.compile(r"^aten::(mm|bmm|addmm|baddbmm|addbmm|matmul|linear|_addmm_activation)$"), "gemm"),
    (re.compile(r"softmax"), "softmax"),
    (re.compile(r"^aten::(copy_|clone|_to_copy|contiguous|to)$"), "copy"),
    (
        re.compile(r"^aten::(sum|mean|all|any|amax|amin|max|min|norm|argmax|argmin|logsumexp)"),
        "reduction",
    ),
)

# Ops that allocate or reshape metadata only: never counted as CPU "kernels".
CPU_METADATA_OPS = frozenset(
    {
        "aten::empty",
        "aten::empty_strided",
        "aten::empty_like",
        "aten::view",
        "aten::_unsafe_view",
        "aten::as_strided",
        "aten::expand",
        "aten::reshape",
        "aten::_reshape_alias",
        "aten::transpose",
        "aten::t",
        "aten::permute",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::slice",
        "aten::select",
        "aten::detach",
        "aten::alias",
        "aten::resize_",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::result_type",
        "aten::lift_fresh",
        "aten::scalar_tensor",
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::set_",
        "aten::split",
        "aten::chunk",
        "aten::unbind",
        "aten::narrow",
        "aten::flatten",
        "aten::unflatten",
        "aten::view_as",
        "aten::expand_as",
        "aten::contiguous",
        "aten::_has_compatible_shallow_copy_type",
        "aten::record_stream",
    }
)

# Fused ops treated as one CPU "kernel" even when they call other aten ops inside.
CPU_ATOMIC_OPS = frozenset(
    {
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",  # one fused op, as the forward
        "aten::_flash_attention_forward",
        "aten::_efficient_attention_forward",
        "aten::mm",
        "aten::bmm",
        "aten::addmm",
        "aten::baddbmm",
        "aten::_softmax",
        "aten::copy_",
    }
)


# Attention kernels that finish or prepare another kernel's work rather than multiply matrices: split-KV
# combine / merge / reduction kernels (FlashAttention's splitkv_combine, FlashInfer's MergeStates*, cuDNN's
# lean_reduction_kernel: they merge partial outputs by their log-sum-exp, elementwise by construction) and the
# backward's helpers (rowwise dO·O, dQ conversion).  Attention by what they serve, never matrix work: a
# CUDA-core verdict on them says nothing about the dtype or the matrix kernels.
ATTENTION_HELPER = re.compile(
    r"splitkv_combine|flash_fwd_combine|combine_kernel|MergeStates|merge_state|lean_reduction|dot_do_o|convert_dq|"
    r"triton_(?:per|red|poi)_fused_\w*flex_attention",  # inductor's generated reductions: no tl.dot, only templates
    _I,
)

# Tensor cores, by kernel name: (pattern, uses tensor cores, why). First match wins.
# Names that match no row are "unknown" (None): we never guess.  The rows were checked against
# Nsight Compute's tensor-pipe counters on the H200 (matrix MMA = HMMA minus HFMA2.MMA, wgmma
# included) for every kernel the variants launch in bf16, fp16 and fp32, forward and backward:
# tests/data/ncu/h200_tensor_pipe.csv, pinned row by row in tests/analysis/fingerprint/test_tensor_cores_ncu.py.
# Said to the user, so it names a page of the docs rather than the test data behind it (docs/fingerprint.md cites both).
NCU_EVIDENCE = "ncu tensor-pipe counters read on an H200: docs/fingerprint.md, 'Kernel categories and tensor cores'"
TENSOR_CORE_RULES: tuple[tuple[re.Pattern[str], bool, str], ...] = (
    (
        ATTENTION_HELPER,
        False,
        "attention helper (split-KV combine or merge, rowwise dO·O, dQ conversion): no matrix MMA (flash's: "
        + NCU_EVIDENCE
        + "; FlashInfer's MergeStates and cuDNN's lean_reduction merge partial outputs elementwise)",
    ),
    (
        re.compile(r"fmha_cutlass[FB]_f32", _I),
        True,
        "TF32: the cutlass kernels run fp32 inputs as TF32 MMA on tensor cores (" + NCU_EVIDENCE + ")",
    ),
    (
        re.compile(r"ffma|sgemm|gemv|_simt_", _I),
        False,
        "fp32 FMA on CUDA cores (ffma / sgemm / gemv / SIMT)",
    ),
    (
        re.compile(r"wgmma|hgmma|gmma|hmma|imma|tensorop|_tf32|bf16|f16|s16816|h16816|h1688", _I),
        True,
        "MMA instruction or 16-bit/TF32 operand type in the kernel name",
    ),
    (re.compile(r"nvjet", _I), True, "cuBLAS nvjet kernels on sm90 issue wgmma"),
    (
        re.compile(r"flash_fwd|flash_bwd|pytorch_flash|flash::", _I),
        True,
        "FlashAttention kernels are built on mma/wgmma",
    ),
    (
        re.compile(r"cudnn_generated_fort_native_sdpa", _I),
        True,
        "cuDNN fused SDPA (name carries wgmma/hmma on sm90/sm80)",
    ),
    (
        re.compile(r"triton_tem_fused_flex_attention", _I),
        True,
        "its PTX holds wgmma.mma_async (read on an H200, bf16; docs/results/raw/h200_probes.txt)",
    ),
)


_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z-]|\\[A-Z]")  # (?-i:...) or an upper-case escape (\W, \S, \D, \B)


def lowered(pat: re.Pattern[str]) -> re.Pattern[str] | None:
    """``pat`` without re.IGNORECASE, to search a lowercased ASCII name: the same answer, without the per-character
    case folding (kernel names run to hundreds of characters: 1.2 ms against 9.2 ms for the category rules over a
    training step's 76 names).  None where lowercasing could change the pattern's meaning (escapes, inline flags)."""
    if not pat.flags & re.IGNORECASE or _INLINE_FLAGS.search(pat.pattern):
        return None
    return re.compile(pat.pattern.lower(), pat.flags & ~re.IGNORECASE)


def search_ignoring_case(pat: re.Pattern[str], low_pat: re.Pattern[str] | None, name: str) -> bool:
    """``pat.search(name)`` for a re.IGNORECASE ``pat``, through its :func:`lowered` twin where the name is ASCII."""
    if low_pat is not None and name.isascii():
        return low_pat.search(name.lower()) is not None
    return pat.search(name) is not None


def _first_hit(rules: tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...], name: str) -> int:
    """The index of the first rule whose pattern (first) or its lowered twin (second) finds ``name``; -1 if none."""
    low = name.lower() if name.isascii() else None
    for i, (pat, lowered) in enumerate(rules):
        if (lowered.search(low) if lowered is not None and low is not None else pat.search(name)) is not None:
            return i
    return -1


@functools.cache
def classify_gpu(name: str, kind: str = "kernel") -> Category:
    if kind == "memcpy":
        return "memcpy"
    if kind == "memset":
        return "memset"
    i = _first_hit(_GPU_CATEGORY_LOWERED, name)
    return GPU_CATEGORY_RULES[i][1] if i >= 0 else "other"


def classify_cpu(op_name: str) -> Category:
    for pat, cat in CPU_CATEGORY_RULES:
        if pat.search(op_name):
            return cat
    return "elementwise"


# Rows whose verdict depends on the launching op's input dtype (Kineto's "Input type"), tried after
# the name table for matrix kernels: (pattern, dtype, uses tensor cores, why).
NCU_EVIDENCE_REST = NCU_EVIDENCE
TENSOR_CORE_DTYPE_RULES: tuple[tuple[re.Pattern[str], str, bool | None, str], ...] = (
    (
        re.compile(r"triton_tem_fused_flex_attention", _I),
        "fp32",
        None,
        "fp32 inputs: inductor's tl.dot runs IEEE fp32 FMA by default (no matrix MMA: "
        + NCU_EVIDENCE_REST
        + ") and TF32 MMA when torch.backends.cuda.matmul.allow_tf32 is set, which a trace does not record",
    ),
)


@functools.cache
def tensor_cores_for_dtype(name: str, category: Category, input_dtype: str | None) -> bool | None:
    """:func:`tensor_cores`, corrected by :data:`TENSOR_CORE_DTYPE_RULES` where the input dtype decides."""
    if input_dtype is not None and is_matrix_kernel(name, category):
        for pat, dtype, uses, _why in TENSOR_CORE_DTYPE_RULES:
            if dtype == input_dtype and pat.search(name):
                return uses
    return tensor_cores(name, category)


# Rows whose tensor-core work is TF32 (fp32 operands rounded to 10-bit mantissas), not 16-bit.
TF32_RULE = re.compile(r"fmha_cutlass[FB]_f32|_tf32|tf32_", _I)


@functools.cache
def tensor_core_precision(name: str, category: Category) -> str | None:
    """'TF32' for matrix kernels that run fp32 inputs as TF32 MMA; None otherwise or unknown."""
    if tensor_cores(name, category) and TF32_RULE.search(name):
        return "TF32"
    return None


@functools.cache
def is_matrix_kernel(name: str, category: Category) -> bool:
    """Whether a kernel does matrix work: a gemm or an attention kernel that is not a helper
    (:data:`ATTENTION_HELPER`: combine, merge, reduction, dO·O, dQ conversion)."""
    return category in ("gemm", "attention") and not ATTENTION_HELPER.search(name)


def any_tensor_cores(kernels: Iterable[KernelRecord]) -> bool | None:
    """True if any matrix kernel used tensor cores, False if matrix work ran without (attention
    helpers such as a split-KV combine are not matrix work), None if no matrix kernel is known."""
    kinds = {(k.name, k.category, k.tensor_cores) for k in kernels}  # 10^5 records of a few hundred kernels
    known = [tc for name, cat, tc in kinds if tc is not None and is_matrix_kernel(name, cat)]
    return any(known) if known else None


@functools.cache
def tensor_cores(name: str, category: Category) -> bool | None:
    """Whether a GPU kernel ran on tensor cores, from the name table; None if unknown.

    Only matrix kernels (gemm, attention) are read against the table: a `bf16` in the name of
    an all-reduce or a cast says nothing about MMA.  Other categories are not matrix work, and
    attention helpers are not either (the table's first row)."""
    if category == "other":
        return None
    if category not in ("gemm", "attention"):
        return False
    for pat, uses, _why in TENSOR_CORE_RULES:
        if pat.search(name):
            return uses
    return None


AttentionFamily = Literal["flash", "efficient", "cudnn", "flex", "math", "other"]

# (pattern, family, implementation) for attention kernel names; first match wins.
ATTENTION_IMPL_RULES: tuple[tuple[re.Pattern[str], AttentionFamily, str], ...] = (
    (re.compile(r"cudnn_generated_fort_native_sdpa|cudnn.*sdpa|cudnn::fusion::", _I), "cudnn", "cuDNN generated SDPA"),
    (re.compile(r"flex_attention|flex_decoding", _I), "flex", "FlexAttention (Triton template)"),
    (re.compile(r"_attn_fwd|_attn_bwd|triton.*attn", _I), "flex", "Triton attention kernel"),
    (
        re.compile(r"FlashAttn\w*Sm(90|100)|flash::\w*Sm90|flash_fwd\w*sm90|hopper::", _I),
        "flash",
        "FA3 (flash-attn, Hopper)",
    ),
    (re.compile(r"pytorch_flash::", _I), "flash", "FA2 (PyTorch bundled)"),
    (
        re.compile(r"fmha_cutlass|mem_?eff|AttentionKernel|AttentionBackwardKernel|efficient_attention", _I),
        "efficient",
        "cutlass memory-efficient (PyTorch / xformers)",
    ),
    (re.compile(r"flash_fwd|flash_bwd|flash::|Flash_fwd|Flash_bwd", _I), "flash", "FA2 (flash-attn package)"),
    (re.compile(r"fmha_(fprop|dgrad)|fmha_fwd|fmha_bwd", _I), "flash", "FA1 (flash-attn 1.x)"),
    (
        re.compile(r"paged_attention|BatchDecodeWith|BatchPrefillWith|flashinfer", _I),
        "other",
        "paged / decode attention (vLLM, FlashInfer)",
    ),
    (re.compile(r"flash", _I), "flash", "flash (unrecognised build)"),
)

# aten / autograd ops that own every kernel launched beneath them (math decomposes
# attention into many generic kernels: only the op above them says they are attention).
ATTENTION_OP_RULES: tuple[tuple[re.Pattern[str], AttentionFamily], ...] = (
    (re.compile(r"_scaled_dot_product_attention_math"), "math"),
    (re.compile(r"_scaled_dot_product_flash_attention_for_cpu"), "flash"),  # a fused CPU kernel, not math
    (re.compile(r"_cudnn_attention|_scaled_dot_product_cudnn_attention"), "cudnn"),
    (re.compile(r"_efficient_attention|_scaled_dot_product_efficient_attention"), "efficient"),
    (re.compile(r"_flash_attention|_scaled_dot_product_flash_attention|flash_attn"), "flash"),
    (re.compile(r"FlexAttention|flex_attention"), "flex"),
)


_GPU_CATEGORY_LOWERED = tuple((pat, lowered(pat)) for pat, _ in GPU_CATEGORY_RULES)
_ATTENTION_IMPL_LOWERED = tuple((pat, lowered(pat)) for pat, _, _ in ATTENTION_IMPL_RULES)


@functools.cache
def attention_impl(name: str) -> tuple[AttentionFamily, str] | None:
    """(family, implementation) of an attention kernel, from its name; None if not one."""
    i = _first_hit(_ATTENTION_IMPL_LOWERED, name)
    return ATTENTION_IMPL_RULES[i][1:] if i >= 0 else None


def attention_family(name: str) -> AttentionFamily | None:
    hit = attention_impl(name)
    return hit[0] if hit else None


# Ops of compiled flex that are parts of a call, not calls: inductor's generated reductions and pointwise kernels
# around the FlexAttention template (at decode, the merge of the KV splits), each recorded as an op of its own.
_CALL_PART_OP = re.compile(r"^triton_(?:per|red|poi)_fused_")


@functools.cache
def attention_call_op(op_name: str) -> bool:
    """Whether an attention op starts a call (an SDPA op, a backend op, flex's op or template), not part of one."""
    return attention_op_family(op_name) is not None and not _CALL_PART_OP.match(op_name)


@functools.cache
def attention_op_family(op_name: str) -> AttentionFamily | None:
    """The attention family an aten op belongs to (SDPA backends, flash-attn, flex), or None."""
    for pat, fam in ATTENTION_OP_RULES:
        if pat.search(op_name):
            return fam
    return None


# aten entry points of each SDPA backend (what PyTorch actually dispatched to).
SDPA_BACKEND_OPS: dict[str, str] = {
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_flash_attention_forward": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_efficient_attention_forward": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_cudnn_attention_forward": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable",
}
