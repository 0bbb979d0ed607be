#!/usr/bin/env bash
# causal, causal_top_left and causal_lower_right at seq = seq_kv on the GPU: the same kernels per variant (the premise of measuring them once), and the sweep that merges them.
# estimate: 170 s
set -u; D=$1
V=sdpa_flash,sdpa_cudnn,sdpa_efficient,sdpa_default,flex_compiled
for m in causal causal_top_left causal_lower_right; do
  timeout 100 $ATTNSCOPE run --batch 2 --heads 16 --seq 2048 --head-dim 64 --dtype bf16 --mask "$m" --variants "$V" \
    --budget 0.2 --json "$D/run_$m.json" >"$D/run_$m.txt" 2>&1
  echo "run $m rc=$?" >>"$D/run_$m.txt"
done
# per variant: each spelling's compute kernels (names), its SDPA backend and how the call was given its mask
python3 - "$D" >"$D/same_kernels.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
docs = {}
for m in ("causal", "causal_top_left", "causal_lower_right"):
    p = d / f"run_{m}.json"
    docs[m] = json.loads(p.read_text()) if p.exists() else None
    print(m, "document" if docs[m] else "NO DOCUMENT")
names = sorted({r["variant"] for doc in docs.values() if doc for r in doc["results"]})
for v in names:
    seen = {}
    for m, doc in docs.items():
        r = next((x for x in (doc or {}).get("results", []) if x["variant"] == v), None)
        if r is None:
            continue
        ks = tuple(sorted({k["name"] for k in r.get("kernels") or [] if k.get("category") not in ("memcpy", "memset")}))
        seen[m] = (r["status"], r.get("sdpa_backend"), ks, (r.get("case") or {}).get("mask"), r.get("gpu_time_us"))
    same = len({(s, b, k) for s, b, k, _, _ in seen.values()}) == 1
    print(f"{v}: {'SAME status, backend and kernels' if same else 'DIFFER'} across {list(seen)}")
    for m, (s, b, ks, mask, us) in seen.items():
        print(f"  {m}: {s} case.mask={mask} backend={b} gpu_us={us} kernels={list(ks)[:3]}")
PY
# the sweep: at S = 1024 and 2048 one case per point (the other spellings said under the grid and in same_masks); at
# S = 1024 < Skv = 2048 the two alignments differ and both are measured
COLUMNS=200 timeout 120 $ATTNSCOPE sweep --batch 2 --heads 16 --seq 1024,2048 --head-dim 64 --mask causal,causal_top_left,causal_lower_right \
  --variants sdpa_flash,sdpa_cudnn --budget 0.2 --quiet --executor inline \
  --out "$D/square.jsonl" --json "$D/square.json" >"$D/square.txt" 2>&1
echo "sweep rc=$?" >>"$D/square.txt"
COLUMNS=200 timeout 120 $ATTNSCOPE sweep --batch 2 --heads 16 --seq 1024,2048 --seq-kv 2048 --head-dim 64 \
  --mask causal_top_left,causal_lower_right --variants sdpa_flash,sdpa_cudnn --budget 0.2 --quiet --executor inline \
  --out "$D/mixed.jsonl" --json "$D/mixed.json" >"$D/mixed.txt" 2>&1
echo "sweep rc=$?" >>"$D/mixed.txt"
cat "$D/same_kernels.txt"; grep -h "same mask as\|sweep rc" "$D/square.txt" "$D/mixed.txt"
