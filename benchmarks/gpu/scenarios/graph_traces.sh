#!/usr/bin/env bash
# CUDA graph replays as analyze must see through them: capture and replays in one trace, a two-stream graph, torch.compile reduce-overhead; each analysed.
# estimate: 90 s
set -u; D=$1
timeout 170 python3 benchmarks/gpu/graph_traces.py "$D" >"$D/graph_traces.txt" 2>&1
echo "rc=$?" >>"$D/graph_traces.txt"
exit 0
