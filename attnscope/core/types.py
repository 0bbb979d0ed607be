"""Plain, frozen data that flows through attnscope.

What was asked for (`Case`) is kept apart from what was observed (`KernelRecord`,
`Fingerprint`, `Timing`).  Units live in field names (`_us`, `_bytes`, `_pct`);
``None`` always means "not measured / not knowable from this evidence".
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

# The case and its vocabulary are declared with the table of its fields (attnscope.core.case); named here too.
from attnscope.core.case import CAUSAL_STATED, DTYPE_BYTES, MODES, Case, DType, Mode  # noqa: F401

# crashed: the worker process died (signal, CUDA fault); timeout: it ran past --timeout.
Status = Literal["ok", "skipped", "oom", "error", "crashed", "timeout"]
STATUSES: tuple[str, ...] = ("ok", "skipped", "oom", "error", "crashed", "timeout")
Category = Literal[
    "gemm",
    "attention",
    "softmax",
    "elementwise",
    "reduction",
    "copy",
    "memcpy",
    "memset",
    "communication",
    "other",
]


# slots: a training step holds 10^5 of them.  Not frozen: a frozen dataclass sets each of its 18 fields through
# object.__setattr__, 1.2 µs a record against 0.15 µs (~18 ms of analysing a model-scale trace); hashable as before.
@dataclass(slots=True, unsafe_hash=True)
class KernelRecord:
    """One unit of device work: a GPU kernel, memcpy or memset, or on CPU a leaf aten op."""

    name: str
    category: Category
    duration_us: float
    device: Literal["gpu", "cpu"] = "gpu"
    launched_by: str | None = None  # innermost aten op, through the correlation id
    tensor_cores: bool | None = None  # None: unknown from the evidence
    tensor_core_precision: str | None = None  # "TF32" where fp32 inputs run as TF32 MMA
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None
    kineto_occupancy_pct: float | None = None
    bytes: int | None = None  # memcpy / memset only
    stream: int | None = None
    start_us: float | None = None  # start on the trace's clock (Kineto ts): the HTML timeline draws from it
    # Matrix kernels: the launching op's first floating input type (Kineto "Input type"), e.g. bf16; None
    # when not recorded or not a matrix kernel.
    input_dtype: str | None = None

    def __reduce__(self) -> tuple[type[KernelRecord], tuple[Any, ...]]:
        """Pickled as its fields in order, read in C (a rank's records cross from a pool's worker): the slots
        dataclass's own state walks ``fields()`` per record, 26 ms to pickle and 19 to unpickle the Llama
        trace's 11,810 records against 13 and 5 ms."""
        return (KernelRecord, _RECORD_FIELDS(self))


_RECORD_FIELDS = attrgetter(*(f.name for f in fields(KernelRecord)))


@dataclass(frozen=True)
class HiddenCopy:
    """A same-dtype full tensor copy inside the call, and the op that caused it."""

    op: str  # the op that asked for the copy, e.g. aten::masked_fill
    copy_op: str  # the op that did it, e.g. aten::copy_
    bytes: int
    dims: tuple[int, ...]
    device_event: str | None = None  # e.g. "Memcpy DtoD (Device -> Device)"
    duration_us: float | None = None
    # value (a full copy of values) | layout (contiguous/reshape of a strided view) | broadcast (GQA's
    # repeat_interleave / expand+reshape) | gather (index_select of rows: paged KV pages into a dense K/V);
    # None when the trace recorded no strides
    kind: str | None = None
    inside: str | None = None  # the library op it happened in (SDPA math, flex, a backward); None: user code


@dataclass(frozen=True)
class Upcast:
    """A cast of a 16-bit tensor to fp32, read from the dtypes in recorded shapes."""

    op: str  # the op that asked for the cast
    src_dtype: str
    dst_dtype: str
    dims: tuple[int, ...]
    bytes: int  # bytes written (fp32 side)
    kind: str = "dtype"
    inside: str | None = None  # the library op it happened in; None: user code


@dataclass(frozen=True)
class Timing:
    """Per-call samples summarised.  All values in microseconds."""

    median_us: float
    p25_us: float
    p75_us: float
    min_us: float
    num_samples: int
    method: str  # how it was measured, in words

    @property
    def iqr_rel(self) -> float:
        return (self.p75_us - self.p25_us) / self.median_us if self.median_us > 0 else 0.0

    @property
    def noisy(self) -> bool:
        # torch.utils.benchmark flags IQR/median above 10% the same way.
        return self.iqr_rel > 0.10


