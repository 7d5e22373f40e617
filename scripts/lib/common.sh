#!/usr/bin/env bash
# Shared by the launch and capture scripts (sourced, never run). Exit codes used by every script:
#   0 done (or dry run printed), 2 bad usage, 127 the required tool is missing; otherwise the wrapped
#   command's own exit code.
# shellcheck disable=SC2034  # variables set here are read by the scripts that source this file

EXIT_USAGE=2
EXIT_TOOL_MISSING=127

die_usage() {
    echo "${SCRIPT_NAME}: $*" >&2
    echo "${SCRIPT_NAME}: see --help" >&2
    exit "$EXIT_USAGE"
}

tool_missing() {
    echo "${SCRIPT_NAME}: $*" >&2
    exit "$EXIT_TOOL_MISSING"
}

# True when AORTA_DRY_RUN is set to anything but empty or 0.
dry_run_from_env() {
    [ -n "${AORTA_DRY_RUN:-}" ] && [ "${AORTA_DRY_RUN}" != "0" ]
}

# Print a command the way a shell would read it back.
show_cmd() {
    local out="" arg
    for arg in "$@"; do
        out+="$(printf '%q' "$arg") "
    done
    echo "${out% }"
}

# Number of entries in a device list such as "0,1,3" (0 for an empty list or "-1").
count_device_list() {
    local list=$1 n=0 item
    local IFS=,
    for item in $list; do
        item=${item// /}
        [ -z "$item" ] && continue
        [ "$item" = "-1" ] && break  # CUDA/HIP: -1 hides this and every later device
        n=$((n + 1))
    done
    echo "$n"
}

# Set an environment variable to a default unless the user set it; records which in ENV_REPORT.
ENV_REPORT=()
default_env() {
    local name=$1 value=$2
    if [ -n "${!name+x}" ]; then
        ENV_REPORT+=("$name=${!name} (set by you)")
    else
        export "$name=$value"
        ENV_REPORT+=("$name=$value (default of this script)")
    fi
}

# JSON string literal for a shell string (quotes, backslashes and control characters escaped).
json_str() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    printf '"%s"' "$s"
}

# A fresh run folder under $1: run_<UTC timestamp>, never an existing one.
new_run_dir() {
    local base=$1 stamp dir
    stamp=$(date -u +%Y%m%dT%H%M%SZ)
    dir="$base/run_$stamp"
    [ -e "$dir" ] && dir="${dir}_$$"
    echo "$dir"
}

# Write JSON text $2 to file $1 atomically (temp file in the same folder, then rename).
write_atomic() {
    local path=$1 text=$2 tmp
    tmp=$(mktemp "${path}.XXXXXX")
    printf '%s\n' "$text" >"$tmp"
    mv -f "$tmp" "$path"
}

# Capture scripts: the benchmark run that a profiler wraps. Fills BENCH_CMD with
# `$PYTHON -m pytest <args>`, with benchmarks/hw_queue first when no argument names a test path, and
# --benchmark-json=<run dir>/benchmark.json unless the arguments already name a JSON file.
bench_command() {
    local run_dir=$1 arg has_json=0 has_path=0
    shift
    for arg in "$@"; do
        case "$arg" in
            --benchmark-json|--benchmark-json=*) has_json=1 ;;
            -*) ;;
            *) [ -e "${arg%%::*}" ] && has_path=1 ;;
        esac
    done
    BENCH_CMD=("${PYTHON:-python3}" -m pytest)
    [ "$has_path" = 1 ] || BENCH_CMD+=(benchmarks/hw_queue)
    BENCH_CMD+=("$@")
    [ "$has_json" = 1 ] || BENCH_CMD+=("--benchmark-json=$run_dir/benchmark.json")
}

# Run a profiler command, bracketed by timestamps written to <run dir>/capture.json, so the traces
# (which carry their own clock) line up with the benchmark JSON (whose "datetime" is UTC).
run_capture() {
    local tool=$1 run_dir=$2 start_utc start_ns end_utc end_ns rc head
    shift 2
    mkdir -p "$run_dir"
    start_utc=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
    start_ns=$(date +%s%N)
    head="{\"tool\": $(json_str "$tool"), \"command\": $(json_str "$(show_cmd "$@")"), \"host\": $(json_str "$(hostname)"), \"start_utc\": $(json_str "$start_utc"), \"start_unix_ns\": $start_ns"
    write_atomic "$run_dir/capture.json" "$head, \"status\": \"running\"}"
    set +e
    "$@"
    rc=$?
    set -e
    end_utc=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
    end_ns=$(date +%s%N)
    write_atomic "$run_dir/capture.json" "$head, \"end_utc\": $(json_str "$end_utc"), \"end_unix_ns\": $end_ns, \"exit_code\": $rc, \"status\": \"done\"}"
    echo "${SCRIPT_NAME}: traces and capture.json in $run_dir (exit code $rc)" >&2
    return "$rc"
}
