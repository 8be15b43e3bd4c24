#!/usr/bin/env bash
# Scale of `plan` (issue 7, bar 1): synthetic sites of 10k, 100k and 1M user associations
# (4-level account tree, limits, QoS, 1% drift of every kind) written by `slurmplan-gen`, then
# `slurmplan plan --state ... -d ... --format json > /dev/null` timed with /usr/bin/time, plus a
# no-change plan on the largest, and the largest again with names past 15 characters
# (`slurmplan-gen --long-names`: Waldur-style account names, long user names), which take the
# slower path of the name table (docs/performance.md). Each case runs RUNS times (default 5): shared machines vary
# from minute to minute, so the summary gives the median and the best run. SLURMPLAN_TIMINGS=1
# prints where the time goes (one line per run).
#
# usage: bench/plan-scale.sh [WORKDIR]      (needs ~3 GB of disk for the 1M site)
#        RUNS=9 bench/plan-scale.sh /tmp/slurmplan-scale
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/slurmplan-scale}"
runs="${RUNS:-5}"
mkdir -p "$work"
cargo build --release --quiet --bin slurmplan --bin slurmplan-gen
SP="$PWD/target/release/slurmplan"
GEN="$PWD/target/release/slurmplan-gen"
sizes=("10k 500 2000 10000" "100k 5000 20000 100000" "1m 50000 200000 1000000")
for s in "${sizes[@]}"; do
  set -- $s
  [ -d "$work/$1" ] || "$GEN" --out "$work/$1" --accounts "$2" --users "$3" --assocs "$4" 2>/dev/null
done
[ -d "$work/1m-long" ] || "$GEN" --out "$work/1m-long" --long-names 2>/dev/null
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
run() { # label desired state
  local label=$1 desired=$2 state=$3 i
  : >"$tmp"
  for i in $(seq "$runs"); do
    SLURMPLAN_TIMINGS=1 /usr/bin/time -o "$tmp.one" -f "%e %M" \
      "$SP" plan --state "$state" -d "$desired" --format json --allow-mass-delete 2>&1 >/dev/null |
      grep -E '^timing' | sed -e 's/^timing: //' -e 's/ (in parallel with the next)//' | tr '\n' ' '
    read -r wall rss <"$tmp.one"
    echo "| wall $wall s, peak RSS $rss KiB"
    echo "$wall $rss" >>"$tmp"
  done
  sort -n "$tmp" | awk -v label="$label" '{w[NR]=$1; if (NR==1 || $2<lo) lo=$2; if ($2>hi) hi=$2} END {
    printf "== %s: median wall %.2f s (best %.2f s, worst %.2f s) over %d runs, peak RSS %d-%d MiB\n",
      label, w[int((NR+1)/2)], w[1], w[NR], NR, lo/1024, hi/1024 }'
  rm -f "$tmp.one"
}
for s in "${sizes[@]}"; do
  set -- $s
  run "$1 (1% drift)" "$work/$1/desired.yaml" "$work/$1/state"
done
run "1m (no change)" "$work/1m/desired-same.yaml" "$work/1m/state"
run "1m, long names (1% drift)" "$work/1m-long/desired.yaml" "$work/1m-long/state"
