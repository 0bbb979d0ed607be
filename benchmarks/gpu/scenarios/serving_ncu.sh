#!/usr/bin/env bash
# Nsight Compute on paged decode (B=32, pages of 16, lengths 1k-32k): DRAM bytes, occupancy, and the SMs' active cycles against the elapsed ones, per kernel of FlashInfer, compiled flex and gather-then-SDPA.
# estimate: 200 s
set -u; D=$1
timeout 280 $ATTNSCOPE run --batch 32 --heads 32 --kv-heads 8 --seq 1 --head-dim 128 --dtype bf16 \
  --kv-lens uniform:1024..32768@0 --page-size 16 --budget 0.1 --ncu \
  --variants paged_flashinfer,paged_flex_compiled,paged_gather_sdpa --json "$D/paged_ncu.json" >"$D/paged_ncu.txt" 2>&1
echo "run rc=$?" >>"$D/paged_ncu.txt"
python3 - "$D" >"$D/ncu_kernels.txt" 2>&1 <<'PY'
import json, sys
doc = json.load(open(f"{sys.argv[1]}/paged_ncu.json"))
keys = ("duration_ns", "dram_read_bytes", "dram_write_bytes", "grid_size", "achieved_occupancy_pct",
        "sm_active_cycles_avg", "sm_active_cycles_max", "sm_balance_pct", "memory_throughput_pct", "sm_throughput_pct")
for r in doc["results"]:
    n = r.get("ncu") or {}
    print(r["variant"], r["status"], "ncu:", n.get("status"), n.get("reason"))
    for k in n.get("kernels") or []:
        m = k
        print("  ", (k.get("name") or "")[:90], {x: m.get(x) for x in keys})
PY
cat "$D/ncu_kernels.txt"
