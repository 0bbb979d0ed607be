#!/usr/bin/env bash
# Tensor cores from evidence (about 3-4 minutes on the H200): Nsight Compute's tensor-pipe
# counters for every kernel kind attnscope's variants launch (bf16, fp16, fp32; forward and
# backward; a decode shape), and a deep-mode pass (occupancy, throughput, DRAM, L2, stalls)
# on the fused kernels at the GPU default case.  Writes $OUT/ncu_tc.tgz:
#   metrics_query.txt   ncu --query-metrics on this GPU (which names exist)
#   metrics_used.txt    the tensor-pipe metrics asked for (those that exist)
#   ncu_tc.csv          --page raw CSV, one row per kernel;  sections.json: which section each kernel is in
#   ncu_deep.csv        --page raw CSV of the deep-mode sections on flash/cuDNN/efficient/flex fwd
#   *.err, versions.txt logs
# Run from the repository root: bash benchmarks/gpu/ncu_tc.sh
#   bash benchmarks/gpu/ncu_tc.sh rest   (about 3 min): only compiled flex (3 dtypes), the decode shape and
#   S777 D128 efficient, which the first pass ran out of time for; writes $OUT/ncu_tc_rest.tgz, no deep pass.
set -u
PART=${1:-all}
NAME=ncu_tc; [ "$PART" = rest ] && NAME=ncu_tc_rest
W=/tmp/$NAME; rm -rf $W; mkdir -p $W
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
(ncu --version; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c 'import torch; print(torch.__version__)') \
  > $W/versions.txt 2>&1
ncu --query-metrics > $W/metrics_query.txt 2>&1
have() { grep -q -E "^$1[[:space:]]" $W/metrics_query.txt; }
# Candidate counters; only names this ncu lists are used, so a missing one never sinks the run.
M=""
for base in sm__inst_executed_pipe_tensor_op_hmma sm__inst_executed_pipe_tensor_op_gmma \
            sm__inst_executed_pipe_tensor_op_imma sm__inst_executed_pipe_tensor_op_dmma \
            sm__inst_executed_pipe_tensor_op_hmma_type_hfma2 sm__inst_executed_pipe_tensor \
            sm__inst_executed_pipe_fma sm__inst_executed_pipe_fp16 \
            sm__sass_thread_inst_executed_op_hfma_pred_on sm__sass_thread_inst_executed_op_ffma_pred_on; do
  have $base && M="$M,$base.sum"
done
for base in sm__pipe_tensor_op_hmma_cycles_active sm__pipe_tensor_op_gmma_cycles_active sm__pipe_tensor_cycles_active; do
  have $base && M="$M,$base.avg.pct_of_peak_sustained_active"
done
# Extra tensor-pipe names this GPU lists (e.g. per-type hmma counters), at most 8.
for base in $(grep -o -E "^sm__inst_executed_pipe_tensor_op_[a-z0-9_]+" $W/metrics_query.txt | sort -u | head -8); do
  case ",$M," in *",$base.sum,"*) ;; *) M="$M,$base.sum";; esac
done
M="gpu__time_duration.sum${M}"
OPC=""
have sass__inst_executed_per_opcode && OPC="sass__inst_executed_per_opcode"
echo "$M" | tr ',' '\n' > $W/metrics_used.txt; echo "$OPC" >> $W/metrics_used.txt
# Check the set on one tiny kernel first: drop the opcode metric if ncu refuses it.
probe() { timeout 60 ncu --csv --page raw --metrics "$1" $2 -c 1 python3 -c \
  'import torch; a=torch.randn(64,64,device="cuda",dtype=torch.half); (a@a).sum().item()' > $W/probe.csv 2> $W/probe.err; }
INST="--print-metric-instances values"
if [ -n "$OPC" ] && ! probe "$M,$OPC" "$INST"; then echo "opcode metric refused: $(tail -2 $W/probe.err)" >> $W/versions.txt; OPC=""; fi
if [ -z "$OPC" ]; then INST=""; probe "$M" "" || echo "probe failed: $(tail -2 $W/probe.err)" >> $W/versions.txt; fi
t0=$(date +%s)
timeout 200 ncu --profile-from-start off --target-processes application-only --clock-control none --csv --page raw \
  --metrics "$M${OPC:+,$OPC}" $INST python3 benchmarks/gpu/ncu_tc_driver.py $W/sections.json 140 $PART \
  > $W/ncu_tc.csv 2> $W/ncu_tc.err
echo "tensor-pipe pass: rc=$? in $(( $(date +%s) - t0 )) s, $(grep -c spin_kernel $W/ncu_tc.csv) markers, $(wc -l < $W/ncu_tc.csv) lines"
t0=$(date +%s)
[ "$PART" = rest ] || timeout 90 ncu --clock-control none --csv --page raw \
  --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
  --metrics "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active${M#gpu__time_duration.sum}" \
  -k 'regex:flash_fwd|cudnn_generated|fmha_cutlass|triton_tem' python3 benchmarks/ncu_kernels.py \
  > $W/ncu_deep.csv 2> $W/ncu_deep.err
echo "deep pass: rc=$? in $(( $(date +%s) - t0 )) s, $(wc -l < $W/ncu_deep.csv) lines"
tail -3 $W/ncu_tc.err $W/ncu_deep.err
tar czf "$OUT/$NAME.tgz" -C /tmp $NAME && ls -la "$OUT/$NAME.tgz"
