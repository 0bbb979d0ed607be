#!/usr/bin/env bash
# Two GPUs (a two-GPU host): the same 120 forward jobs on --devices cuda:0 and on cuda:0,cuda:1.
# estimate: 300 s
set -u; D=$1; T=$(mktemp -d)
OUT=$T PARTS=gpus2 bash benchmarks/gpu/sweep.sh
tar xzf "$T/sweep.tgz" -C "$D" --strip-components=1
