#!/usr/bin/env bash
# Multi-cluster benchmark on the real test bed: several clusters, one large (`big`) and N smaller
# (`c1`..`cN`), each seeded once with a `slurmplan-gen` site applied by slurmplan itself. Then, in
# one run and in rounds that alternate the order of the commands, times the bare sacctmgr reads
# (all clusters in one call, `cluster=big`, each cluster one after another, `onlydefaults`) and
# the live no-change plans of `big` alone (one.yaml) and of every cluster (all.yaml) and the drift
# report of `big` alone, and prints
# the medians, each plan's ratio to the slowest single read it needs, and a markdown table.
# Each round also applies a saved plan (`plan -o`, untimed, then `apply PLAN`, timed) that
# toggles the fairshare of an account `bench_toggle` on big, which one.yaml and all.yaml do not
# manage (toggle-A.yaml / toggle-B.yaml manage it alone, under root).
# Each round also times one `reconcile` cycle of one.yaml (in sync: it plans and applies
# nothing; its own state dir under WORK).
# With SP_BASE=/path/to/other/slurmplan, every round also times both plans, the drift report,
# the apply and the reconcile cycle with that build and the table gives new/base.
# Each site: `slurmplan-gen --drift 0` with N/20 accounts, N/5 users and N user associations
# (N = BIG_ASSOCS or SMALL_ASSOCS); account names repeat across clusters, as on real sites. Each
# cluster gets its own --seed, which a --drift 0 site does not depend on. Reads "all clusters"
# include the bed's own clusters (testcl, testcl2: a root association each). Per-call times
# depend on loopback delayed ACKs (docs/testbed.md, `--quickack`): say which bed you measured.
#
# usage: scripts/slurm-testbed up DIR --version 22.05; . DIR/env; bench/multi-cluster.sh
#   env: BIG_ASSOCS (20000), SMALL_CLUSTERS (4), SMALL_ASSOCS (5000), RUNS (5 rounds),
#        SP_BASE (a second slurmplan binary to compare), WORK (work directory; default a mktemp
#        dir under /tmp, removed after a successful run)
#
# Writes only under WORK (the generated sites, desired files, apply journals and locks, logs)
# and, on the bed, adds and seeds the clusters big and c1..cN once: a cluster that `show
# cluster` already lists is taken as seeded (a bed seeded with other sizes is refused: reset it
# with `scripts/slurm-testbed down DIR; rm -rf DIR`).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SLURMPLAN_TESTBED:?start a test bed first: scripts/slurm-testbed up DIR; . DIR/env}"
S="${SLURMPLAN_SACCTMGR:-sacctmgr}"
big_assocs="${BIG_ASSOCS:-20000}"
small_clusters="${SMALL_CLUSTERS:-4}"
small_assocs="${SMALL_ASSOCS:-5000}"
runs="${RUNS:-5}"
base="${SP_BASE:-}"
die() { echo "multi-cluster: $*" >&2; exit 1; }
for v in "$big_assocs" "$small_clusters" "$small_assocs" "$runs"; do
  [[ "$v" =~ ^[0-9]+$ ]] || die "BIG_ASSOCS, SMALL_CLUSTERS, SMALL_ASSOCS and RUNS must be numbers (got \`$v\`)"
done
[ "$runs" -ge 1 ] || die "RUNS must be at least 1"
[ -z "$base" ] || [ -x "$base" ] || die "SP_BASE=$base is not an executable file"

cargo build --release --quiet --bin slurmplan --bin slurmplan-gen
target="${CARGO_TARGET_DIR:-$PWD/target}"
SP="$target/release/slurmplan"
GEN="$target/release/slurmplan-gen"

if [ -n "${WORK:-}" ]; then
  work="$WORK"; mkdir -p "$work"; made_work=""
else
  work=$(mktemp -d /tmp/slurmplan-multi.XXXXXX); made_work=1
