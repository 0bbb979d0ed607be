#!/usr/bin/env bash
# The fuzzer (benchmarks/fuzz.py) on this machine's CPU cores, one worker a core: FUZZ_START and FUZZ_SPECS choose the shard (default the whole 10,000), FUZZ_LIMIT its time limit in seconds; shards add up with --merge.
# estimate: 480 s
set -u; D=$1
nice -n 5 python3 benchmarks/fuzz.py --start "${FUZZ_START:-0}" --specs "${FUZZ_SPECS:-10000}" --workers "$(nproc)" \
  --time-limit "${FUZZ_LIMIT:-540}" --out "$D/fuzz.json" > "$D/fuzz.md" 2> "$D/fuzz.err"
echo "fuzz rc=$?"; tail -40 "$D/fuzz.md"
