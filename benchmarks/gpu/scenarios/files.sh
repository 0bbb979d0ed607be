#!/usr/bin/env bash
# The user's files on CUDA: traces exported into a private folder then moved to --trace-dir (a link planted at Kineto's <trace>.tmp and at the trace left untouched), nothing left in TMPDIR without --trace-dir (run, model), a second sweep writer refused while the first holds --out, a full --trace-dir/--json on a 64 KiB tmpfs where one can be mounted.
# estimate: 150 s
set -u; D=$1
T=$D/tmp; mkdir -p "$T"; export TMPDIR=$T   # every temporary folder of this scenario, so that leftovers show
check() { if eval "$2"; then echo "OK   $1"; else echo "FAIL $1"; fi; }
{
  # 1. run --trace-dir with links planted where Kineto and the trace would write
  mkdir -p "$D/traces"; echo precious >"$D/victim1"; echo precious >"$D/victim2"
  ln -s "$D/victim1" "$D/traces/sdpa_flash.json.tmp"; ln -s "$D/victim2" "$D/traces/sdpa_flash.json"
  timeout 120 $ATTNSCOPE run --variants sdpa_flash,sdpa_math --seq 1024 --budget 0.1 --trace-dir "$D/traces" \
    --json "$D/run.json" >"$D/run.txt" 2>&1; echo "run rc=$?"
  check "victims unchanged" '[ "$(cat "$D/victim1" "$D/victim2")" = "$(printf "precious\nprecious")" ]'
  check "trace kept as a file" '[ -f "$D/traces/sdpa_flash.json" ] && [ ! -L "$D/traces/sdpa_flash.json" ]'
  check "trace has CUDA kernels" 'grep -q "\"cat\": \"kernel\"" "$D/traces/sdpa_flash.json"'
  check "trace_path in the JSON" 'grep -q "traces/sdpa_flash.json" "$D/run.json"'
  # 2. no --trace-dir: nothing left in TMPDIR (torch's own caches aside)
  timeout 120 $ATTNSCOPE run --variants sdpa_flash --seq 1024 --budget 0.1 >"$D/run_notrace.txt" 2>&1
  echo "run (no --trace-dir) rc=$?"
  timeout 200 $ATTNSCOPE model --config tiny --mode prefill --impl sdpa --seq 128 --budget 0.2 \
    --json "$D/model.json" >"$D/model.txt" 2>&1; echo "model rc=$?"
  check "nothing of attnscope left in TMPDIR" '[ -z "$(ls "$T" | grep -i attnscope)" ]'
  ls -la "$T"
  # 3. two sweeps on one store: the second is refused in one line, exit 2, while the first runs
  timeout 200 $ATTNSCOPE sweep --seq 512,1024,2048 --variants sdpa_flash,sdpa_math --budget 0.1 \
    --out "$D/s.jsonl" >"$D/sweep1.txt" 2>&1 &
  first=$!; sleep 5
  timeout 60 $ATTNSCOPE sweep --seq 512 --variants sdpa_flash --out "$D/s.jsonl" --resume >"$D/sweep2.txt" 2>&1
  echo "second sweep rc=$? (expect 2): $(cat "$D/sweep2.txt")"
  wait $first; echo "first sweep rc=$?"
  # the GPU's default grid crosses the three lengths with its other axes (12 cases here): count against its head
  planned=$(sed -n 's/.* = \([0-9]*\) job(s).*/\1/p' "$D/sweep1.txt" | head -1)
  distinct=$(python3 -c "import json,sys; print(len({(r['variant'], json.dumps(r['case'], sort_keys=True), r['mode']) for r in map(json.loads, filter(str.strip, open(sys.argv[1])))}))" "$D/s.jsonl")
  check "every row once ($planned planned)" '[ "$(wc -l <"$D/s.jsonl")" -eq "$planned" ] && [ "$distinct" -eq "$planned" ]'
  # 4. a full disk, where a tmpfs can be mounted here
  mkdir -p "$D/full"
  if mount -t tmpfs -o size=64k tmpfs "$D/full" 2>/dev/null; then
    head -c 61440 /dev/zero >"$D/full/filler" 2>/dev/null
    timeout 120 $ATTNSCOPE run --variants sdpa_flash --seq 1024 --budget 0.1 --json "$D/full/r.json" \
      --trace-dir "$D/full/traces" >"$D/full_disk.txt" 2>&1; echo "full disk rc=$? (expect 74)"
    check "ENOSPC named" 'grep -q "ENOSPC" "$D/full_disk.txt"'
    check "table printed" 'grep -q "sdpa_flash" "$D/full_disk.txt"'
    ls -laR "$D/full"; umount -l "$D/full"
  else
    echo "no tmpfs can be mounted here: full-disk check left out"
  fi
} >"$D/files.txt" 2>&1
cat "$D/files.txt"
