#!/usr/bin/env bash
# Issue 12 on one H200, about 6 minutes (SWEEP_BUDGET_S, default 340 s for the measuring steps).
# Run from the repository root on the GPU machine; $OUT must be set.  Writes $OUT/sweep.tgz:
#   sweep.jsonl          the real sweep: H=16, B·S = 16384, seq 128..16384x2, head_dim 64,128, causal both,
#                        fwd and fwd_bwd; sdpa_flash, sdpa_cudnn, sdpa_efficient, sdpa_default, sdpa_math,
#                        naive first, flex_compiled (a compile per case) after them.  Stopped by SIGINT at
#                        the time cap and resumable: carry it back as docs/results/raw/h200_sweep.jsonl (or
#                        set SWEEP_PREV) and run again with PARTS=sweep to measure what is still missing.
#   sweep_*.txt          what the sweep printed (per-job lines, summary, recommendation)
#   recommend.json       the recommendation over every row of sweep.jsonl (attnscope recommend's document)
#   subset_process.jsonl 7 variants × 2 cases (S=1024, 4096, D=128, causal, fwd_bwd) on the process executor
#   subset_ray.jsonl     the same jobs on the Ray executor (one GPU actor), if Ray imports
#   traces/              the fwd_bwd traces of sdpa_flash and sdpa_cudnn from the subset (gzipped)
#   summary.txt          rows and statuses, what is missing, per-job cost by stage, process vs Ray
# Ray: its wheels (ray without ray/jars/, and its pure-Python dependencies) in .whl/ray/; installed with
# --no-deps --no-index into /tmp/site_ray.  If `import ray` fails the Ray step is skipped and says so.
# PARTS (default subset,sweep) picks the steps; PARTS=gpus2 on a two-GPU host times the same 120 fwd jobs on
# --devices cuda:0 and on --devices cuda:0,cuda:1 (gpus1/gpus2.jsonl; the goal is ≥ 1.8× the jobs per second).
set -u
T0=$(date +%s)
BUDGET=${SWEEP_BUDGET_S:-340}
PARTS=${PARTS:-subset,sweep}
W=/tmp/sweep; rm -rf $W; mkdir -p $W/traces
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
A="python3 -m attnscope.cli.main"
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
# cap WANT RESERVE: WANT seconds, or what is left after keeping RESERVE for the steps after this one
cap() { local l=$(( $(left) - $2 )); if [ "$l" -lt "$1" ]; then echo "$l"; else echo "$1"; fi; }
now() { date +%s.%N; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > $W/env.txt 2>&1

RAY=no
if [[ $PARTS == *subset* ]]; then
  if ls .whl/ray/*.whl >/dev/null 2>&1; then
    t=$(now)
    timeout 120 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site_ray \
      .whl/ray/*.whl > $W/pip_ray.txt 2>&1
    echo "pip rc=$? in $(python3 -c "print(f'{$(now) - $t:.1f}')") s" >> $W/pip_ray.txt
    export PYTHONPATH=/tmp/site_ray:$PYTHONPATH
  fi
  if timeout 60 python3 -c "import ray; print('ray', ray.__version__)" >> $W/env.txt 2>&1; then
    RAY=yes
  else
    echo "ray: import failed (see env.txt, pip_ray.txt): the Ray step is skipped" | tee -a $W/env.txt
  fi
fi
cat $W/env.txt

# (c)+(d): the same 14 jobs on the process executor and on Ray; the process run keeps its traces
SUB="--device cuda --heads 16 --seq 1024,4096 --head-dim 128 --causal yes --mode fwd_bwd --budget-tokens 16384
     --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,sdpa_default,sdpa_math,naive,flex --budget 0.05 --timeout 60"
if [[ $PARTS == *subset* ]]; then
  c=$(cap 75 150); t=$(now)
  # shellcheck disable=SC2086
  timeout -s INT -k 15 "$c" $A sweep $SUB --executor process --trace-dir $W/traces_all \
    --out $W/subset_process.jsonl > $W/subset_process.txt 2>&1
  echo "subset process: rc=$? wall $(python3 -c "print(f'{$(now) - $t:.1f}')") s (cap $c s)" | tee -a $W/steps.txt
  if [ "$RAY" = yes ]; then
    c=$(cap 100 130); t=$(now)
    # shellcheck disable=SC2086
    timeout -s INT -k 20 "$c" $A sweep $SUB --executor ray --out $W/subset_ray.jsonl > $W/subset_ray.txt 2>&1
    echo "subset ray: rc=$? wall $(python3 -c "print(f'{$(now) - $t:.1f}')") s (cap $c s)" | tee -a $W/steps.txt
  fi
  for f in $W/traces_all/sdpa_flash-*fwd_bwd.json $W/traces_all/sdpa_cudnn-*fwd_bwd.json; do
    [ -e "$f" ] && gzip -c "$f" > "$W/traces/$(basename "$f").gz"
  done
  rm -rf $W/traces_all
fi

# (a): the real sweep, resumable; the cheap variants first, then the one that compiles per case
GRID="--device cuda --heads 16 --seq 128..16384x2 --head-dim 64,128 --causal both --mode fwd,fwd_bwd
      --budget-tokens 16384 --budget 0.05 --timeout 90"
PREV=${SWEEP_PREV:-docs/results/raw/h200_sweep.jsonl}
if [[ $PARTS == *sweep* ]]; then
  if [ -f "$PREV" ]; then cp "$PREV" $W/sweep.jsonl; echo "resuming from $PREV ($(wc -l < "$PREV") lines)"; fi
  for phase in "sdpa_flash,sdpa_cudnn,sdpa_efficient,sdpa_default,sdpa_math,naive" "flex_compiled"; do
    c=$(cap 600 25)
    if [ "$c" -lt 20 ]; then echo "sweep [$phase]: no time left" | tee -a $W/steps.txt; continue; fi
    t=$(now)
    # shellcheck disable=SC2086
    timeout -s INT -k 20 "$c" $A sweep $GRID --variants "$phase" --out $W/sweep.jsonl --resume --json $W/recommend.json \
      > "$W/sweep_${phase%%,*}.txt" 2>&1
    echo "sweep [$phase]: rc=$? wall $(python3 -c "print(f'{$(now) - $t:.1f}')") s (cap $c s; 124 = stopped at the cap by SIGINT after saving, resumable)" \
      | tee -a $W/steps.txt
  done
fi

# 2 GPUs against 1 on the same 120 jobs (PARTS=gpus2, on a host with two GPUs: nvidia-h200-x2)
G="--heads 16 --seq 256..4096x2 --head-dim 64,128 --causal both --mode fwd --budget-tokens 16384 --budget 0.05
   --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,sdpa_default,sdpa_math,naive --timeout 90"
if [[ $PARTS == *gpus2* ]]; then
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    for devs in cuda:0 cuda:0,cuda:1; do
      n=$(( ${#devs} > 6 ? 2 : 1 )); c=$(cap 170 30); t=$(now)
      # shellcheck disable=SC2086
      timeout -s INT -k 20 "$c" $A sweep $G --devices $devs --out $W/gpus$n.jsonl > $W/gpus$n.txt 2>&1
      echo "gpus$n: rc=$? wall $(python3 -c "print(f'{$(now) - $t:.1f}')") s (cap $c s)" | tee -a $W/steps.txt
    done
  else
    echo "gpus2: this host has fewer than 2 GPUs; skipped" | tee -a $W/steps.txt
  fi
fi

timeout 60 python3 benchmarks/gpu/sweep_report.py $W > $W/summary.txt 2>&1
cat $W/summary.txt
tail -n 30 $W/sweep_sdpa_flash.txt 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
tar czf "$OUT/sweep.tgz" -C /tmp sweep && ls -la "$OUT/sweep.tgz"
