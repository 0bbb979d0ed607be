#!/usr/bin/env bash
# The one device parser and the library's words on a GPU: good devices measured, bad ones refused in one line (exit 2).
# estimate: 90 s
# Each line of devices.txt: the exit status, the command, and its last stderr line. Expected: rc 0 for the cuda and
# cuda:0 rows; rc 2 naming --device / --devices for cuda:99, cudaXYZ and cuda:0,cuda:0; the library's lines name
# case.device / devices, never a --flag.
set -u; D=$1
T="--batch 1 --heads 2 --seq 64 --head-dim 64 --budget 0.05 --no-peak"
row() {  # row NAME CMD...: run it, keep its status and last stderr line
  local name=$1; shift
  timeout 120 "$@" >"$D/$name.out" 2>"$D/$name.err"
  printf '%s\t%s\t%s\n' "$?" "$*" "$(tail -1 "$D/$name.err")" >>"$D/devices.txt"
}
: >"$D/devices.txt"
row run_cuda $ATTNSCOPE run --device cuda $T --variants sdpa_default
row run_cuda0 $ATTNSCOPE run --device cuda:0 $T --variants sdpa_default
row run_cuda99 $ATTNSCOPE run --device cuda:99 $T --variants sdpa_default
row run_cudaxyz $ATTNSCOPE run --device cudaXYZ $T --variants sdpa_default
row sweep_devices0 $ATTNSCOPE sweep --devices cuda:0 --seq 64 --head-dim 64 --causal yes --budget 0.05 \
  --variants sdpa_default --out "$D/sweep.jsonl"
row sweep_twice $ATTNSCOPE sweep --devices cuda:0,cuda:0 --variants sdpa_default --out "$D/sweep2.jsonl"
row sweep_99 $ATTNSCOPE sweep --devices cuda:99 --variants sdpa_default --out "$D/sweep3.jsonl"
row model_cuda0 $ATTNSCOPE model --config tiny --device cuda:0 --impl sdpa --mode prefill --seq 16 --budget 0.05
row model_cuda99 $ATTNSCOPE model --config tiny --device cuda:99 --impl sdpa --mode prefill --seq 16
row model_cudaxyz $ATTNSCOPE model --config tiny --device cudaXYZ --impl sdpa --mode prefill --seq 16
python3 - >>"$D/devices.txt" 2>&1 <<'EOF'
import attnscope
from attnscope.execute.executors import parse_devices
for call in (lambda: attnscope.run(attnscope.Case(1, 2, 64, 64, device="cuda:99"), "sdpa_default"),
             lambda: parse_devices("cuda:0,cuda:0")):
    try:
        call()
        print("library\taccepted")
    except ValueError as e:
        print(f"library\t{type(e).__name__}\t{e}\tfields={getattr(e, 'fields', ())}")
EOF
cat "$D/devices.txt"
