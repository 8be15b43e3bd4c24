#!/usr/bin/env bash
# Scale of `plan` (issue 7, bar 1): synthetic sites of 10k, 100k and 1M user associations
# (4-level account tree, limits, QoS, 1% drift of every kind) written by `slurmplan-gen`, then
# `slurmplan plan --state ... -d ... --format json > /dev/null` timed with /usr/bin/time, plus a
# no-change plan on the largest. SLURMPLAN_TIMINGS=1 prints where the time goes.
#
# usage: bench/plan-scale.sh [WORKDIR]      (needs ~3 GB of disk for the 1M site)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/slurmplan-scale}"
mkdir -p "$work"
cargo build --release --quiet --bin slurmplan --bin slurmplan-gen
SP="$PWD/target/release/slurmplan"
GEN="$PWD/target/release/slurmplan-gen"
sizes=("10k 500 2000 10000" "100k 5000 20000 100000" "1m 50000 200000 1000000")
for s in "${sizes[@]}"; do
  set -- $s
  [ -d "$work/$1" ] || "$GEN" --out "$work/$1" --accounts "$2" --users "$3" --assocs "$4" 2>/dev/null
done
run() { # label desired state
  local label=$1 desired=$2 state=$3
  SLURMPLAN_TIMINGS=1 /usr/bin/time -f "${label//%/%%} wall %e s, peak RSS %M KiB" \
    "$SP" plan --state "$state" -d "$desired" --format json --allow-mass-delete 2>&1 >/dev/null |
    grep -E '^timing|wall' | tr '\n' ' '
  echo
}
for s in "${sizes[@]}"; do
  set -- $s
  run "$1 (1% drift)" "$work/$1/desired.yaml" "$work/$1/state"
done
run "1m (no change)" "$work/1m/desired-same.yaml" "$work/1m/state"
