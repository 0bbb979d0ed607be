#!/usr/bin/env bash
# The sweep: seq 128..16384x2, D 64/128, causal both, fwd and fwd_bwd, one isolated job each (SWEEP_BUDGET_S, default 340 s).
# estimate: 400 s
set -u; D=$1; T=$(mktemp -d)
OUT=$T bash benchmarks/gpu/sweep.sh
tar xzf "$T/sweep.tgz" -C "$D" --strip-components=1