fi
cleanup() {
  local rc=$?
  if [ "$rc" -eq 0 ] && [ -n "$made_work" ]; then rm -rf "$work"; else echo "work files kept in $work" >&2; fi
}
trap cleanup EXIT
mkdir -p "$work/locks"; chmod 700 "$work/locks" # apply refuses a lock dir others can write
rm -rf "$work/times"; mkdir -p "$work/times"

sm() { timeout 1200 "$S" "$@"; } # every word an argv word, never a shell string
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

clusters=(big)
for i in $(seq 1 "$small_clusters"); do clusters+=("c$i"); done

# --- the sites: one generated site per cluster (a different seed each) -------------------------
for i in "${!clusters[@]}"; do
  c="${clusters[$i]}"
  n=$small_assocs; [ "$c" = big ] && n=$big_assocs
  rm -rf "$work/site-$c"
  "$GEN" --out "$work/site-$c" --cluster "$c" --seed "$((1000 + i))" --drift 0 \
    --accounts "$(( n / 20 ))" --users "$(( n / 5 ))" --assocs "$n" 2>"$work/gen-$c.log" ||
    { cat "$work/gen-$c.log" >&2; die "slurmplan-gen failed for $c"; }
done

# Accounts share names across clusters; their records (description, organization) are global,
# so each shared name must carry the same record in every site.
for f in accounts-descr.txt accounts-org.txt; do
  dup=$(for c in "${clusters[@]}"; do cat "$work/site-$c/state/$f"; done | sort -u | cut -d'|' -f1 | uniq -d | head -3)
  [ -z "$dup" ] || die "accounts with different records ($f) across the generated sites: $dup"
done

# --- one.yaml (big alone) and all.yaml (every cluster in one `clusters:` map) -------------------
cp "$work/site-big/desired-same.yaml" "$work/one.yaml"
top() { awk '/^clusters:$/ {exit} {print}' "$1"; }  # the sections before `clusters:`
top "$work/site-big/desired-same.yaml" >"$work/top.yaml"
keys=$(grep -o '^[^ #][^:]*:' "$work/top.yaml" | paste -sd' ')
[ "$keys" = "version: managed: qos:" ] || die "unexpected top-level sections in the generated desired file: $keys"
for c in "${clusters[@]}"; do
  f="$work/site-$c/desired-same.yaml"
  top "$f" | cmp -s - "$work/top.yaml" || die "$f: its version/managed/qos sections differ from big's; cannot merge"
  # exactly one `clusters:`, holding exactly this cluster, nothing at the top level after it
  awk -v c="  $c:" '/^clusters:$/ {n++; next}
    n == 1 && /^[^ ]/ {bad = 1}
    n == 1 && /^  [^ ]/ && $0 != c {bad = 1}
    END {exit !(n == 1 && !bad)}' "$f" || die "$f: expected one clusters: map holding only $c"
done
{
  cat "$work/top.yaml"
  echo "clusters:"
  for c in "${clusters[@]}"; do awk 'body {print} /^clusters:$/ {body = 1}' "$work/site-$c/desired-same.yaml"; done
} >"$work/all.yaml"
# the merged file must load: no cluster twice, no account with two different records
"$SP" validate "$work/all.yaml" >/dev/null 2>"$work/validate.log" ||
  { cat "$work/validate.log" >&2; die "all.yaml does not validate"; }

