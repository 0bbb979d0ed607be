#!/usr/bin/env bash
# attnscope analyze on a directory of 16 ranks' traces (the Llama training trace, 16 copies) with --jobs 1, 2, 4, 8, 16: the process pool on the GPU host's CPU cores; no GPU used.
# estimate: 120 s
set -u; D=$1
{ nproc; python3 -c "import msgspec, isal; print('msgspec', msgspec.__version__, 'isal', isal.__version__)"; } >"$D/host.txt" 2>&1
timeout 400 python3 benchmarks/analyze_speed.py tests/data/llama_train_sdpa.json.gz --runs 2 --ranks 16 \
  --jobs-list 1,2,4,8,16 >"$D/analyze_ranks.txt" 2>&1
echo "rc=$?" >>"$D/analyze_ranks.txt"