@dataclass(frozen=True)
class GraphTiming:
    """Device time per call by CUDA-graph replay, warm and cold L2 (attnscope.measure.timing.time_graphs).

    ``graph_warm``: every call reads the same inputs, so where they fit in L2 every replay after the first
    reads them from cache.  ``graph_cold``: the calls rotate through ``copies`` copies of the inputs, together
    more than twice the L2, so a call's inputs were last touched ``copies − 1`` calls earlier and were evicted
    since (None where one set of inputs already exceeds that).  ``graph_used``: the figure ``gpu_time_graph``
    and every rate on it carry."""

    graph_warm: Timing | None
    graph_cold: Timing | None
    graph_used: str  # "cold" or "warm"
    copies: int
    working_set_bytes: int | None
    l2_bytes: int | None
    rotation: str  # the copies, in words, and why that many


@dataclass(frozen=True)
class Fingerprint:
    """What one call did, read from its trace alone (pure analysis output)."""

    kernels: tuple[KernelRecord, ...]
    num_kernels: int  # compute kernels (GPU) or compute leaf ops (CPU)
    num_memcpy: int
    num_memset: int
    hidden_copies: tuple[HiddenCopy, ...]
    upcasts: tuple[Upcast, ...]
    mask_rebuilt: bool
    mask_ops: tuple[str, ...]
    sdpa_backend: str | None  # backend that actually ran, from the aten ops / kernels
    device_kind: Literal["gpu", "cpu"]
    device_name: str | None
    compute_capability: tuple[int, int] | None
    trace_gpu_time_us: float | None  # sum of device event durations in the window
    trace_cpu_time_us: float | None  # wall time of the window on the host
    trace_peak_memory_bytes: int | None  # from profiler [memory] events, if recorded
    notes: tuple[str, ...] = field(default=())
    # Each tril/triu the trace ran, with its context (analysis/fingerprint/mask_ops.py): what built it, inside which
    # attention op or before which one, how that op took it, and the GPU work of building and converting it.
    mask_builds: tuple[dict[str, Any], ...] = field(default=())
    # True if any matrix kernel used tensor cores, False if matrix work ran without (attention helpers
    # such as a split-KV combine are not matrix work), None if unknown: decided by the analysis
    # (analysis/fingerprint/kernels.py's is_matrix_kernel) and stored, so a document keeps it.
    tensor_cores: bool | None = None
    # Each matmul → softmax → matmul chain outside attention ops (attention written out as ops, linked by shape and
    # order: analysis/fingerprint/eager_attention.py), grouped by the scores' dims: ops, scores_dims, num_chains.
    eager_attention: tuple[dict[str, Any], ...] = field(default=())

    @property
    def upcast_fp32(self) -> bool:
        return bool(self.upcasts)


@dataclass(frozen=True)
class Env:
    torch: str | None
    cuda: str | None
    cudnn: str | None
    device_name: str | None
    driver: str | None
    python: str
    date: str
    platform: str
    host_cores: int | None = None
    # The attention libraries outside torch (attnscope.core.libraries), by module: the version where it imports
    # here, None where it does not; the field None where nobody looked (documents written before it).
    libraries: dict[str, str | None] | None = None


@dataclass(frozen=True)
class PeakRate:
    """The matmul rate the % of peak is measured against, and how it was obtained; on a GPU also the read
    bandwidth measured in the same run (the roofline's measured ceiling), and how."""

    tflops: float
    source: str
    bandwidth_tbps: float | None = None
    bandwidth_source: str | None = None