# --- seed the clusters the bed does not list yet ----------------------------------------------
seed_start=$(now); seeded=""
for c in "${clusters[@]}"; do
  if sm -n -P show cluster format=Cluster | grep -qxF "$c"; then
    echo "cluster $c: already on the bed, not seeded again" >&2
    continue
  fi
  t0=$(now)
  echo "seeding cluster $c from $work/site-$c/desired-same.yaml ..." >&2
  sm -i add cluster "$c" >/dev/null
  journal="$work/apply-$c.jsonl"
  "$SP" --timeout 1200 --color never apply -d "$work/site-$c/desired-same.yaml" --auto-approve \
    --journal "$journal" --lock-dir "$work/locks" >"$work/apply-$c.out" 2>"$work/apply-$c.err" &
  pid=$!
  tick=0
  while kill -0 "$pid" 2>/dev/null; do # progress every 15 s, from the apply's journal
    sleep 1
    tick=$(( tick + 1 ))
    [ $(( tick % 15 )) -eq 0 ] || continue
    done_steps=$(grep -c '"event":"finished"' "$journal" 2>/dev/null || true)
    of=$(grep -o '"steps":[0-9]*' "$journal" 2>/dev/null | head -1 | cut -d: -f2 || true)
    printf '  %s: %.0f s, %s of %s steps done\n' "$c" "$(since "$t0")" "${done_steps:-0}" "${of:-?}" >&2
  done
  if ! wait "$pid"; then
    tail -20 "$work/apply-$c.err" >&2
    die "apply failed while seeding $c (journal $journal); the cluster is registered: reset the bed before running again"
  fi
  steps=$(grep -o '"steps":[0-9]*' "$journal" | head -1 | cut -d: -f2)
  printf '  %s seeded in %.1f s (%s steps; apply stderr: %s lines in %s)\n' "$c" "$(since "$t0")" "$steps" \
    "$(wc -l <"$work/apply-$c.err")" "$work/apply-$c.err" >&2
  grep -iE 'error|warning' "$work/apply-$c.err" | head -5 >&2 || true
  seeded+=" $c"
done
seed_time=$(since "$seed_start")

# --- what is on the bed ------------------------------------------------------------------------
ASSOC_FMT=Cluster,Account,User,Partition,ParentName,Share,GrpJobs,GrpSubmitJobs,GrpTRES,GrpTRESMins,GrpWall,MaxJobs,MaxSubmitJobs,MaxTRES,MaxTRESMins,MaxWall,QOS,DefaultQOS
OD_FMT=Cluster,User,Account,Partition
declare -A rows
total=0
for c in "${clusters[@]}"; do
  rows[$c]=$(sm -n -P show assoc wopl withrawqos "format=$ASSOC_FMT" "cluster=$c" | wc -l)
  [ "${rows[$c]}" -gt 0 ] || die "cluster $c holds no associations"
  total=$(( total + rows[$c] ))
done
all_rows=$(sm -n -P show assoc wopl withrawqos "format=$ASSOC_FMT" | wc -l)

# Both plans must be empty (exit 0 with --detailed-exitcode) before anything is timed.
plan() { # plan BINARY DESIRED
  "$1" --sacctmgr "$S" --timeout 1200 --color never plan -d "$2" --format json --detailed-exitcode
}
drift() { # drift BINARY DESIRED (exit 0: in sync)
  "$1" --sacctmgr "$S" --timeout 1200 --color never drift -d "$2" --format json
}
check_empty() { # check_empty BINARY DESIRED
  local rc=0
  plan "$1" "$2" >"$work/check.json" 2>"$work/check.err" || rc=$?
  [ "$rc" -eq 0 ] && return 0
  cat "$work/check.err" >&2
  local why="failed (exit $rc)"
  [ "$rc" -eq 2 ] && why="is not empty"
  die "$1 plan -d $2 $why; if the bed holds a site seeded with other sizes, reset it (scripts/slurm-testbed down DIR; rm -rf DIR; up)"
}
for bin in "$SP" ${base:+"$base"}; do
  check_empty "$bin" "$work/one.yaml"
  check_empty "$bin" "$work/all.yaml"
done

