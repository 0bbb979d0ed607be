#!/usr/bin/env bash
# Advice in its context on the GPU: the libraries recorded where the run ran, the memory-bound and masked_fill advice against them.
# estimate: 90 s
set -u; D=$1
# what imports here, asked apart from attnscope (the env's libraries must say the same)
python3 - >"$D/imports.txt" 2>&1 <<'PY'
import importlib
for m in ("flashinfer", "flash_attn", "flash_attn_interface", "xformers.ops", "sageattention", "cudnn"):
    try:
        importlib.import_module(m)
        print(m, "imports")
    except Exception as e:  # noqa: BLE001
        print(m, "does not import:", type(e).__name__)
PY
# decode, memory-bound: the advice names FlashInfer only where it imports (flashinfer_decode's row says whether)
timeout 120 $ATTNSCOPE run --batch 1 --heads 32 --kv-heads 8 --seq 1 --seq-kv 8192 --head-dim 128 --dtype bf16 \
  --mask causal_lower_right --budget 0.3 --variants sdpa_flash,sdpa_cudnn,flex_compiled,flashinfer_decode \
  --json "$D/decode.json" >"$D/decode.txt" 2>&1
# masked_fill: naive alone (in place not measured: the advice gives the command), then with naive_inplace (cited)
timeout 60 $ATTNSCOPE run --batch 1 --heads 16 --seq 2048 --head-dim 64 --budget 0.3 --variants naive \
  --json "$D/naive.json" >"$D/naive.txt" 2>&1
timeout 60 $ATTNSCOPE run --batch 1 --heads 16 --seq 2048 --head-dim 64 --budget 0.3 --variants naive,naive_inplace \
  --json "$D/naive_pair.json" >"$D/naive_pair.txt" 2>&1
python3 - "$D" >"$D/advice.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
for name in ("decode", "naive", "naive_pair"):
    p = d / f"{name}.json"
    if not p.exists():
        print(name, "no document"); continue
    doc = json.loads(p.read_text())
    print(f"== {name}: env.libraries {doc['env'].get('libraries')}")
    for r in doc["results"]:
        print(f"  {r['variant']} {r['status']} row env.libraries {(r.get('env') or {}).get('libraries')}")
        for i in r.get("insights") or []:
            if i["id"] in ("memory_bound", "hidden_copy"):
                print(f"    [{i['id']}] {i['advice']}")
PY
cat "$D/imports.txt" "$D/advice.txt"