@dataclass(frozen=True)
class Result:
    """One variant on one case: the spec, the status, and everything observed.

    Each kind of note has its own field: what the trace says (``fingerprint.notes``) and what
    the run says (``notes``) can never overwrite each other.  ``extra`` is for plugins and is
    serialised nested under its own key, never merged into the row.
    """

    variant: str
    case: Case | None  # None when analysing a trace of unknown shape
    status: Status
    reason: str | None = None
    fingerprint: Fingerprint | None = None
    gpu_time: Timing | None = None
    cpu_time: Timing | None = None
    peak_memory_bytes: int | None = None
    peak_memory_source: str | None = None
    flops: int | None = None
    tflops: float | None = None
    pct_of_peak: float | None = None
    max_rel_error: float | None = None
    error_tolerance: float | None = None
    nonfinite: bool | None = None  # NaN/Inf in the output: a wrong result
    compile_time_s: float | None = None
    trace_path: str | None = None
    source: Literal["run", "trace"] = "run"
    family: str | None = None  # the variant's declared family (naive, sdpa, flex, ...)
    backend: str | None = None  # the backend the variant forces, if it forces one
    env: Env | None = None
    peak: PeakRate | None = None
    rel_errors: dict[str, float] | None = None  # per output: out, and dq/dk/dv in fwd_bwd
    notes: tuple[str, ...] = ()  # the run's and the variant's notes (the trace's are in the fingerprint)
    context_overhead_us: float | None = None
    sdpa_why: dict[str, Any] | None = None
    trace_summary: dict[str, Any] | None = None
    # What `analyze` read of the case from the trace's attention ops (analysis/shape.py), and what it could not.
    attention_calls: list[dict[str, Any]] | None = None
    case_unknown: dict[str, str] | None = None
    flops_basis: str | None = None
    flops_unknown: str | None = None
    model_split: dict[str, Any] | None = (
        None  # attention's share of a model step (attnscope.analysis.fingerprint.model_split)
    )
    gpu_time_graph: Timing | None = None  # device time per call by CUDA-graph replay
    gpu_time_graph_why: str | None = None  # why there is no graph timing (the call is not capturable)
    timing: GraphTiming | None = None  # both graph figures, warm and cold L2; gpu_time_graph is the one used
    # clocks, power, temperature, throttle reasons and energy during the timed replays (measure.device_state);
    # on a CPU every figure null with the reason
    device_state: dict[str, Any] | None = None
    launch: dict[str, Any] | None = None  # stream time against graph time: launch gaps and event overhead
    # Nsight Compute's deep fields (run --ncu), filled after the run by ncu_run.attach; empty: not asked
    ncu: dict[str, Any] = field(default_factory=dict)
    cost_s: dict[str, float] | None = None  # wall seconds this job spent per stage (worker, timing, ...)
    # Whether the error check can see each modifier of the case (workloads/sensitivity.py); None: not checked
    modifier_checks: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return self.case.mode if self.case else "fwd"

    @property
    def numerics_ok(self) -> bool | None:
        if self.nonfinite:
            return False
        if any((c.get("variant") or {}).get("applied") is False for c in self.modifier_checks or ()):
            return False  # it ignored a modifier that only a probe shows (workloads/sensitivity.py)
        if self.max_rel_error is None or self.error_tolerance is None:
            return None
        return self.max_rel_error <= self.error_tolerance


Severity = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class Insight:
    """One explained observation about one variant, with the evidence it rests on.

    Every number in ``message`` is one of the values in ``evidence`` (units in the keys);
    ``kernels`` and ``ops`` name the device work and the aten ops it points at.
    """

    id: str  # stable name, e.g. "hidden_copy"
    variant: str
    severity: Severity
    message: str
    advice: str
    evidence: dict[str, Any] = field(default_factory=dict)
    kernels: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotChecked:
    """An insight rule that could not be evaluated on this result, and why."""

    id: str
    why: str


@dataclass(frozen=True)
class Prediction:
    """One guess written before running: ``kind`` names the quantity, ``expected`` the value.

    ``expected`` is plain data: a number, a bool, a string, a ``[lo, hi]`` range, or for
    comparisons ``{"variant": name, "by": ratio or [lo, hi]}``.
    """

    variant: str
    kind: str
    expected: Any
    note: str | None = None


@dataclass(frozen=True)
class Verdict:
    prediction: Prediction
    # unknown: nothing measured to compare with; close: the measurement's noise band straddles the prediction
    outcome: Literal["hit", "miss", "close", "unknown"]
    measured: Any
    text: str  # one line: what was predicted, what was measured
    explanation: str | None = None  # for a miss or unknown: why, from the insights


@dataclass(frozen=True)
class Recommendation:
    """The best variant for one case, its margin over the next, and whether that is noise."""

    best: str
    best_us: float
    runner_up: str | None
    runner_up_us: float | None
    margin: float | None  # runner_up_us / best_us
    within_noise: bool | None
    basis: str  # which time was compared, in words
    excluded: tuple[str, ...]  # variants left out (numerically off), with the reason
    text: str
    # A tie across a gap over 1.5× in median (analysis.rules.ties.unresolved_tie): the timings were disturbed;
    # then ``best`` is only what the tie rule would pick, not advice, and the text says to measure again.
    unresolved: bool = False
