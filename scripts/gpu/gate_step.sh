# shellcheck shell=bash
# Sourced by the gate's proof scripts (gate_proof.sh, why_proof.sh, ...): `step LABEL ARGS...` runs one gate
# command, "${CMD[@]}" ARGS, its log in $OUT/LABEL.log, its exit code and wall seconds in $OUT/LABEL.rc.
step() {
  local label=$1; shift
  echo "+ ${CMD[*]} $*" > "$OUT/$label.log"
  local t0; t0=$(date +%s)
  "${CMD[@]}" "$@" >> "$OUT/$label.log" 2>&1
  local rc=$?
  echo "$rc $(( $(date +%s) - t0 ))" > "$OUT/$label.rc"
  echo "  $label: exit $rc in $(( $(date +%s) - t0 )) s"
}
