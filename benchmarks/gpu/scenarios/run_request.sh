#!/usr/bin/env bash
# run and guess through the one request (api.run_request) on the GPU: the process executor with --json, --html and --trace-dir, a --json where a kept trace would go refused, guess with piped answers, variants on cuda:0, and the library call from a RunRequest.
# estimate: 120 s
set -u; D=$1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
A=(python3 -m attnscope.cli.main)
CASE=(--device cuda --batch 2 --heads 8 --seq 1024 --head-dim 64 --dtype bf16)
r() { local name=$1 want=$2; shift 2; timeout 150 "$@" >"$D/$name.txt" 2>&1; echo "$name rc=$? (expect $want)" >>"$D/rc.txt"; }
r run 0 "${A[@]}" run "${CASE[@]}" --variants sdpa_flash,sdpa_cudnn,sdpa_default --executor process --budget 0.2 \
  --json "$D/run.json" --html "$D/run.html" --trace-dir "$D/traces"
ls "$D/traces" >"$D/traces.txt" 2>&1
r clash 2 "${A[@]}" run "${CASE[@]}" --variants sdpa_flash --json "$D/traces/sdpa_flash.json" --trace-dir "$D/traces"
printf '2-10\nn\n\n\ny\nflash\n\n\n' | r guess 0 "${A[@]}" guess "${CASE[@]}" --variants naive,sdpa_math,sdpa_default,sdpa_flash \
  --budget 0.2 --save "$D/answers.toml" --json "$D/guess.json"
r variants 0 "${A[@]}" variants --device cuda:0 --seq 1024
timeout 150 python3 - "$D" >"$D/library.txt" 2>&1 <<'PY'
import json, sys
from attnscope.api.running import RunRequest, run_request
d = sys.argv[1]
req = RunRequest(case={"batch": 2, "heads": 8, "seq_q": 1024, "head_dim": 64, "dtype": "bf16"}, device="cuda",
                 variants="sdpa_flash,sdpa_cudnn", json=f"{d}/library.json", timing_budget_s=0.2)
doc = run_request(req)
print("unwritten", doc.unwritten, "case", doc.case.label())
for r in doc["results"]:
    print(r["variant"], r["status"], (r.get("gpu_time") or {}).get("median_us"), r.get("reason"))
print("json rows", [x["variant"] for x in json.load(open(f"{d}/library.json"))["results"]])
PY
echo "library rc=$? (expect 0)" >>"$D/rc.txt"
python3 - "$D" >>"$D/rc.txt" 2>&1 <<'PY'
import json, sys
d = sys.argv[1]
for name in ("run", "guess"):
    try:
        doc = json.load(open(f"{d}/{name}.json"))
        print(name, "rows", [(r["variant"], r["status"]) for r in doc["results"]], "verdicts", len(doc.get("verdicts") or []))
    except Exception as e:  # noqa: BLE001
        print(name, "no document:", e)
PY
cat "$D/rc.txt"
