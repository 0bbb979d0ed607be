#!/usr/bin/env bash
# DRAM bytes from Nsight Compute against the roofline's byte model: decode KV 8k (goal: within 5%) and prefill S4096 (ratio recorded).
# estimate: 150 s
set -u; D=$1
timeout 80 $ATTNSCOPE run --batch 8 --heads 32 --kv-heads 8 --seq 1 --seq-kv 8192 --head-dim 128 --dtype bf16 \
  --mask none --budget 0.2 --ncu --variants sdpa_flash,sdpa_efficient,sdpa_cudnn --json "$D/decode.json" >"$D/decode.txt" 2>&1
timeout 80 $ATTNSCOPE run --batch 4 --heads 16 --seq 4096 --head-dim 128 --dtype bf16 \
  --budget 0.2 --ncu --variants sdpa_flash,sdpa_cudnn,flex_compiled --json "$D/prefill.json" >"$D/prefill.txt" 2>&1
python3 - "$D" >"$D/bytes.txt" 2>&1 <<'PY'
import json, sys
for name in ("decode", "prefill"):
    doc = json.load(open(f"{sys.argv[1]}/{name}.json"))
    for r in doc["results"]:
        rf = r.get("roofline") or {}
        ins = [i["message"] + " → " + i["advice"] for i in r.get("insights") or [] if i["id"] == "traffic_over_model"]
        print(name, r["variant"], r["status"], "model", rf.get("bytes_model"), "measured", rf.get("bytes_measured"),
              "ratio", rf.get("bytes_ratio"), "per kernel", rf.get("bytes_per_kernel"), "ncu", (r.get("ncu") or {}).get("status"),
              (r.get("ncu") or {}).get("reason"), *ins, sep=" | ")
PY
