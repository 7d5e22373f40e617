#!/usr/bin/env bash
# Profile a benchmark run with rocprofv3 (ROCm). See --help.
set -euo pipefail
SCRIPT_NAME=rocprof_capture.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$here/lib/common.sh"

usage() {
    cat <<'USAGE'
usage: scripts/rocprof_capture.sh [--dry-run] [pytest arguments...]

Runs `rocprofv3 $ROCPROF_ARGS -d <run dir> -- python3 -m pytest [pytest arguments...]` from the
repository root (benchmarks/hw_queue unless an argument names a test path). Everything of one run lands in
  $ROCPROF_OUTPUT_DIR/run_<UTC timestamp>/
    <host>/<pid>/...   rocprofv3's traces (kernel, HIP API, memory copies; csv and Perfetto)
    benchmark.json     the pytest-benchmark JSON (unless you pass --benchmark-json yourself)
    capture.json       tool, command, host, start/end time (UTC and Unix ns) and exit code, to line
                       the traces up with the benchmark JSON's "datetime"
    queues.json        the traces read back (`aorta trace figures`, one rank per *kernel_trace.csv):
                       kernels, busy time and streams per hardware queue, how many queues were used

Environment:
  ROCPROF_OUTPUT_DIR  parent folder of the run folders (default rocprof_traces)
  ROCPROF_ARGS        rocprofv3 options (default:
                      --kernel-trace --hip-trace --memory-copy-trace --output-format csv pftrace)
  PYTHON              interpreter for pytest (default python3)
  AORTA_DRY_RUN=1     same as --dry-run

Options:
  --dry-run     print the command and the run folder, create nothing
  -h, --help    this text

Exit codes: 0 success or dry run; 2 bad usage; 127 rocprofv3 not found (it ships with ROCm 6.2+
in /opt/rocm/bin); otherwise the profiled run's exit code.
USAGE
}

dry_run=0
dry_run_from_env && dry_run=1
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --dry-run) dry_run=1; shift ;;
        --) shift; break ;;
        *) break ;;
    esac
done

cd "$here/.."
run_dir=$(new_run_dir "${ROCPROF_OUTPUT_DIR:-rocprof_traces}")
read -r -a rocprof_args <<<"${ROCPROF_ARGS:---kernel-trace --hip-trace --memory-copy-trace --output-format csv pftrace}"
bench_command "$run_dir" "$@"
# "--" ends rocprofv3's options (--output-format takes several values) before the application.
cmd=(rocprofv3 "${rocprof_args[@]}" -d "$run_dir" -- "${BENCH_CMD[@]}")

if [ "$dry_run" = 1 ]; then
    command -v rocprofv3 >/dev/null 2>&1 || echo "$SCRIPT_NAME: note: rocprofv3 is not on PATH here" >&2
    echo "dry run, would create $run_dir and run: $(show_cmd "${cmd[@]}")"
    exit 0
fi
command -v rocprofv3 >/dev/null 2>&1 || tool_missing "rocprofv3 not found on PATH: install ROCm 6.2 or later (rocprofiler-sdk), or add /opt/rocm/bin to PATH"
rc=0
run_capture rocprofv3 "$run_dir" "${cmd[@]}" || rc=$?

# Read the kernel traces back (docs/traces.md): per hardware queue, kernels, busy time and the streams that
# used it. A read-back that fails is said and leaves the run's own exit code as it was.
shopt -s nullglob globstar
kernel_csv=("$run_dir"/**/*kernel_trace.csv)
if [ "${#kernel_csv[@]}" -gt 0 ]; then
    "${PYTHON:-python3}" -m aorta trace figures "${kernel_csv[@]}" --json "$run_dir/queues.json" ||
        echo "$SCRIPT_NAME: note: the traces in $run_dir could not be read back (aorta trace figures failed)" >&2
fi
exit "$rc"
