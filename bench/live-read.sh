#!/usr/bin/env bash
# Live read (issue 7, bar 3): a fixed number of sacctmgr calls whatever the size, and the split
# between sacctmgr and slurmplan's own work when planning against ~5,000 real associations.
# Seeds a cluster on the test bed with a synthetic site (applied by slurmplan itself), then
# times `slurmplan plan` live with SLURMPLAN_TIMINGS=1 and the 6 reads alone.
#
# usage: eval "$(scripts/slurm-testbed up /tmp/tb)"; bench/live-read.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SLURMPLAN_TESTBED:?start a test bed first}"
S="${SLURMPLAN_SACCTMGR:-sacctmgr}"
cargo build --release --quiet --bin slurmplan --bin slurmplan-gen
SP="$PWD/target/release/slurmplan"
work=$(mktemp -d /tmp/slurmplan-live.XXXXXX)
"$PWD/target/release/slurmplan-gen" --out "$work/site" --accounts 250 --users 1000 --assocs 5000 --drift 0 2>/dev/null
"$S" -i add cluster big >/dev/null 2>&1 || true
"$SP" apply -d "$work/site/desired.yaml" --auto-approve --color never >/dev/null 2>"$work/apply.log" || { tail "$work/apply.log"; exit 1; }
n=$("$S" -n -P show assoc cluster=big format=Account | wc -l)
echo "cluster big: $n associations"
t0=$(date +%s.%N)
for args in "show cluster format=Cluster" \
  "show assoc wopl withrawqos format=Cluster,Account,User,Partition,ParentName,Share,GrpJobs,GrpSubmitJobs,GrpTRES,GrpTRESMins,GrpWall,MaxJobs,MaxSubmitJobs,MaxTRES,MaxTRESMins,MaxWall,QOS,DefaultQOS" \
  "show assoc onlydefaults format=Cluster,User,Account" "show account format=Account,Description" \
  "show account format=Account,Organization" "show qos format=Name,Flags,GrpTRESMins,GrpTRES,GrpSubmitJobs,MaxWall,Description"; do
  # shellcheck disable=SC2086 # the words are the argv
  "$S" -n -P $args >/dev/null
done
t1=$(date +%s.%N)
echo "the 6 sacctmgr reads alone: $(echo "$t1 - $t0" | bc) s"
SLURMPLAN_TIMINGS=1 /usr/bin/time -f "slurmplan plan (live) wall %e s, peak RSS %M KiB" "$SP" plan -d "$work/site/desired-same.yaml" --format json 2>&1 >/dev/null | grep -E 'timing|wall|reads'
