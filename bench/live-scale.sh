#!/usr/bin/env bash
# Live reads at scale. Part 1: `slurmplan plan` live at 10k, 100k and 1M associations through
# `slurmplan-fake-sacctmgr`, which prints the snapshot files of a `slurmplan-gen` site as
# sacctmgr would (real `-n -P` format; the fake's own work is a file read and a write to the
# pipe, so the time is slurmplan's), next to the same plan from the snapshot (`--state`). Both
# sides alternate, RUNS times each (default 5); the summary gives the medians, the live/snapshot
# ratio and peak RSS.
# Part 2 (when SLURMPLAN_TESTBED is set to a 22.05 test bed, `. DIR/env`): a 50,000-association
# site on cluster `livebench`, seeded once with batched `add` calls (a `load` of that size fails
# on MariaDB's default max_allowed_packet), then the live read (`slurmplan dump`) against the
# six bare sacctmgr reads run one after another, alternating, RUNS times each.
#
# usage: bench/live-scale.sh [WORKDIR]        (shares the sites of bench/plan-scale.sh)
#        SIZES="10k 100k" bench/live-scale.sh  (a subset; SIZES= skips part 1)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/slurmplan-scale}"
runs="${RUNS:-5}"
mkdir -p "$work"
cargo build --release --quiet --bin slurmplan --bin slurmplan-gen --bin slurmplan-fake-sacctmgr
SP="$PWD/target/release/slurmplan"
GEN="$PWD/target/release/slurmplan-gen"
FAKE="$PWD/target/release/slurmplan-fake-sacctmgr"
declare -A spec=([10k]="500 2000 10000" [100k]="5000 20000 100000" [1m]="50000 200000 1000000")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]}'; }
maxcol() { awk -v c="$1" 'BEGIN{m=0} {if ($c>m) m=$c} END {printf "%d", m/1024}'; }

for size in ${SIZES-10k 100k 1m}; do
  set -- ${spec[$size]}
  [ -d "$work/$size" ] || "$GEN" --out "$work/$size" --accounts "$1" --users "$2" --assocs "$3" 2>/dev/null
  fake_dir="$tmp/fake-$size"
  rm -rf "$fake_dir"; cp -r "$work/$size/state" "$fake_dir"
  bytes=$(stat -c %s "$fake_dir/assocs.txt")
  : >"$tmp/live"; : >"$tmp/snap"
  for i in $(seq "$runs"); do
    order="snap live"; [ $((i % 2)) -eq 0 ] && order="live snap"
    for side in $order; do
      if [ "$side" = snap ]; then
        /usr/bin/time -o "$tmp/one" -f "%e %M" "$SP" plan --state "$work/$size/state" \
          -d "$work/$size/desired.yaml" --format json --allow-mass-delete >/dev/null 2>"$tmp/err"
      else
        FAKE_SACCTMGR_DIR="$fake_dir" /usr/bin/time -o "$tmp/one" -f "%e %M" "$SP" --sacctmgr "$FAKE" plan \
          -d "$work/$size/desired.yaml" --format json --allow-mass-delete >/dev/null 2>"$tmp/err"
      fi
      cat "$tmp/one" >>"$tmp/$side"
    done
  done
  ls=$(cut -d' ' -f1 "$tmp/snap" | median); ll=$(cut -d' ' -f1 "$tmp/live" | median)
  printf "== %s (%s bytes of assocs.txt): snapshot median %s s, peak RSS %s MiB | live median %s s, peak RSS %s MiB | live/snapshot %.2f\n" \
    "$size" "$bytes" "$ls" "$(maxcol 2 <"$tmp/snap")" "$ll" "$(maxcol 2 <"$tmp/live")" "$(echo "$ll / $ls" | bc -l)"
done

[ -n "${SLURMPLAN_TESTBED:-}" ] || { echo "(part 2 skipped: SLURMPLAN_TESTBED is not set)"; exit 0; }
SACCTMGR="${SLURMPLAN_SACCTMGR:-sacctmgr}"
sm() { timeout 600 "$SACCTMGR" "$@"; }
cl=livebench
if ! sm -n -P show cluster format=Cluster | grep -qx "$cl"; then
  echo "seeding 50,000 associations on cluster $cl (batched adds; takes a while)"
  sm -i add cluster "$cl" >/dev/null
  sm -i add account lb_root cluster="$cl" >/dev/null
  accts=$(seq -f "lb_a%g" 1 100 | paste -sd,)
  sm -i add account "$accts" parent=lb_root cluster="$cl" >/dev/null
  for a in $(seq 1 100); do # 100 accounts x 500 users, one add per account
    users=$(seq -f "lbu%g" $(( (a - 1) * 500 + 1 )) $(( a * 500 )) | paste -sd,)
    sm -i add user "$users" account="lb_a$a" cluster="$cl" >/dev/null
    [ $((a % 10)) -eq 0 ] && echo "  $((a * 500)) users"
  done
fi
n=$(sm -n -P show assoc cluster="$cl" format=User | wc -l)
echo "cluster $cl holds $n associations"
: >"$tmp/bare"; : >"$tmp/dump"
bare() {
  local start; start=$(date +%s.%N)
  sm -n -P show cluster format=Cluster >/dev/null
  sm -n -P show assoc wopl withrawqos format=Cluster,Account,User,Partition,ParentName,Share,GrpJobs,GrpSubmitJobs,GrpTRES,GrpTRESMins,GrpWall,MaxJobs,MaxSubmitJobs,MaxTRES,MaxTRESMins,MaxWall,QOS,DefaultQOS >/dev/null
  sm -n -P show assoc onlydefaults format=Cluster,User,Account >/dev/null
  sm -n -P show account format=Account,Description >/dev/null
  sm -n -P show account format=Account,Organization >/dev/null
  sm -n -P show qos format=Name,Flags,GrpTRESMins,GrpTRES,GrpSubmitJobs,MaxWall,Description >/dev/null
  echo "$(date +%s.%N) - $start" | bc -l >>"$tmp/bare"
}
live() {
  rm -rf "$tmp/snapdir"
  # `show assoc onlydefaults` alone takes over a minute at this size on 22.05: a long timeout
  /usr/bin/time -o "$tmp/one" -f "%e %M" "$SP" --timeout 1200 --sacctmgr "$SACCTMGR" dump -o "$tmp/snapdir" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  cut -d' ' -f1 "$tmp/one" >>"$tmp/dump"
}
for i in $(seq "${RUNS2:-$runs}"); do
  if [ $((i % 2)) -eq 1 ]; then bare; live; else live; bare; fi
  echo "  run $i: bare $(tail -1 "$tmp/bare") s, live $(tail -1 "$tmp/dump") s"
done
printf "== real 22.05, %s associations: six bare sacctmgr reads one after another median %s s | slurmplan live read (dump) median %s s\n" \
  "$n" "$(median <"$tmp/bare")" "$(median <"$tmp/dump")"
