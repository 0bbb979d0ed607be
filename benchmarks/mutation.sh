#!/usr/bin/env bash
# Mutation testing of the pure calculators: mutmut changes the code one place at a time and
# the fast tests must fail for each change.  Runs in a scratch copy of the working tree (the
# checkout is never touched), reported per file.
#
#   bash benchmarks/mutation.sh                          # every file below (resumes: mutants
#                                                        # already tested in MUTATION_WORK stay)
#   bash benchmarks/mutation.sh attnscope/core/flops.py ...   # the mutants of some files (re-tested)
#   bash benchmarks/mutation.sh 'attnscope.core.flops.x_attention_flops__mutmut_3' ...
#                                                        # some mutants by name (a sample)
#
# mutmut always mutates every file below (the same configuration each run, so its test
# statistics, gathered once with the whole fast suite, are reused); the arguments choose which
# mutants are run.  MUTATION_TESTS (test files or folders, space-separated) narrows both: only the
# files named are mutated and only those tests run, for one file's pass on a busy machine (give
# each such narrowed run its own MUTATION_WORK: mutmut keeps the configuration of the copy).  MUTATION_WORK names a directory kept between runs (results accumulate, a
# stopped run loses only the mutants in flight); without it a temporary copy is used and removed.
#
# Writes $MUTATION_OUT (default: mutation-report/): summary.txt with one line per file, and
# survivors.txt with the diff of every surviving mutant.  MUTATION_JOBS (default 2) test
# processes run at once.  Only the fast tests run: the live CPU runs, CLI subprocesses and the
# browser test take seconds each; the calculators' own tests cover the same code.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || py=python3
jobs=${MUTATION_JOBS:-2}
out=$(realpath -m "${MUTATION_OUT:-mutation-report}")
mkdir -p "$out"

# The pure calculators (plain data in and out) and the newer code's pure parts: the workloads'
# inputs, reference and size estimates, the store and the job's resume keys, a sweep's plan and
# the library's checks of its arguments.
shopt -s globstar
all_targets=(attnscope/analysis/**/*.py attnscope/core/flops.py attnscope/core/masks.py attnscope/core/gpus.py
    attnscope/api/diff.py attnscope/measure/timing.py attnscope/workloads/attention.py
    attnscope/workloads/reference.py attnscope/workloads/hf/size.py attnscope/workloads/sizing.py
    attnscope/execute/store.py attnscope/execute/job.py attnscope/execute/sweep_plan.py attnscope/core/arguments.py)
shopt -u globstar
names=()
targets=()
for a in "$@"; do
    case "$a" in
        *.py)
            [ -f "$a" ] || { echo "mutation.sh: no such file: $a" >&2; exit 2; }
            targets+=("$a")
            mod=${a%.py}
            names+=("${mod//\//.}.*")
            ;;
        *)
            names+=("$a")
            # the file of a mutant name: attnscope.core.flops.x_tflops__mutmut_3 → attnscope/core/flops.py
            f=$(echo "$a" | sed -E 's/\.x(_|ǁ).*//; s/\./\//g').py
            [ -f "$f" ] && [[ " ${targets[*]} " != *" $f "* ]] && targets+=("$f")
            ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
# test_startup: fresh interpreters that check which modules a command imports (mutmut's trampolines import more);
# test_hostile_input: a fresh `analyze` held under 100 MiB of peak memory, which the trampolines push past (161 MiB),
# so the statistics pass failed
slow=(variants/test_live_run variants/test_run_cpu cli/test_cli cli/test_guess_cli report/test_html_browser
    cli/test_model_cli variants/test_external cli/test_bad_inputs measure/test_peak
    variants/test_plugins cli/test_startup trace/test_hostile_input)
if ! "$py" -c "import mutmut" 2>/dev/null; then
    echo "mutmut is not installed: bash scripts/setup.sh dev" >&2
    exit 2
fi

quoted() { local IFS=,; echo "$*"; }
mutated=("${all_targets[@]}")
selection=("\"tests\"")
if [ -n "${MUTATION_TESTS:-}" ]; then
    [ ${#targets[@]} -gt 0 ] || { echo "mutation.sh: MUTATION_TESTS needs the files to mutate" >&2; exit 2; }
    mutated=("${targets[@]}")
    selection=()
    for t in $MUTATION_TESTS; do
        [ -e "$t" ] || { echo "mutation.sh: no such test path: $t" >&2; exit 2; }
        selection+=("\"$t\"")
    done
fi
paths=()
for t in "${mutated[@]}"; do
    case "$t" in */__init__.py) ;; *) paths+=("\"$t\"") ;; esac
