"""Runs the tour's steps: ask, measure through :mod:`attnscope.api`, judge, reveal, save the transcript.

The transcript is plain JSON, rewritten after every step, so Ctrl-C keeps what was done and ``--resume``
measures only the steps left.  Answers come from a function (the terminal, an answers file or the study's
own guesses), so the same loop serves the three modes.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.markup import escape

from attnscope.core.answers import Question, read_answer
from attnscope.core.arguments import UsageError
from attnscope.tour import judge as J
from attnscope.tour.steps import STEPS, Size, Step, case_for, variants_for

TRANSCRIPT_KIND = "tour"
TRANSCRIPT_VERSION = 1
MAX_KERNELS = 80  # kernels kept per result for the strip (in time order)
# seconds per variant measured, by size (calibrated on a 2-core CPU and the H200); fwd_bwd costs ×1.6
SECONDS_PER_VARIANT = {"tiny": 0.7, "cpu": 1.5, "gpu": 3.0}
COMPILE_S = {"flex_compiled": 30.0}
BUDGET_S = {"tiny": 0.03, "cpu": 0.15, "gpu": 0.3}
COPY_BYTES = {"tiny": 16 << 20, "cpu": 64 << 20, "gpu": 1 << 30}

# answer(step, question, items) → (text or None to skip, where it came from)
Answerer = Callable[[Step, Question, tuple[str, ...]], tuple[Any, str]]


class TourError(UsageError):
    """A transcript or answers file that cannot be used; one line for the user (``fields``: the values it names)."""


@dataclass
class Session:
    device: str
    size: Size
    answer: Answerer
    out: Path
    say: Callable[[str], None]
    model: str | None = None  # a --model CONFIG: the optional last step
    transcript: dict[str, Any] = field(default_factory=dict)
    _cache: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _env: Any = None
    _extra: dict[str, Any] = field(default_factory=dict)
    _model_about: dict[str, Any] = field(default_factory=dict)
    _load: tuple[float | None, int | None] = (None, None)

    @property
    def gpu(self) -> bool:
        return self.device.startswith("cuda")

    def start(self, resume: dict[str, Any] | None) -> None:
        from attnscope.api.campaign import read_load

        self._load = read_load()  # before the steps add their own threads to the load
        if resume is not None:
            if resume.get("device") != self.device or resume.get("size") != self.size:
                raise TourError(
                    f"{self.out}: the transcript was made on {resume.get('device')} at {resume.get('size')}, "
                    f"not {self.device} at {self.size}: resume it with the same device and size",
                    fields=("device", "size"),
                )
            self.transcript = resume
            self.transcript["complete"] = False
            return
        self.transcript = {
            "kind": TRANSCRIPT_KIND,
            "version": TRANSCRIPT_VERSION,
            "tool": "attnscope",
            "device": self.device,
            "size": self.size,
            "started": _now(),
            "finished": None,
            "complete": False,
            "noise_rule": "run --guess: a timed verdict is a hit when its whole noise band (quartiles, fastest "
            "sample, at least ±10% on a CPU, ±2% on a GPU) agrees, a miss when none of it does, else too close "
            "to call (neither hit nor miss)",
            "steps": [],
        }

    def steps(self) -> list[Step]:
        from attnscope.tour.model_step import MODEL_STEP

        steps = [s for s in STEPS if self.gpu or not s.gpu_only]  # a GPU-only step has nothing to show on a CPU
        return [*steps, MODEL_STEP] if self.model else steps

    def done_ids(self) -> set[str]:
        return {s["id"] for s in self.transcript.get("steps", [])}

    def run(self) -> dict[str, Any]:
        """Every step not yet in the transcript, saved after each; Ctrl-C saves and re-raises."""
        steps = self.steps()
        todo = [s for s in steps if s.id not in self.done_ids()]
        if todo:
            self.warn_if_loaded()
        try:
            for i, step in enumerate(todo, len(steps) - len(todo) + 1):
                rec = self.run_step(step, i)
                self.transcript["steps"].append(rec)
                self.save()
        except KeyboardInterrupt:
            self.transcript["interrupted"] = _now()
            self.save()
            raise
        self.transcript.pop("interrupted", None)
        self.transcript["host"] = self.host()
        self.transcript["score"] = score(self.transcript["steps"])
        self.transcript["surprises"] = surprises(self.transcript["steps"])
        self.transcript["finished"] = _now()
        self.transcript["complete"] = True
        self.save()
        return self.transcript

    def warn_if_loaded(self) -> None:
        """Before the first step measures: the load read at the start, judged alone, and said where it is high, so
        the tour can be stopped before its timings are spent on a busy host (the end says it again, with them)."""
        from attnscope.api.campaign import host_verdict
        from attnscope.core.host_line import host_line_ahead

        stop = "Ctrl-C stops the tour and keeps the steps done; the same command with --resume continues it once the "
        stop += "machine is quiet"
        line = host_line_ahead(host_verdict(self._load, []), stop)
        if line:
            self.say(f"[yellow]  {escape(line)}[/yellow]")

    def host(self) -> dict[str, Any]:
        """Was the host busy enough to distort the timings? (attnscope.api.campaign.host_verdict): the load read
        when the tour started and the host time per call of every variant this session measured."""
        from attnscope.api.campaign import host_verdict

        timings = [
            (f"{v} {key}", [t["p25_us"], t["median_us"], t["p75_us"]])
            for (v, key), r in self._cache.items()
            if isinstance(t := r.get("cpu_time"), dict)
        ]
        return host_verdict(self._load, timings)

    def save(self) -> None:
        from attnscope.document.schema import write_atomic

        write_atomic(self.out, self.transcript)

    def estimate_s(self, step: Step) -> float:
        if step.id == "model":
            return {"tiny": 8.0, "cpu": 15.0, "gpu": 40.0}[self.size]
        case = case_for(step.case, self.size, self.device)
        todo = [v for v in variants_for(step, self.gpu) if (v, _key(case)) not in self._cache]
        per = SECONDS_PER_VARIANT[self.size] * (1.6 if case.mode == "fwd_bwd" else 1.0)
        return round(sum(per + (COMPILE_S.get(v, 0.0) if self.gpu else 0.0) for v in todo) + 1.0, 0)

    def run_step(self, step: Step, number: int) -> dict[str, Any]:
        items = variants_for(step, self.gpu)
        est = self.estimate_s(step)
        head = f"Step {number}/{len(self.steps())}: {step.title}"
        self.say(f"\n[bold]{escape(head)}[/bold]  [dim](measuring takes about {est:.0f} s)[/dim]")
        self.say(escape(step.setup))
        if not self.gpu and step.on_cpu:
            self.say(f"[yellow]On this CPU:[/yellow] {escape(step.on_cpu)}")
        asked = [q for q in step.questions if self.gpu or not q.gpu_only]
        answers = [(q, *self.answer(step, q, items)) for q in asked]
        t0 = time.monotonic()
        results = self.measure(step)
        if step.id == "decode":
            self._copy_bandwidth()
        elapsed = time.monotonic() - t0
        qrecs = [self.judge_one(q, text, src, results, items) for q, text, src in answers]
        rec = {
            "id": step.id,
            "title": step.title,
            "setup": step.setup,
            "case": self._model_about if step.id == "model" else case_for(step.case, self.size, self.device).to_dict(),
            "estimated_s": est,
            "measured_s": round(elapsed, 1),
            "questions": qrecs,
            "not_asked": [q.id for q in step.questions if q not in asked],
            "results": [result_record(r) for r in results],
            "differs": self.differs(step, results),
            "why": step.why_cpu if not self.gpu and step.why_cpu else step.why,
            "h200": {"figures": list(step.h200), "source": step.h200_source},
            "evidence": list(step.evidence or items),
            "extra": dict(self._extra) if step.id == "decode" else {},
        }
        from attnscope.tour.reveal import show

        show(rec, self.say)
        return rec

    def measure(self, step: Step) -> list[dict[str, Any]]:
        """The step's variants on its case through ``api.run`` (each variant measured once per case, its rows kept
        unannotated), then the step's rows annotated once, together (they may come from several runs)."""
        from attnscope.api import annotate, run
        from attnscope.document.schema import document

        if step.id == "model":
            from attnscope.tour.model_step import measure_model

            assert self.model is not None
            results, self._model_about = measure_model(self.model, self.device, self.size)
            return results
        case = case_for(step.case, self.size, self.device)
        names = variants_for(step, self.gpu)
        todo = [v for v in names if (v, _key(case)) not in self._cache]
        if todo:
            rep = run(
                case,
                todo,
                annotated=False,
                timing_budget_s=BUDGET_S[self.size],
                measure_peak=self.gpu or step.id == "decode",
            )
            self._env = rep.env
            from attnscope.document.schema import result_to_dict

            for r in rep.results:
                self._cache[(r.variant, _key(case))] = result_to_dict(r)
        raw = [self._cache[(v, _key(case))] for v in names if (v, _key(case)) in self._cache]
        from attnscope.core.types import Result  # noqa: F401  (documents are dicts from here on)

        doc = annotate(document(self._env, [], case=case.to_dict()) | {"results": raw})
        if self._env is not None:
            self.transcript.setdefault("env", doc.get("env"))
        return list(doc["results"])

    def _copy_bandwidth(self) -> None:
        from attnscope.api.checks import copy_bandwidth

        bw, how = copy_bandwidth(self.device, COPY_BYTES[self.size])
        self._extra.update(copy_bytes_per_s=bw, copy_method=how)

    def judge_one(
        self, q: Question, text: Any, source: str, results: list[dict[str, Any]], items: tuple[str, ...]
    ) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "id": q.id,
            "prompt": q.prompt,
            "kind": q.kind,
            "choices": list(items if q.answer in ("ranking",) or q.judge == "winner" else q.choices),
            "answer": text,
            "answer_source": source,
            "insight": q.insight,
        }
        if text is None:
            return rec | {"expected": None, "outcome": "skipped", "measured": None, "text": "no answer given"}
        expected = read_answer(q, str(text), items)
        rec["expected"] = expected
        rec["predictions"] = [
            {"variant": p.variant, "kind": p.kind, "expected": p.expected} for p in J.predictions(q, expected, items)
        ]
        rec |= J.verdict(q, expected, results, items, self._extra)
        msgs = [i["message"] for r in results for i in r.get("insights") or [] if i["id"] == q.insight]
        rec["insight_message"] = msgs[0] if msgs else None
        if not msgs and not self.gpu:  # a GPU insight that cannot fire here is not offered as the explanation
            rec["insight"] = None
        return rec

    def differs(self, step: Step, results: list[dict[str, Any]]) -> list[str]:
        """Where this machine differs from the study's H200, in words."""
        out: list[str] = []
        env = self.transcript.get("env") or {}
        name = next((r.get("device_name") for r in results if r.get("device_name")), None) or env.get("device_name")
        if not self.gpu:
            out.append(
                "no GPU: CPU ops stand for kernels, times are wall-clock, there is no cuDNN, efficient or "
                "compiled flash kernel, and no occupancy"
            )
        elif name and "H200" not in str(name):
            out.append(
                f"this GPU is {name}, not the H200: its SM count, registers and shared memory per SM, and "
                "so its occupancy limits and peaks differ"
            )
        torch_v = env.get("torch")
        if torch_v and not str(torch_v).startswith("2.11"):
            out.append(f"torch {torch_v} here, 2.11 on the H200: backend order and kernels may differ")
        for r in results:
            if r["variant"] == "sdpa_default" and r.get("status") == "ok":
                got = r.get("sdpa_backend") or r.get("backend")
                if self.gpu and got and got != "cudnn":
                    out.append(f"torch picked {got} here; on the H200 torch 2.11 picked cudnn")
            if r.get("status") != "ok":
                out.append(f"{r['variant']} did not run here: {r.get('reason')}")
        if self.size != "gpu":
            out.append(f"the case is smaller than the study's ({self.size} size), so that the tour fits this machine")
        return out


