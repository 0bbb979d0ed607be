"""The events a Kineto trace is read into: plain typed records, no torch, no JSON here."""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from attnscope.trace.jsonlib import JSONError, loads

_C = TypeVar("_C")

# The records built once per event (~25,000 in a model-scale trace): msgspec Structs where msgspec is
# installed, created in C at a fifth of a slotted dataclass's cost (measured: converting the Llama
# trace's 10,902 runtime calls went from 12.7 to 5.0 ms); slotted dataclasses with the same fields,
# order, defaults and equality otherwise.
if TYPE_CHECKING:
    from msgspec import Struct as _Record  # what a type checker sees: a record with typed fields

    def _record(cls: _C) -> _C:
        return cls

else:
    try:
        from msgspec import Struct

        class _Record(Struct, gc=False):  # no cycles through an event: the cyclic GC need not track them
            pass

        def _record(cls: _C) -> _C:
            return cls

    except ImportError:  # the safe path alone (an image without msgspec)

        class _Record:
            __slots__ = ()

        _record = dataclass(slots=True)


class TraceError(ValueError):
    """A trace file that cannot be analysed; the message is one line naming the file."""


@_record
class CpuOp(_Record):
    """One aten op.  ``input_dims``/``input_types`` (record_shapes) are kept as the args text and
    parsed when asked for, through a small cache rather than onto the op: a training step holds
    10^5–10^6 ops, and parsed shapes take twice the memory of their text.

    A msgspec Struct without the cyclic GC's header (72 bytes where a slotted class takes 88: 7 MiB at 470,000 ops),
    built positionally in C by the reader; :meth:`recorded` builds one from parsed shapes (the safe path, tests)."""

    name: str
    tid: int | str
    ts: float
    dur: float
    ext_id: int | None
    pid: int | str = 0
    # bytes: the args members (JSON, from ","), unread; a tuple: (dims, types, strides, concrete inputs); None: none
    _shapes: bytes | tuple[Any, Any, Any, Any] | None = None

    @classmethod
    def recorded(
        cls,
        name: str,
        tid: int | str,
        ts: float,
        dur: float,
        ext_id: int | None,
        input_dims: list[Any] | None = None,
        input_types: list[str] | None = None,
        pid: int | str = 0,
        input_strides: list[Any] | None = None,
        concrete_inputs: list[Any] | None = None,
    ) -> CpuOp:
        """An op with its recorded inputs already parsed (each None where not recorded)."""
        shapes = (input_dims, input_types, input_strides, concrete_inputs)
        return cls(name, tid, ts, dur, ext_id, pid, None if shapes == _NO_SHAPES else shapes)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    def shapes(self) -> tuple[Any, Any, Any, Any]:
        """(input dims, input types, input strides, concrete inputs) as recorded, each None if not."""
        s = self._shapes
        if s is None:
            return _NO_SHAPES
        if isinstance(s, bytes):
            return _parse_shapes(s)
        return s

    @property
    def input_dims(self) -> list[Any] | None:
        return self.shapes()[0]  # type: ignore[no-any-return]

    @property
    def input_types(self) -> list[str] | None:
        return self.shapes()[1]  # type: ignore[no-any-return]

    @property
    def input_strides(self) -> list[Any] | None:
        return self.shapes()[2]  # type: ignore[no-any-return]

    @property
    def concrete_inputs(self) -> list[Any] | None:
        """Kineto's ``Concrete Inputs``: scalar arguments as strings (``'True'``, ``'0.125'``), ``''`` for tensors."""
        return self.shapes()[3]  # type: ignore[no-any-return]

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.tid, self.ts, self.dur, self.ext_id, self.input_dims, self.input_types, self.pid)

    def __eq__(self, other: object) -> bool:  # by what was recorded: shapes still as text equal their parse
        return isinstance(other, CpuOp) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"CpuOp(name={self.name!r}, tid={self.tid!r}, ts={self.ts}, dur={self.dur}, ext_id={self.ext_id})"


_NO_SHAPES: tuple[None, None, None, None] = (None, None, None, None)
_SHAPE_ERRORS: tuple[type[Exception], ...] = (*JSONError, AttributeError)


