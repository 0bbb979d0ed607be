"""One definition of "kernels" on every device: a plain copy (same dtype, contiguous source) is a Memcpy on a GPU,
counted apart from the kernels; on a CPU the same copy_ op is counted apart too (``num_memcpy``), while a strided
copy and a dtype conversion stay compute ops, as their GPU kernels do.  A synthetic CPU trace built by hand."""

from __future__ import annotations

from attnscope.analysis.fingerprint.build import analyse
from attnscope.trace import trace_from_doc
from tests.synth import doc, op

BF16, F32 = "c10::BFloat16", "float"
DIMS = [2, 4, 8, 8]
CONTIG = [256, 64, 8, 1]  # 4·8·8, 8·8, 8, 1
STRIDED = [256, 8, 32, 1]  # a transposed view of the last two leading dims


def _copy(ts: float, dst: str, src: str, src_strides: list[int]) -> dict:
    return op(
        "aten::copy_",
        ts,
        5.0,
        None,
        **{
            "Input Dims": [DIMS, DIMS, []],
            "Input type": [dst, src, "Scalar"],
            "Input Strides": [CONTIG, src_strides, []],
        },
    )


def _naive_like_trace() -> dict:
    """masked_fill → clone → (empty_like, copy_ of a contiguous bf16 tensor): the hidden copy; then the in-place
        masked_fill_, a bmm (ops without tensor inputs recorded are the scalar wraps a CPU count leaves out, so these
    carry their dims), a contiguous() of a strided view (copy_ with strided source) and an upcast (copy_
        bf16 → float): 1 plain copy, 4 compute ops."""
    return doc(
        [
            op("aten::masked_fill", 0.0, 40.0, None),
            op("aten::clone", 1.0, 20.0, None),
            op("aten::empty_like", 2.0, 1.0, None),
            _copy(4.0, BF16, BF16, CONTIG),
            op("aten::masked_fill_", 25.0, 10.0, None, **{"Input Dims": [DIMS, [], []]}),
            op("aten::bmm", 50.0, 30.0, None, **{"Input Dims": [[8, 8, 8], [8, 8, 8]]}),
            op("aten::contiguous", 90.0, 10.0, None),
            op("aten::clone", 91.0, 8.0, None),
            _copy(92.0, BF16, BF16, STRIDED),
            op("aten::to", 110.0, 10.0, None),
            op("aten::_to_copy", 111.0, 8.0, None),
            _copy(112.0, F32, BF16, CONTIG),
        ]
    )


def test_a_plain_copy_on_the_cpu_is_a_memcpy_and_the_rest_are_kernels():
    fp = analyse(trace_from_doc(_naive_like_trace())).fingerprint
    assert fp.device_kind == "cpu"
    cats = [(k.name, k.category) for k in fp.kernels]
    assert cats.count(("aten::copy_", "memcpy")) == 1
    assert (fp.num_kernels, fp.num_memcpy, fp.num_memset) == (4, 1, 0)
    # the hidden copy is still found, from the copy_ op itself
    assert [c.op for c in fp.hidden_copies] == ["aten::masked_fill", "aten::contiguous"]