def _key(case: Any) -> str:
    return json.dumps(case.to_dict(), sort_keys=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def result_record(r: dict[str, Any]) -> dict[str, Any]:
    """What the transcript keeps of one result: enough for the reveal and the page, nothing to recompute."""
    from attnscope.api.guesses import kernel_accounting, timing_of
    from attnscope.tour.strip import in_time_order

    t = timing_of(r) if r.get("status") == "ok" else None
    ks = in_time_order(list(r.get("kernels") or []))[:MAX_KERNELS]
    return {
        "variant": r["variant"],
        "status": r.get("status"),
        "reason": r.get("reason"),
        "device_kind": r.get("device_kind"),
        "time_us": t[0] if t else None,
        "timing": t[1] if t else None,
        "time_basis": t[2] if t else None,
        "gpu_time_us": r.get("gpu_time_us"),
        "cpu_time_us": r.get("cpu_time_us"),
        "num_kernels": r.get("num_kernels"),
        "accounting": kernel_accounting(r) if r.get("status") == "ok" else None,
        "backend": r.get("sdpa_backend") or r.get("backend"),
        "tflops": r.get("tflops"),
        "pct_of_peak": r.get("pct_of_peak"),
        "flops": r.get("flops"),
        "flop_formula": r.get("flop_formula"),
        "peak": r.get("peak"),
        "upcast_fp32": r.get("upcast_fp32"),
        "hidden_copies": len(r.get("hidden_copies") or []),
        "mask_rebuilt": r.get("mask_rebuilt"),
        "sdpa_why": (r.get("extra") or {}).get("sdpa_why") or r.get("sdpa_why"),
        "kernels": [
            {k2: k.get(k2) for k2 in ("name", "category", "duration_us", "start_us", "theoretical_occupancy_pct")}
            for k in ks
        ],
        "insights": [
            {"id": i["id"], "severity": i["severity"], "message": i["message"]} for i in r.get("insights") or []
        ],
    }


def score(steps: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {"hit": 0, "miss": 0, "close": 0, "unknown": 0, "skipped": 0}
    for s in steps:
        for q in s["questions"]:
            counts[q["outcome"]] = counts.get(q["outcome"], 0) + 1
    judged = counts["hit"] + counts["miss"]
    return counts | {
        "judged": judged,
        "text": f"{counts['hit']} of {judged} clear verdicts hit ({counts['close']} too close to call, "
        f"{counts['unknown']} not measurable here, {counts['skipped']} skipped)",
    }


def _distance(expected: Any, measured: Any) -> float:
    """How far a miss landed: |log(measured ÷ the nearest end of the guess)|, 1 for a wrong choice."""
    target = expected.get("by") if isinstance(expected, dict) else expected
    if (
        target is None
        or isinstance(measured, bool)
        or not isinstance(measured, int | float)
        or isinstance(target, bool | str)
    ):
        return 1.0
    if isinstance(target, list) and target and isinstance(target[0], str):
        return 1.0
    lo, hi = (target[0], target[1]) if isinstance(target, list) else (target, target)
    edge = lo if measured < lo else hi
    if edge <= 0 or measured <= 0:
        return 1.0
    return abs(math.log(measured / edge))


def surprises(steps: list[dict[str, Any]], n: int = 3) -> list[dict[str, Any]]:
    """The ``n`` misses that landed farthest from the guess, each with its insight."""
    misses = [(s, q) for s in steps for q in s["questions"] if q.get("outcome") == "miss"]
    misses.sort(key=lambda sq: -_distance(sq[1].get("expected"), sq[1].get("measured")))
    return [
        {
            "step": s["id"],
            "question": q["id"],
            "prompt": q["prompt"],
            "text": q.get("text"),
            "distance": round(_distance(q.get("expected"), q.get("measured")), 3),
            "insight": q["insight"],
            "insight_message": q.get("insight_message") or q.get("explanation") or s["why"],
        }
        for s, q in misses[:n]
    ]


def load_transcript(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise TourError(f"{path}: cannot read the transcript to resume ({e})") from None
    except RecursionError:
        raise TourError(f"{path}: cannot read the transcript to resume (nested too deeply)") from None
    if not isinstance(doc, dict) or doc.get("kind") != TRANSCRIPT_KIND or not isinstance(doc.get("steps"), list):
        raise TourError(f"{path}: not an attnscope tour transcript")
    return doc
