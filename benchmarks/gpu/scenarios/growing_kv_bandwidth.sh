#!/usr/bin/env bash
# The H100 growing-KV decode trace reads 149% of the spec bandwidth (cuDNN, B8 H32 Sq1 Sk3000 D128 bf16): CUDA-event time and Nsight Compute's DRAM bytes of that shape.
# estimate: 120 s
set -u; D=$1
# the trace: tests/data/h100/serving/default_growing_kv.json.gz (12 steps, Sk 3000..3011, 78.5-79.8 µs of cuDNN kernel
# each, 393,347,072 bytes by the roofline's model; its script passed one tensor as both K and V, the likely cause:
# tests/data/h100/serving/README.md); here the same shape through run (K and V apart), timed by CUDA events, then ncu
timeout 100 $ATTNSCOPE run --batch 8 --heads 32 --seq 1 --seq-kv 3000 --head-dim 128 --dtype bf16 --mask none \
  --budget 0.3 --ncu --variants sdpa_cudnn,sdpa_flash --json "$D/decode_sk3000.json" >"$D/decode_sk3000.txt" 2>&1
echo "rc=$?" >>"$D/decode_sk3000.txt"
python3 - "$D" >"$D/bandwidth.txt" 2>&1 <<'PY'
import json, sys
doc = json.load(open(f"{sys.argv[1]}/decode_sk3000.json"))
for r in doc["results"]:
    rf = r.get("roofline") or {}
    print(r["variant"], r["status"], "gpu_us", r.get("gpu_time_us"), "bytes model", rf.get("bytes_model"),
          "measured", rf.get("bytes_measured"), "TB/s", rf.get("tbps"), "%spec bw", rf.get("pct_bandwidth_spec"),
          "ncu", (r.get("ncu") or {}).get("status"), sep=" | ")
PY
