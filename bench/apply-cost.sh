#!/usr/bin/env bash
# Apply cost on a REAL slurmdbd (issue 7, bar 2): onboard 200 allocations under 20 projects and
# 5 customers with 2,000 user associations and limits, pause 50 (QoS swap), delete 50 — with
# slurmplan's batched apply, with --no-batch (one command per object, like the imperative
# agents), and `sacctmgr load` of a flat file holding the same end state (creation only).
#
# usage: eval "$(scripts/slurm-testbed up /tmp/tb)"; bench/apply-cost.sh [RESULTS_DIR]
# ALLOCS=N scales the site (default 200 allocations; projects = N/10, customers = projects/4,
# 10 users per allocation, N/4 paused and N/4 deleted).
# MODES="batched" runs one mode only; SKIP_LOAD=1 skips the sacctmgr load part.
# needs: SLURMPLAN_SACCTMGR (the test bed sets it), a release build (built here).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SLURMPLAN_TESTBED:?start a test bed first: eval \"\$(scripts/slurm-testbed up DIR)\"}"
S="${SLURMPLAN_SACCTMGR:-sacctmgr}"
out="${1:-$(mktemp -d /tmp/slurmplan-bench.XXXXXX)}"
mkdir -p "$out"
cargo build --release --quiet --bin slurmplan
SP="$PWD/target/release/slurmplan"
tag="b$$"
A=${ALLOCS:-200}; P=$(( (A + 9) / 10 )); C=$(( (P + 3) / 4 )); Q=$(( A / 4 ))

# desired file: $1 cluster, $2 paused count, $3 deleted count
gen() {
  local cl=$1 paused=$2 deleted=$3
  printf 'version: 1\nmanaged:\n  prefixes: [%s_]\nclusters:\n  %s:\n    accounts:\n' "$tag" "$cl"
  for c in $(seq 0 $((C - 1))); do printf '      %s_c%d: {}\n' "$tag" "$c"; done
  for p in $(seq 0 $((P - 1))); do printf '      %s_p%d: {parent: %s_c%d}\n' "$tag" "$p" "$tag" $((p / 4)); done
  for a in $(seq 0 $((A - 1))); do
    [ "$a" -ge $((A - deleted)) ] && continue
    local q=normal
    [ "$a" -lt "$paused" ] && q=${tag}_paused
    printf '      %s_a%d:\n        parent: %s_p%d\n        qos: [%s]\n        default_qos: %s\n' "$tag" "$a" "$tag" $((a / 10)) "$q" "$q"
    printf '        grp_tres_mins: {cpu: %d, mem: %d}\n' $((60000 * (a % 7 + 1))) $((1024 * (a % 5 + 1)))
    printf '        users: ['
    for u in $(seq 0 9); do printf '%su%d%s' "$tag" $(((a * 10 + u) % 1000)) "$([ "$u" -lt 9 ] && echo ', ')"; done
    printf ']\n'
  done
}

"$S" -i add qos "${tag}_paused" >/dev/null
load_first() {
# sacctmgr load of the same end state (creation part only), one call, FIRST: on a fresh
# cluster of an otherwise untouched test bed, so slurmplan's runs come after it, not before
# its own names: slurmplan loads only accounts and users that exist nowhere yet
lt="${tag}x"
cl="${lt}l"
{
  printf "Cluster - '%s':Fairshare=1:QOS='normal'\n" "$cl"
  printf "Parent - 'root'\n"
  for c in $(seq 0 $((C - 1))); do printf "Account - '%s_c%d'\n" "$lt" "$c"; done
  for c in $(seq 0 $((C - 1))); do
    printf "Parent - '%s_c%d'\n" "$lt" "$c"
    for p in $(seq $((c * 4)) $((c * 4 + 3))); do [ "$p" -lt "$P" ] && printf "Account - '%s_p%d'\n" "$lt" "$p"; done
  done
  for p in $(seq 0 $((P - 1))); do
    printf "Parent - '%s_p%d'\n" "$lt" "$p"
    for a in $(seq $((p * 10)) $((p * 10 + 9))); do
      [ "$a" -lt "$A" ] || continue
      printf "Account - '%s_a%d':GrpTRESMins=cpu=%d,mem=%d:QOS='normal':DefaultQOS='normal'\n" "$lt" "$a" $((60000 * (a % 7 + 1))) $((1024 * (a % 5 + 1)))
    done
  done
  for a in $(seq 0 $((A - 1))); do
    printf "Parent - '%s_a%d'\n" "$lt" "$a"
    for u in $(seq 0 9); do printf "User - '%su%d':DefaultAccount='%s_a%d'\n" "$lt" $(((a * 10 + u) % 1000)) "$lt" "$a"; done
  done
} >"$out/load.cfg"
t0=$(date +%s.%N)
"$S" -i add cluster "$cl" >/dev/null
timeout 3600 "$S" -i load file=/dev/stdin "cluster=$cl" <"$out/load.cfg" >"$out/load.log" 2>&1 || echo "sacctmgr load exited $?" | tee -a "$out/results.txt"
t1=$(date +%s.%N)
printf '%-8s %-8s %8.1f s %6d sacctmgr call\n' load onboard "$(echo "$t1 - $t0" | bc)" 1 | tee -a "$out/results.txt"
}
[ "${SKIP_LOAD:-0}" = 1 ] || load_first
run() { # mode step file
  local mode=$1 step=$2 file=$3 extra=()
  [ "$mode" = nobatch ] && extra=(--no-batch)
  local t0 t1 journal="$out/$mode-$step.jsonl"
  t0=$(date +%s.%N)
  "$SP" apply -d "$file" --auto-approve --allow-mass-delete --color never --journal "$journal" "${extra[@]}" >/dev/null 2>"$out/$mode-$step.log"
  t1=$(date +%s.%N)
  local steps; steps=$(grep -c '"event":"finished"' "$journal" || true)
  printf '%-8s %-8s %8.1f s %6d sacctmgr writes (+18 reads)\n' "$mode" "$step" "$(echo "$t1 - $t0" | bc)" "$steps" | tee -a "$out/results.txt"
}
for mode in ${MODES:-batched nobatch}; do
  cl="${tag}${mode:0:1}"
  "$S" -i add cluster "$cl" >/dev/null
  gen "$cl" 0 0 >"$out/$mode-onboard.yaml"
  gen "$cl" "$Q" 0 >"$out/$mode-pause.yaml"
  gen "$cl" "$Q" "$Q" >"$out/$mode-delete.yaml"
  run "$mode" onboard "$out/$mode-onboard.yaml"
  run "$mode" pause "$out/$mode-pause.yaml"
  run "$mode" delete "$out/$mode-delete.yaml"
done

echo "results in $out/results.txt"
