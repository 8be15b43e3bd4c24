#!/usr/bin/env bash
# Apply through slurmrestd against apply through sacctmgr, on the same real slurmdbd: a 24.11
# test bed started with slurmrestd (`scripts/slurm-testbed up DIR --version 24.11 --rest;
# . DIR/env`). Each run onboards a new site on a new cluster through each transport: ACCOUNTS
# accounts (default 100) of USERS new users each (default 20) under one top account, so
# ACCOUNTS x USERS user associations; `slurmplan apply -d --auto-approve` is timed whole (plan,
# apply, verification), release build. The two sides get their own cluster and user names, so
# neither finds what the other made; odd runs take sacctmgr first, even runs slurmrestd first.
# The clusters are deleted after each run. Prints each run, the medians and the ratio.
#
# usage: . DIR/env; [RUNS=3] [ACCOUNTS=100] [USERS=20] bench/rest-apply.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-3}"
accounts="${ACCOUNTS:-100}"
users="${USERS:-20}"
[ -n "${SLURMPLAN_REST_URL:-}" ] || { echo "needs a 24.11 bed with slurmrestd: scripts/slurm-testbed up DIR --version 24.11 --rest; . DIR/env" >&2; exit 2; }
cargo build --release --quiet --bin slurmplan
SP="$PWD/target/release/slurmplan"
SACCTMGR="${SLURMPLAN_SACCTMGR:-sacctmgr}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SLURMPLAN_LOCK_DIR="$tmp/locks"
mkdir -m 700 "$SLURMPLAN_LOCK_DIR"
tag=$(printf '%x' $(( $(date +%s) % 1048576 )))
median() { sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]}'; }

desired() { # CLUSTER PREFIX FILE
  python3 - "$1" "$2" "$accounts" "$users" >"$3" <<'EOF'
import sys
cl, p, na, nu = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
print(f"version: 1\nmanaged:\n  roots: [{p}top]\nclusters:\n  {cl}:\n    accounts:\n      {p}top: {{description: bench top}}")
for a in range(na):
    us = ", ".join(f"{p}u{a}x{u}" for u in range(nu))
    print(f"      {p}a{a}: {{parent: {p}top, grp_tres_mins: {{cpu: {1000 + a}}}, users: [{us}]}}")
EOF
}

side() { # TRANSPORT RUN: prints the seconds of one apply
  local t="$1" run="$2"
  local cl="rab$tag${t:0:1}$run" p="rab$tag${t:0:1}${run}_"
  timeout 600 "$SACCTMGR" -i add cluster "$cl" >/dev/null
  desired "$cl" "$p" "$tmp/$cl.yaml"
  local s e
  s=$(date +%s.%N)
  "$SP" --transport "$t" --timeout 600 apply -d "$tmp/$cl.yaml" --auto-approve --journal "$tmp/$cl.jsonl" >"$tmp/$cl.out" 2>&1 ||
    { tail -20 "$tmp/$cl.out" >&2; exit 1; }
  e=$(date +%s.%N)
  grep -q "Verified" "$tmp/$cl.out" || { tail -5 "$tmp/$cl.out" >&2; exit 1; }
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'
}

cleanup() { # RUN (the user records stay, without associations: every run has new names, and
  # every invocation its own tag, as a user known to slurmdbd is added with `add user`, not loaded)
  for t in s r; do
    timeout 600 "$SACCTMGR" -i delete cluster where name="rab$tag$t$1" >/dev/null 2>&1 || true
  done
}

echo "apply of $accounts accounts x $users new users ($((accounts * users)) user associations), $runs runs"
: >"$tmp/sacctmgr"; : >"$tmp/rest"
for run in $(seq 1 "$runs"); do
  if [ $((run % 2)) = 1 ]; then
    a=$(side sacctmgr "$run"); b=$(side rest "$run")
  else
    b=$(side rest "$run"); a=$(side sacctmgr "$run")
  fi
  echo "$a" >>"$tmp/sacctmgr"; echo "$b" >>"$tmp/rest"
  steps_s=$(grep -c '"event":"finished"' "$tmp/rab${tag}s$run.jsonl"); steps_r=$(grep -c '"event":"finished"' "$tmp/rab${tag}r$run.jsonl")
  printf 'run %d: sacctmgr %.2f s (%d steps), slurmrestd %.2f s (%d steps)\n' "$run" "$a" "$steps_s" "$b" "$steps_r"
  cleanup "$run"
done
ms=$(median <"$tmp/sacctmgr"); mr=$(median <"$tmp/rest")
echo "median: sacctmgr $ms s, slurmrestd $mr s, ratio rest/sacctmgr $(awk -v a="$mr" -v b="$ms" 'BEGIN { printf "%.1f", a / b }')x"