done
ignore=()
for s in "${slow[@]}"; do ignore+=("\"--ignore=tests/$s.py\""); done
# It reloads attnscope.trace: tests that run after it (mutmut reorders them) hold a stale TraceError.
ignore+=("\"--deselect=tests/trace/test_trace_reader.py::test_reader_without_orjson_or_msgspec_gives_the_same_trace\"")
# The model-scale trace takes seconds per run; the synthetic and H200 traces pin the same rules.
ignore+=("\"--deselect=tests/analysis/fingerprint/test_breakdown_real.py::test_llama_training_trace_against_raw_counts\"")
# Tests that run variants on the CPU (marked slow, and five unmarked ones) cost seconds each, and
# mutmut runs every test that reaches a mutated function: they made a surviving mutant of the trace
# readers cost ~30 s.  The calculators' own tests pin the same numbers.
ignore+=("\"-m\"" "\"not slow\"")
for t in report/test_html.py::test_run_html_flag_draws_from_the_documents_own_start_times \
    execute/test_jobs.py::test_fwd_bwd_checks_gradients_against_fp64_and_counts_3_5x_flops \
    execute/test_jobs.py::test_inline_oom_is_a_row_and_frees_the_cached_workload \
    execute/test_jobs.py::test_real_result_round_trips_through_a_json_line \
    workloads/test_model_annotate.py::test_annotate_puts_everything_back \
    workloads/test_sizing.py::test_cli_refuses_a_case_that_cannot_fit_before_any_work; do
    ignore+=("\"--deselect=tests/$t\"")
done

# Workers fork from a server that has only imported the tests (forkserver): forked from mutmut's
# own process, which ran the whole suite (torch's thread pools, mutmut's threads), a worker can
# hang on a lock the fork copied held, and every mutant of a function reached by it "times out".
# Tests read the repository's own files (data, docs, examples): mutmut's copy gets them all.
copy=()
for f in $(git ls-files | cut -d/ -f1 | sort -u); do copy+=("\"$f\""); done

if [ -n "${MUTATION_WORK:-}" ]; then
    work=$(realpath -m "$MUTATION_WORK")
    case "$work/" in "$root"/*) echo "mutation.sh: MUTATION_WORK must lie outside the checkout" >&2; exit 2 ;; esac
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work"
cat >>"$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = [$(quoted "${paths[@]}")]
also_copy = [$(quoted "${copy[@]}")]
pytest_add_cli_args = ["-p", "no:warnings", "-p", "no:cacheprovider", "-q", $(quoted "${ignore[@]}")]
pytest_add_cli_args_test_selection = [$(quoted "${selection[@]}")]
process_isolation = "forkserver"
EOF
start=$(date +%s)
if ! (cd "$work" && KINETO_LOG_LEVEL=6 "$py" -m mutmut run --max-children "$jobs" "${names[@]}" >"$work/run.log" 2>&1); then
    cp "$work/run.log" "$out/mutmut.log"
    echo "mutmut failed; its log is in $out/mutmut.log" >&2
    exit 1
fi
(cd "$work" && "$py" -m mutmut results --all true 2>/dev/null) | sed 's/^ *//' >"$out/results.txt" || true

{
    echo "mutmut $("$py" -c 'import mutmut; print(mutmut.__version__)'), $(date -u +%FT%TZ), $(($(date +%s) - start)) s, $jobs jobs"
    echo "score = (killed + timeout) / mutants tested; 'no tests' counts as tested and not killed"
    for t in "${targets[@]}"; do
        case "$t" in */__init__.py) continue ;; esac
        mod=$(echo "${t%.py}" | tr '/' '.')
        awk -v mod="$mod" -v file="$t" '
            index($0, mod ".") == 1 {
                st = $0; sub(/^[^:]*: /, "", st); n[st]++; all++
            }
            END {
                k = n["killed"] + n["timeout"]
                tested = all - (("not checked" in n) ? n["not checked"] : 0)
                printf "%s: %d mutants, %d killed, %d timeout, %d survived, %d no tests", file, all, n["killed"], n["timeout"], n["survived"], n["no tests"]
                for (st in n)
                    if (st != "killed" && st != "timeout" && st != "survived" && st != "no tests") printf ", %d %s", n[st], st
                if (tested > 0) printf "; killed %.1f%% of %d tested", 100 * k / tested, tested
                printf "\n"
            }' "$out/results.txt"
    done
} | tee "$out/summary.txt"

: >"$out/survivors.txt"
prefixes=()
for t in "${targets[@]}"; do prefixes+=(-e "$(echo "${t%.py}" | tr '/' '.').");  done
# Each survivor's diff, read from mutmut's mutated sources in one process (a `mutmut show` per mutant
# costs a second or more each).
grep -E ': (survived|no tests)$' "$out/results.txt" | grep -F "${prefixes[@]}" | (cd "$work/mutants" && "$py" -c '
import ast, difflib, re, sys

bodies = {}


def body(path, name):
    if path not in bodies:
        src = open(path).read().splitlines()
        bodies[path] = {
            n.name: src[n.lineno : n.end_lineno]
            for n in ast.walk(ast.parse("\n".join(src)))
            if isinstance(n, ast.FunctionDef) and "__mutmut_" in n.name
        }
    return bodies[path].get(name)


for line in sys.stdin:
    key, status = line.strip().rsplit(": ", 1)
    mod, func, n = re.match(r"(.*?)\.(x[_\u01c1].*)__mutmut_(\d+)$", key).groups()
    path = mod.replace(".", "/") + ".py"
    orig, mut = body(path, func + "__mutmut_orig"), body(path, func + "__mutmut_" + n)
    print(f"== {key} ({status})")
    if orig and mut:
        for d in difflib.unified_diff(orig, mut, lineterm="", n=0):
            if not d.startswith(("---", "+++", "@@")):
                print(d)
    print()
') >"$out/survivors.txt"
echo "surviving mutants: $out/survivors.txt"
