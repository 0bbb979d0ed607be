#!/usr/bin/env bash
# The roofline on the H200: decode with both masks and a prefill, each `run --json` document carrying
# `roofline` per result (and per matrix kernel) and the verdicts that replace low_occupancy.
# Usage (repository root, on the GPU machine): bash benchmarks/gpu/roofline.sh OUTDIR
#
# Cases (bf16, D=128):
#   decode_lr    B=8 H=32 KV=8 Sq=1 Sk=8192 --mask causal_lower_right  (keeps every key: equivalent_case none)
#   decode_none  the same with --mask none                               (the plain call it is equivalent to)
#   prefill      B=1 H=32 S=4096 --mask causal                           (compute-bound)
# Also a read-bandwidth probe: x.sum() in fp32 accumulation over 4 GiB of bf16, best of 20, in TB/s,
# for the measured ceiling (written to OUTDIR/bandwidth.txt).
# Expected: decode roofline.bound == "memory", sdpa_cudnn pct_bandwidth_spec >= 80; prefill "compute";
# no low_occupancy insight on either decode.
set -u
OUT=${1:?usage: roofline.sh OUTDIR}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 - >"$OUT/bandwidth.txt" 2>&1 <<'PY'
import torch
x = torch.ones(2 * 1024**3, dtype=torch.bfloat16, device="cuda")  # 4 GiB
best = float("inf")
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); x.sum(dtype=torch.float32); e.record(); torch.cuda.synchronize()
    best = min(best, s.elapsed_time(e) * 1e-3)
print(f"read probe x.sum() fp32 accumulate over {x.numel() * 2} B: {x.numel() * 2 / best / 1e12:.3f} TB/s (best of 20)")
PY
run() {
    name=$1; shift
    timeout 900 python3 -m attnscope.cli.main run --dtype bf16 --head-dim 128 --variants sdpa_default,sdpa_flash,sdpa_cudnn,flex_compiled \
        --kernels --json "$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1
    echo "$name rc=$?"
}
run decode_lr --batch 8 --heads 32 --kv-heads 8 --seq 1 --seq-kv 8192 --mask causal_lower_right
run decode_none --batch 8 --heads 32 --kv-heads 8 --seq 1 --seq-kv 8192 --mask none
run prefill --batch 1 --heads 32 --seq 4096 --mask causal
python3 - "$OUT" <<'PY'
import json, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    doc = json.loads(f.read_text())
    print(f.name, "equivalent_case:", doc.get("equivalent_case"))
    for r in doc.get("results") or []:
        rf = r.get("roofline") or {}
        ids = sorted({i["id"] for i in r.get("insights") or []})
        print(f"  {r['variant']:16} bound={rf.get('bound')} tbps={rf.get('tbps')} %bw_spec={rf.get('pct_bandwidth_spec')} "
              f"tflops={rf.get('tflops')} insights={ids}")
PY
