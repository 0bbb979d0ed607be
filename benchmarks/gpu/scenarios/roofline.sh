#!/usr/bin/env bash
# The roofline: decode B8 H32 KV8 Sq1 Sk8192 D128 with lower-right causal and with no mask, a B1 H32 S4096 prefill, and a read-bandwidth probe.
# estimate: 150 s
set -u; D=$1
timeout 400 bash benchmarks/gpu/roofline.sh "$D"
