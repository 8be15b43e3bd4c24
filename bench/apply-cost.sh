#!/usr/bin/env bash
# Apply cost on a REAL slurmdbd: onboard 200 allocations under 20 projects and 5 customers with
# 2,000 user associations and limits, pause 50 (QoS swap), delete 50, with slurmplan's batched
# apply, with --no-batch (one command per object, like the imperative agents), and
# `sacctmgr load` of a flat file holding the same end state (creation only).
#
# usage: scripts/slurm-testbed up DIR; . DIR/env; bench/apply-cost.sh [RESULTS_DIR]
# ALLOCS=N scales the site (default 200 allocations; projects = N/10, customers = projects/4,
# 10 users per allocation, N/4 paused and N/4 deleted).
# ROUNDS=N repeats the comparison N times (default 1); each round uses names and clusters of its
# own, and the order alternates: odd rounds run `sacctmgr load` first, even rounds slurmplan
# first, so neither side always meets the emptier database. Medians per step are printed last.
# MODES="batched" runs one mode only; SKIP_LOAD=1 skips the sacctmgr load part.
# Every sacctmgr call here runs with a timeout; the bench never changes loopback settings and
# prints whether delayed ACKs are off (a `quickack` route in the local table) so the figures
# say under which conditions they were taken.
# needs: SLURMPLAN_SACCTMGR (the test bed sets it), a release build (built here).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SLURMPLAN_TESTBED:?start a test bed first: eval \"\$(scripts/slurm-testbed up DIR)\"}"
S="${SLURMPLAN_SACCTMGR:-sacctmgr}"
out="${1:-$(mktemp -d /tmp/slurmplan-bench.XXXXXX)}"
mkdir -p "$out"
cargo build --release --quiet --bin slurmplan
SP="$PWD/target/release/slurmplan"
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

T=600 # seconds allowed to one sacctmgr call of the bench's own
# sacctmgr load of the same end state (creation part only), one call, on a fresh cluster, with
# names of its own: slurmplan loads only accounts and users that exist nowhere yet
load_side() {
local lt="${tag}x" cl="${tag}xl"
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
} >"$out/load-$round.cfg"
local t0 t1
timeout "$T" "$S" -i add cluster "$cl" >/dev/null
t0=$(date +%s.%N)
timeout 3600 "$S" -i load file=/dev/stdin "cluster=$cl" <"$out/load-$round.cfg" >"$out/load-$round.log" 2>&1 || echo "sacctmgr load exited $?" | tee -a "$out/results.txt"
t1=$(date +%s.%N)
# sacctmgr's exit code and "Done" can lie: count what the load left behind
local n; n=$(timeout "$T" "$S" -n -P show assoc "cluster=$cl" format=account | wc -l)
printf '%-6s %-8s %-8s %8.1f s %6d sacctmgr call (%d associations read back)\n' "r$round" load onboard "$(echo "$t1 - $t0" | bc)" 1 "$n" | tee -a "$out/results.txt"
}
run() { # mode step file
  local mode=$1 step=$2 file=$3 extra=()
  [ "$mode" = nobatch ] && extra=(--no-batch)
  local t0 t1 journal="$out/r$round-$mode-$step.jsonl"
  t0=$(date +%s.%N)
  "$SP" apply -d "$file" --auto-approve --allow-mass-delete --color never --journal "$journal" "${extra[@]}" >/dev/null 2>"$out/r$round-$mode-$step.log"
  t1=$(date +%s.%N)
  local steps; steps=$(grep -c '"event":"finished"' "$journal" || true)
  printf '%-6s %-8s %-8s %8.1f s %6d sacctmgr writes (+18 reads)\n' "r$round" "$mode" "$step" "$(echo "$t1 - $t0" | bc)" "$steps" | tee -a "$out/results.txt"
}
slurmplan_side() {
for mode in ${MODES:-batched nobatch}; do
  local cl="${tag}${mode:0:1}"
  timeout "$T" "$S" -i add cluster "$cl" >/dev/null
  gen "$cl" 0 0 >"$out/r$round-$mode-onboard.yaml"
  gen "$cl" "$Q" 0 >"$out/r$round-$mode-pause.yaml"
  gen "$cl" "$Q" "$Q" >"$out/r$round-$mode-delete.yaml"
  run "$mode" onboard "$out/r$round-$mode-onboard.yaml"
  run "$mode" pause "$out/r$round-$mode-pause.yaml"
  run "$mode" delete "$out/r$round-$mode-delete.yaml"
done
}

if ip route show table local 2>/dev/null | grep -q quickack; then loopback="delayed ACKs OFF (a quickack route is set)"; else loopback="default (delayed ACKs on)"; fi
echo "loopback: $loopback; load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/results.txt"
for round in $(seq 1 "${ROUNDS:-1}"); do
  tag="b$$r$round"
  timeout "$T" "$S" -i add qos "${tag}_paused" >/dev/null
  if [ "${SKIP_LOAD:-0}" = 1 ]; then slurmplan_side
  elif [ $((round % 2)) = 1 ]; then load_side; slurmplan_side
  else slurmplan_side; load_side
  fi
done
echo "loopback after: $( ip route show table local 2>/dev/null | grep -q quickack && echo 'delayed ACKs OFF' || echo default); load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/results.txt"
echo "medians over ${ROUNDS:-1} round(s):" | tee -a "$out/results.txt"
grep '^r[0-9]' "$out/results.txt" | awk '{k=$2" "$3; v[k]=v[k]" "$4} END {for (k in v) print k, v[k]}' | sort |
  while read -r mode step vals; do
    med=$(printf '%s\n' $vals | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
    printf '  %-8s %-8s %8.1f s  (runs: %s)\n' "$mode" "$step" "$med" "$vals"
  done | tee -a "$out/results.txt"
echo "results in $out/results.txt"