@functools.lru_cache(maxsize=512)
def _parse_shapes(raw: bytes) -> tuple[Any, Any, Any, Any]:
    """An op's recorded inputs from its args text; the few ops an analysis step is reading stay cached."""
    try:
        a = loads(b'{"":0' + raw + b"}") if raw else {}
        return a.get("Input Dims"), a.get("Input type"), a.get("Input Strides"), a.get("Concrete Inputs")
    except _SHAPE_ERRORS:
        return _NO_SHAPES  # shapes unreadable: the op stays, without shapes


@_record
class RuntimeCall(_Record):
    name: str
    tid: int | str
    ts: float
    dur: float
    correlation: int | None
    ext_id: int | None
    pid: int | str = 0


@_record
class GpuEvent(_Record):
    kind: str  # "kernel" | "memcpy" | "memset"
    name: str
    ts: float
    dur: float
    correlation: int | None
    ext_id: int | None
    device: int | None
    stream: int | None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = None
    kineto_occupancy_pct: float | None = None
    bytes: int | None = None
    # Kineto's "graph id" / "graph node id" (CUDA ≥ 12 builds of Kineto): non-zero for an event a CUDA graph replayed
    graph_id: int | None = None
    graph_node_id: int | None = None


@dataclass(slots=True)
class Annotation:
    name: str
    cat: str  # user_annotation | gpu_user_annotation
    tid: int | str
    ts: float
    dur: float


@dataclass(slots=True)
class MemEvent:
    ts: float
    device_type: int | None  # 0 CPU, 1 CUDA
    total_allocated: int
    bytes: int


@dataclass
class Trace:
    path: str
    device_properties: list[dict[str, Any]]
    cpu_ops: list[CpuOp] = field(default_factory=list)
    runtime: list[RuntimeCall] = field(default_factory=list)
    gpu: list[GpuEvent] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    memory: list[MemEvent] = field(default_factory=list)
    # with_stack=True: the python_function ranges of nn.Module forwards ("nn.Module: LlamaAttention_0")
    modules: list[Annotation] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    num_events: int = 0
    num_skipped: int = 0  # malformed events passed over
    shapes_dropped: bool = False  # ops outside SHAPES_READ were read without their shapes
    # what the reader wants the user to know (events the fast decoder refused went through the safe one)
    notes: list[str] = field(default_factory=list)

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpu)

    @property
    def rank(self) -> int | None:
        """The distributed rank Kineto recorded (``distributedInfo.rank``), if any."""
        info = self.meta.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("rank"), int):
            return int(info["rank"])
        return None


@contextmanager
def no_gc() -> Iterator[None]:
    """Building ~10^5 small objects triggers many full collections that find nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# The categories the readers take each record from, as Kineto names them (older Kineto versions wrote Operator,
# Kernel, Memcpy, Memset and Runtime for the same events): both readers (fast.py, safe.py) read these
CPU_OP_CATS = frozenset(("cpu_op", "Operator"))
RUNTIME_CATS = frozenset(("cuda_runtime", "cuda_driver", "Runtime"))
GPU_KIND = {
    "kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
    "Kernel": "kernel", "Memcpy": "memcpy", "Memset": "memset",
}  # fmt: skip


# Ops whose recorded inputs a GPU trace's analysis reads: copies (kind, bytes, dtypes), attention
# ops (the case), matmul ops (the input dtype of a matrix kernel on CUDA cores; with the softmax ops, attention
# written out as matmul, softmax, matmul: analysis/fingerprint/eager_attention.py) and the causal-mask builders and
# converters (analysis/fingerprint/mask_ops.py reads a materialised mask's shape and diagonal).
# A CPU-only trace keeps every op's shapes (its leaf ops are counted by their dims).
SHAPES_READ = re.compile(
    r"copy_|attention|Attention|scaled_dot_product|flash_attn|triton_tem_fused_flex|"
    r"^aten::(mm|bmm|addmm|baddbmm|addbmm|matmul|linear|_addmm_activation|_scaled_mm|softmax|_softmax|_safe_softmax|ones|ones_like|tril|triu|where|index_select)$"
)


def drop_unread_shapes(tr: Trace) -> None:
    """Free the args text of ops whose shapes are never read: at 10^6 ops it is ~200 MB."""
    keep: dict[str, bool] = {}
    for op in tr.cpu_ops:
        if op._shapes is not None:
            k = keep.get(op.name)
            if k is None:
                k = keep[op.name] = SHAPES_READ.search(op.name) is not None
            if not k:
                op._shapes = None  # the same for a parsed doc
