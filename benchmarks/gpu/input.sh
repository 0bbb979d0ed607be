#!/usr/bin/env bash
# Issue "a newcomer never sees a traceback", on the GPU (about 4 minutes on one H200).
# Writes $OUT/input.tgz:
#   devices.txt        each bad device / size argument: exit code and stderr (expect one line, exit 2)
#   fp16.json/.txt     run --dtype fp16, every variant: the peak's source and every %peak (flagged if > 100)
#   fit.json/.txt      B=8 H=32 S=16384 D=128 bf16: naive/naive_inplace/sdpa_math/flex must be skipped rows
#                      with the estimate and the limit, the fused variants measured and checked
#   default.json/.txt  the GPU default case, every variant: sizing estimates against the measured peaks
#   estimates.txt      estimate (without the error check and mask) / measured peak, per variant and case
# Run from the repository root: bash benchmarks/gpu/input.sh
set -u
W=/tmp/input; rm -rf $W; mkdir -p $W
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
A="python3 -m attnscope.cli.main"
{
  for args in "run --device cuda:5" "run --device cuda:-1" "run --device mps" "variants --device cuda:3" \
              "run --device cuda --seq 1000000" "run --device cuda --batch 100000" \
              "run --device cuda --json /proc/x.json" "run --device cuda --variants naive,naive"; do
    echo "== attnscope $args"
    timeout 60 $A $args > /dev/null 2> $W/err.txt; echo "exit $?"; cat $W/err.txt
  done
  echo "== attnscope variants --device cuda:0"; timeout 60 $A variants --device cuda:0 > /dev/null 2>&1; echo "exit $?"
} > $W/devices.txt 2>&1
echo "devices:"; grep -c "^exit 2" $W/devices.txt; grep -c "Traceback" $W/devices.txt
t0=$(date +%s)
timeout 150 $A run --device cuda --dtype fp16 --variants all --json $W/fp16.json > $W/fp16.txt 2>&1
echo "fp16: rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 150 $A run --device cuda --batch 8 --heads 32 --seq 16384 --head-dim 128 \
  --variants naive,naive_inplace,sdpa_math,sdpa_flash,sdpa_cudnn,sdpa_efficient,sdpa_default,flex \
  --json $W/fit.json > $W/fit.txt 2>&1
echo "fit: rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 120 $A run --device cuda --variants all --json $W/default.json > $W/default.txt 2>&1
echo "default: rc=$? $(( $(date +%s) - t0 )) s"
python3 - "$W" > $W/estimates.txt 2>&1 <<'PY'
import json, sys
from pathlib import Path
from attnscope.workloads import sizing
from attnscope.core.types import Case
keys = ("batch", "heads", "seq_q", "head_dim", "dtype", "causal", "kv_heads", "seq_kv")
for name in ("fp16", "fit", "default"):
    p = Path(sys.argv[1]) / f"{name}.json"
    if not p.exists():
        print(name, "missing"); continue
    doc = json.loads(p.read_text())
    print(f"== {name}: peak {doc.get('peak')}")
    for r in doc["results"]:
        c = Case(**{k: r["case"][k] for k in keys}, device="cuda")
        e = sizing.variant_bytes(c, r["variant"])
        call = e.bytes - e.parts["error check (fp64)"] - e.parts.get("mask", 0)
        m = r.get("peak_memory_bytes")
        ratio = f"{call / m:.3f}" if m else "-"
        pct = r.get("pct_of_peak")
        flags = [i["id"] for i in r.get("insights") or [] if i["id"] in ("rate_above_peak", "score_matrix")]
        print(f"{r['variant']:15s} {r['status']:8s} est {call / 2**20:12,.1f} MiB  measured "
              f"{(m or 0) / 2**20:12,.1f} MiB  est/measured {ratio:>7s}  %peak {pct}  {flags}  {(r.get('reason') or '')[:160]}")
PY
cat $W/estimates.txt
tar czf "$OUT/input.tgz" -C /tmp input && ls -la "$OUT/input.tgz"
