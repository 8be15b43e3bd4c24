#!/usr/bin/env bash
# Live plan through slurmrestd against live plan through sacctmgr, on the same real slurmdbd:
# a 24.11 test bed started with slurmrestd (`scripts/slurm-testbed up DIR --version 24.11
# --rest; . DIR/env`). A 50,000-association site on cluster `restbench` is seeded once with
# batched `add` calls (100 accounts x 500 users), its desired file exported from it with 1% of
# the users moved to a new account, then `slurmplan plan --cluster restbench` runs RUNS times
# (default 5) through each transport, alternating (odd runs sacctmgr first, even runs REST
# first), release build. Prints each run, the medians, the REST/sacctmgr ratio and peak RSS.
# The two plans are checked to be identical (same JSON) before anything is timed; slurmrestd's
# resident size is reported after each REST run; slurmrestd is restarted alone before each REST
# run (outside the timing). Needs SLURMPLAN_TESTBED (the bed's DIR, from
# DIR/env); the seeding takes about 20 minutes on 2 cores at 50,000 (ASSOCS=N seeds N/500
# accounts of 500 users instead, on cluster restbenchN).
#
# usage: . DIR/env; [RUNS=5] [ASSOCS=50000] bench/rest-live.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}"
[ -n "${SLURMPLAN_REST_URL:-}" ] || { echo "needs a 24.11 bed with slurmrestd: scripts/slurm-testbed up DIR --version 24.11 --rest; . DIR/env" >&2; exit 2; }
cargo build --release --quiet --bin slurmplan
SP="$PWD/target/release/slurmplan"
SACCTMGR="${SLURMPLAN_SACCTMGR:-sacctmgr}"
sm() { timeout 600 "$SACCTMGR" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]}'; }

assocs="${ASSOCS:-50000}"
naccts=$(( assocs / 500 ))
cl=restbench; [ "$assocs" = 50000 ] || cl="restbench$assocs"
if ! sm -n -P show cluster format=Cluster | grep -qx "$cl"; then
  echo "seeding $assocs associations on cluster $cl (batched adds; takes a while)"
  sm -i add cluster "$cl" >/dev/null
  sm -i add account rb_root cluster="$cl" >/dev/null
  sm -i add account "$(seq -f "rb_a%g" 1 "$naccts" | paste -sd,)" parent=rb_root cluster="$cl" >/dev/null
  for a in $(seq 1 "$naccts"); do
    sm -i add user "$(seq -f "rbu%g" $(( (a - 1) * 500 + 1 )) $(( a * 500 )) | paste -sd,)" account="rb_a$a" cluster="$cl" >/dev/null
    [ $((a % 10)) -eq 0 ] && echo "  $((a * 500)) users"
  done
fi
n=$(sm -n -P show assoc cluster="$cl" format=User | wc -l)
echo "cluster $cl holds $n associations"

# desired: the cluster as it is, plus a new account holding 1% of its users (1% more associations)
"$SP" --timeout 1200 --cluster "$cl" export >"$tmp/now.yaml" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
python3 - "$tmp/now.yaml" "$tmp/desired.yaml" "$cl" "$assocs" <<'EOF'
import sys
text = open(sys.argv[1]).read()
head = f"  {sys.argv[3]}:\n    accounts:\n"
assert head in text, "unexpected export layout"
users = ", ".join(f"rbu{i}" for i in range(1, int(sys.argv[4]) // 100 + 1))
new = f"      rb_new:\n        parent: rb_root\n        users: [{users}]\n"
open(sys.argv[2], "w").write(text.replace(head, head + new, 1))
EOF
plan() { # TRANSPORT OUT
  "$SP" --timeout 1200 --transport "$1" --cluster "$cl" plan -d "$tmp/desired.yaml" --format json --allow-mass-delete >"$2" 2>"$tmp/err" ||
    [ $? -eq 2 ] || { cat "$tmp/err" >&2; exit 1; }
}
plan sacctmgr "$tmp/p-sacctmgr.json"
scripts/slurm-testbed restart-rest "$SLURMPLAN_TESTBED" 2>"$tmp/restart" || { cat "$tmp/restart" >&2; exit 1; }
plan rest "$tmp/p-rest.json"
cmp -s "$tmp/p-sacctmgr.json" "$tmp/p-rest.json" || { echo "the two plans differ" >&2; diff "$tmp/p-sacctmgr.json" "$tmp/p-rest.json" | head -20 >&2; exit 1; }
echo "plans identical ($(wc -c <"$tmp/p-rest.json") bytes of JSON)"
: >"$tmp/sacctmgr"; : >"$tmp/rest"; : >"$tmp/restd"
# slurmrestd keeps much of what it took to answer (GBs at 50,000 associations): it is restarted
# alone (`slurm-testbed restart-rest`, outside the timing) before each REST run, so every REST
# run meets a new slurmrestd and the machine does not run out of memory; its resident size
# after each REST run is reported.
restd_rss() { awk '/VmRSS/ {print int($2/1024)}' "/proc/$(cat "$SLURMPLAN_TESTBED/run/slurmrestd.pid")/status"; }
one() { # TRANSPORT
  if [ "$1" = rest ]; then scripts/slurm-testbed restart-rest "$SLURMPLAN_TESTBED" 2>"$tmp/restart" || { cat "$tmp/restart" >&2; exit 1; }; fi
  /usr/bin/time -o "$tmp/one" -f "%e %M" "$SP" --timeout 1200 --transport "$1" --cluster "$cl" plan -d "$tmp/desired.yaml" \
    --format json --allow-mass-delete >/dev/null 2>"$tmp/err" || [ $? -eq 2 ] || { cat "$tmp/err" >&2; exit 1; }
  cat "$tmp/one" >>"$tmp/$1"
  if [ "$1" = rest ]; then restd_rss >>"$tmp/restd"; fi
}
for i in $(seq "$runs"); do
  if [ $((i % 2)) -eq 1 ]; then one sacctmgr; one rest; else one rest; one sacctmgr; fi
  echo "  run $i: sacctmgr $(tail -1 "$tmp/sacctmgr" | cut -d' ' -f1) s, rest $(tail -1 "$tmp/rest" | cut -d' ' -f1) s (slurmrestd resident after it: $(tail -1 "$tmp/restd") MiB)"
done
ms=$(cut -d' ' -f1 "$tmp/sacctmgr" | median); mr=$(cut -d' ' -f1 "$tmp/rest" | median)
rss() { awk 'BEGIN{m=0} {if ($2>m) m=$2} END {printf "%d", m/1024}' "$1"; }
printf "== real %s, %s associations on %s: live plan through sacctmgr median %s s (peak RSS %s MiB) | through slurmrestd median %s s (peak RSS %s MiB; slurmrestd resident after the runs %s MiB) | rest/sacctmgr %.2f\n" \
  "$(sm -V)" "$n" "$cl" "$ms" "$(rss "$tmp/sacctmgr")" "$mr" "$(rss "$tmp/rest")" "$(tail -1 "$tmp/restd")" "$(echo "$mr / $ms" | bc -l)"
