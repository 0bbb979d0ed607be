#!/usr/bin/env bash
# attnscope analyze on the GPU host's quiet CPU (no GPU used): hostile inputs at full size (one line, exit 2, < 100 MiB each), memory by stage on the Llama trace at 1x and 8x, and --json peaks.
# estimate: 170 s
set -u; D=$1
{ nproc; uptime; python3 -c "import msgspec, isal, orjson; print('msgspec', msgspec.__version__, 'isal', isal.__version__, 'orjson', orjson.__version__)"; } >"$D/host.txt" 2>&1
timeout 240 python3 benchmarks/hostile_traces.py >"$D/hostile_traces.txt" 2>&1; echo "rc=$?" >>"$D/hostile_traces.txt"
timeout 60 python3 benchmarks/long_trace.py tests/data/llama_train_sdpa.json.gz --times 8 --out /tmp/llama_x8.json.gz >"$D/long_trace.txt" 2>&1
timeout 120 python3 benchmarks/memory_stages.py tests/data/llama_train_sdpa.json.gz /tmp/llama_x8.json.gz \
  >"$D/memory_stages.txt" 2>&1; echo "rc=$?" >>"$D/memory_stages.txt"
# the peak RSS of analyze --json, one fresh process per trace (ru_maxrss of the child)
for t in tests/data/llama_train_sdpa.json.gz /tmp/llama_x8.json.gz; do
  python3 - "$t" >>"$D/json_peaks.txt" 2>&1 <<'PY'
import os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen([sys.executable, "-m", "attnscope.cli.main", "analyze", sys.argv[1], "--json", "/tmp/bounds.json"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read().decode()
_, st, ru = os.wait4(p.pid, 0)
print(f"{sys.argv[1]}: exit {os.waitstatus_to_exitcode(st)}, peak RSS {ru.ru_maxrss / 1024:.0f} MiB, "
      f"{ru.ru_utime + ru.ru_stime:.2f} s CPU, {time.perf_counter() - t0:.2f} s wall, JSON {os.path.getsize('/tmp/bounds.json'):,} B")
print(err[-500:], end="")
PY
done
rm -f /tmp/bounds.json /tmp/llama_x8.json.gz
