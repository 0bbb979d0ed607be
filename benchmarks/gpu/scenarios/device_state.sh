#!/usr/bin/env bash
# Clocks, power, temperature, throttle reasons and energy per call (NVML, nvidia-ml-py) at decode KV 8k and at prefill S4096.
# estimate: 60 s
set -u; D=$1
python3 -c "import pynvml; print('pynvml', getattr(pynvml, '__version__', '?'))" >"$D/pynvml.txt" 2>&1
timeout 80 $ATTNSCOPE run --batch 8 --heads 32 --kv-heads 8 --seq 1 --seq-kv 8192 --head-dim 128 --dtype bf16 \
  --mask none --budget 0.3 --variants sdpa_flash,sdpa_efficient,sdpa_default --json "$D/decode.json" >"$D/decode.txt" 2>&1
timeout 80 $ATTNSCOPE run --batch 4 --heads 16 --seq 4096 --head-dim 128 --dtype bf16 \
  --budget 0.3 --variants sdpa_flash,sdpa_cudnn,sdpa_default --json "$D/prefill.json" >"$D/prefill.txt" 2>&1
python3 - "$D" >"$D/device_state.txt" 2>&1 <<'PY'
import json, sys
for name in ("decode", "prefill"):
    doc = json.load(open(f"{sys.argv[1]}/{name}.json"))
    for r in doc["results"]:
        st = r.get("device_state") or {}
        print(name, r["variant"], r["status"], json.dumps({k: st.get(k) for k in (
            "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", "energy_j_per_call", "energy_j_per_token",
            "energy_source", "throttle", "throttled", "flags", "num_samples", "pct_of_peak_at_clock",
            "peak_formula", "why")}))
PY
