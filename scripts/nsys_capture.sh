#!/usr/bin/env bash
# Profile a benchmark run with NVIDIA Nsight Systems (nsys). See --help.
set -euo pipefail
SCRIPT_NAME=nsys_capture.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$here/lib/common.sh"

usage() {
    cat <<'USAGE'
usage: scripts/nsys_capture.sh [--dry-run] [pytest arguments...]

Runs `nsys profile -o <run dir>/trace $NSYS_ARGS python3 -m pytest [pytest arguments...]` from the
repository root (benchmarks/hw_queue unless an argument names a test path). Everything of one run lands in
  $NSYS_OUTPUT_DIR/run_<UTC timestamp>/
    trace.nsys-rep     the Nsight Systems report
    benchmark.json     the pytest-benchmark JSON (unless you pass --benchmark-json yourself)
    capture.json       tool, command, host, start/end time (UTC and Unix ns) and exit code, to line
                       the trace up with the benchmark JSON's "datetime"

Environment:
  NSYS_OUTPUT_DIR   parent folder of the run folders (default nsys_traces)
  NSYS_ARGS         nsys profile options (default: --trace=cuda,nvtx,osrt --sample=none --cpuctxsw=none)
  PYTHON            interpreter for pytest (default python3)
  AORTA_DRY_RUN=1   same as --dry-run

Options:
  --dry-run     print the command and the run folder, create nothing
  -h, --help    this text

Exit codes: 0 success or dry run; 2 bad usage; 127 nsys not found (install Nsight Systems, or
put it on PATH); otherwise the profiled run's exit code.
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
run_dir=$(new_run_dir "${NSYS_OUTPUT_DIR:-nsys_traces}")
read -r -a nsys_args <<<"${NSYS_ARGS:---trace=cuda,nvtx,osrt --sample=none --cpuctxsw=none}"
bench_command "$run_dir" "$@"
cmd=(nsys profile --output "$run_dir/trace" "${nsys_args[@]}" "${BENCH_CMD[@]}")

if [ "$dry_run" = 1 ]; then
    command -v nsys >/dev/null 2>&1 || echo "$SCRIPT_NAME: note: nsys is not on PATH here" >&2
    echo "dry run, would create $run_dir and run: $(show_cmd "${cmd[@]}")"
    exit 0
fi
command -v nsys >/dev/null 2>&1 || tool_missing "nsys not found on PATH: install NVIDIA Nsight Systems (or add its bin folder, e.g. /opt/nvidia/nsight-systems/<version>/bin, to PATH)"
run_capture nsys "$run_dir" "${cmd[@]}"