# The account the saved-plan applies toggle (fairshare 7 <-> 9); made now if missing.
toggle_yaml() { # toggle_yaml FAIRSHARE
  printf 'version: 1\nmanaged:\n  prefixes: [bench_]\nclusters:\n  big:\n    accounts:\n      bench_toggle:\n        parent: root\n        fairshare: %s\n' "$1"
}
toggle_yaml 7 >"$work/toggle-A.yaml"
toggle_yaml 9 >"$work/toggle-B.yaml"
"$SP" --sacctmgr "$S" --timeout 1200 --color never apply -d "$work/toggle-A.yaml" --auto-approve \
  --lock-dir "$work/locks" --journal "$work/toggle-setup.jsonl" >/dev/null 2>"$work/toggle-setup.err" ||
  { cat "$work/toggle-setup.err" >&2; die "cannot set up bench_toggle on big"; }
toggle_next=B

# --- the timed commands ---------------------------------------------------------------------------
tm() { # tm LABEL CMD...: run CMD (argv, stdout dropped), append its wall time to times/LABEL
  local label=$1 s rc=0
  shift
  s=$(now)
  "$@" >/dev/null 2>"$work/err" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$work/err" >&2; die "exit $rc (2 = the plan is not empty): $*"; }
  since "$s" >>"$work/times/$label"
}
apply_saved() { # apply_saved LABEL BINARY: plan the next toggle (untimed), time BINARY's apply of it
  local p="$work/toggle.plan"
  "$SP" --sacctmgr "$S" --timeout 1200 --color never plan -d "$work/toggle-$toggle_next.yaml" -o "$p" \
    >/dev/null 2>"$work/err" || { cat "$work/err" >&2; die "plan -o of toggle-$toggle_next.yaml failed"; }
  tm "$1" "$2" --sacctmgr "$S" --timeout 1200 --color never apply "$p" --auto-approve \
    --lock-dir "$work/locks" --journal "$work/toggle.jsonl"
  if [ "$toggle_next" = A ]; then toggle_next=B; else toggle_next=A; fi
}
reconcile() { # reconcile BINARY STATE-DIR: one cycle of one.yaml (exit 0: nothing waits)
  "$1" --sacctmgr "$S" --timeout 1200 --color never reconcile -d "$work/one.yaml" --state-dir "$2" \
    --lock-dir "$work/locks" --detailed-exitcode
}
unit() { # unit NAME: one timed command (or, for `each`, the per-cluster reads in sequence)
  case "$1" in
    assoc_all) tm assoc_all sm -n -P show assoc wopl withrawqos "format=$ASSOC_FMT" ;;
    each)
      local s0 c
      s0=$(now)
      for c in "${clusters[@]}"; do tm "assoc_$c" sm -n -P show assoc wopl withrawqos "format=$ASSOC_FMT" "cluster=$c"; done
      since "$s0" >>"$work/times/each" ;;
    od_all) tm od_all sm -n -P show assoc onlydefaults "format=$OD_FMT" ;;
    od_big) tm od_big sm -n -P show assoc onlydefaults "format=$OD_FMT" cluster=big ;;
    plan_one) tm plan_one plan "$SP" "$work/one.yaml" ;;
    plan_all) tm plan_all plan "$SP" "$work/all.yaml" ;;
    base_one) tm base_one plan "$base" "$work/one.yaml" ;;
    base_all) tm base_all plan "$base" "$work/all.yaml" ;;
    drift_one) tm drift_one drift "$SP" "$work/one.yaml" ;;
    base_drift_one) tm base_drift_one drift "$base" "$work/one.yaml" ;;
    apply_one) apply_saved apply_one "$SP" ;;
    base_apply_one) apply_saved base_apply_one "$base" ;;
    reconcile_one) tm reconcile_one reconcile "$SP" "$work/sd-new" ;;
    base_reconcile_one) tm base_reconcile_one reconcile "$base" "$work/sd-base" ;;
    *) die "unknown unit $1" ;;
  esac
}
units=(assoc_all each od_all od_big plan_one plan_all drift_one apply_one reconcile_one)
[ -z "$base" ] || units+=(base_one base_all base_drift_one base_apply_one base_reconcile_one)
nu=${#units[@]}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$runs"); do
  # round r: the list rotated by r-1, reversed on even rounds
  order=()
  for k in $(seq 0 $(( nu - 1 ))); do order+=("${units[$(( (k + r - 1) % nu ))]}"); done
  if [ $(( r % 2 )) -eq 0 ]; then
    rev=(); for (( k = nu - 1; k >= 0; k-- )); do rev+=("${order[$k]}"); done; order=("${rev[@]}")
  fi
  echo "round $r/$runs: ${order[*]}" >&2
  for u in "${order[@]}"; do unit "$u"; done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- medians and the table -------------------------------------------------------------------------
median() { sort -n "$work/times/$1" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f", m}'; }
ratio() { echo "scale=4; $1 / $2" | bc | awk '{printf "%.2f", $1}'; }
max() { printf '%s\n' "$@" | sort -n | tail -1; }
declare -A med
for f in "$work"/times/*; do med[$(basename "$f")]=$(median "$(basename "$f")"); done
floor_one=$(max "${med[assoc_big]}" "${med[od_big]}")
slowest=big
for c in "${clusters[@]}"; do
  [ "$(echo "${med[assoc_$c]} > ${med[assoc_$slowest]}" | bc)" -eq 1 ] && slowest=$c
done
floor_all=${med[assoc_$slowest]}

ver=$(sm -V)
echo
echo "== $ver on $SLURMPLAN_TESTBED: clusters ${clusters[*]}; associations (show assoc rows):" \
  "$(for c in "${clusters[@]}"; do printf '%s %s, ' "$c" "${rows[$c]}"; done)all clusters $all_rows (sum $total)"
if [ -n "$seeded" ]; then
  printf '== seeded this run:%s in %.1f s\n' "$seeded" "$seed_time"
else
  echo "== nothing seeded this run (all clusters were on the bed)"
fi
echo "== $runs rounds, medians; load average before $load_before, after $load_after"
echo
row() { # row LABEL MEDIAN [NEW-LABEL FLOOR]
  local line="| $1 | $2 |"
  if [ -n "$base" ]; then
    if [ -n "${3:-}" ]; then
      local b=${med[base_${3#plan_}]} # plan_one -> base_one, drift_one -> base_drift_one
      line+=" $b | $(ratio "$2" "$b") |"
    else
      line+=" | |"
    fi
  fi
  if [ -n "${4:-}" ]; then line+=" $(ratio "$2" "$4") |"; else line+=" |"; fi
  echo "$line"
}
if [ -n "$base" ]; then
  echo "| command | median (s) | base (s) | new/base | / slowest read it needs |"
  echo "|---|---:|---:|---:|---:|"
else
  echo "| command | median (s) | / slowest read it needs |"
  echo "|---|---:|---:|"
fi
row "show assoc, all clusters (one call)" "${med[assoc_all]}"
for c in "${clusters[@]}"; do row "show assoc cluster=$c" "${med[assoc_$c]}"; done
row "show assoc, each cluster one after another (total)" "${med[each]}"
row "show assoc onlydefaults, all clusters" "${med[od_all]}"
row "show assoc onlydefaults cluster=big" "${med[od_big]}"
row "slurmplan plan one.yaml (big, no change)" "${med[plan_one]}" plan_one "$floor_one"
row "slurmplan plan all.yaml (every cluster, no change)" "${med[plan_all]}" plan_all "$floor_all"
row "slurmplan drift one.yaml (big, in sync)" "${med[drift_one]}" drift_one "$floor_one"
row "slurmplan apply PLAN (a fairshare on big; write and verification included)" "${med[apply_one]}" apply_one
row "slurmplan reconcile one.yaml (one cycle, big in sync)" "${med[reconcile_one]}" reconcile_one "$floor_one"
echo
echo "one.yaml: / max(show assoc cluster=big, onlydefaults cluster=big) = $floor_one s;" \
  "all.yaml: / the slowest per-cluster read (show assoc cluster=$slowest) = $floor_all s."
