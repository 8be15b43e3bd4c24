#!/usr/bin/env bash
# The largest `sacctmgr load` slurmdbd takes with its defaults (docs/performance.md, "Chunk size
# of a load step"): for each N, a desired YAML of one new Waldur-like subtree of ~N associations
# (customer, projects, allocations with descriptions, organizations, QoS lists, DefaultQOS,
# GrpTRESMins, MaxWall; 10 users per allocation, each user in two allocations, DefaultAccounts)
# is planned by slurmplan itself (`plan --format script`); the bodies of its load steps, joined
# under one `Cluster -` line, are fed as ONE `sacctmgr -i load file=/dev/stdin cluster=C` on a
# fresh cluster, with a timeout. Success is the association count read back (never sacctmgr's
# exit code or its "Done"), plus the txn records slurmdbd wrote for the cluster.
#
# usage: . DIR/env (scripts/slurm-testbed up DIR); bench/load-chunk.sh [RESULTS_DIR]
# SIZES="5000 10000 ..." (default below); TIMEOUT=seconds per load (default 900);
# KEEP_GOING=1 continues after the first failing N. Needs a release build (built here) and
# the test bed's MariaDB socket ($SLURMPLAN_TESTBED/run/mysqld.sock) for the txn figures.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SLURMPLAN_TESTBED:?start a test bed first: eval \"\$(scripts/slurm-testbed up DIR)\"}"
S="${SLURMPLAN_SACCTMGR:-sacctmgr}"
out="${1:-$(mktemp -d /tmp/slurmplan-loadchunk.XXXXXX)}"
mkdir -p "$out"
cargo build --release --quiet --bin slurmplan
SP="$PWD/target/release/slurmplan"
SIZES=${SIZES:-"5000 10000 15000 20000 30000 40000 50000"}
TIMEOUT=${TIMEOUT:-900}
tag="k$$"
sql() { # the test bed's MariaDB, as root over its private socket
  timeout 60 mariadb --no-defaults --socket="$SLURMPLAN_TESTBED/run/mysqld.sock" -uroot -N -B slurm_acct_db 2>/dev/null ||
    timeout 60 chroot "$SLURMPLAN_TESTBED/rootfs" mariadb --no-defaults --socket="$SLURMPLAN_TESTBED/run/mysqld.sock" -uroot -N -B slurm_acct_db
}
gen() { # gen TAG CLUSTER ALLOCATIONS: the desired YAML
  awk -v tag="$1" -v cl="$2" -v A="$3" 'BEGIN {
  P = int((A + 9) / 10); C = int((P + 3) / 4); U = A * 5
  printf "version: 1\nmanaged:\n  prefixes: [%s_]\nclusters:\n  %s:\n    accounts:\n", tag, cl
  for (c = 0; c < C; c++)
    printf "      %s_c_university-of-somewhere-%d:\n        description: University of Somewhere, Faculty of Science and Technology %d\n        organization: university-of-somewhere-%d\n", tag, c, c, c
  for (p = 0; p < P; p++)
    printf "      %s_p_bioinformatics-platform-%d:\n        parent: %s_c_university-of-somewhere-%d\n        description: Bioinformatics platform for population genomics %d\n        organization: university-of-somewhere-%d\n", tag, p, tag, int(p / 4), p, int(p / 4)
  for (a = 0; a < A; a++) {
    printf "      %s_a_genome-assembly-2026-%d:\n        parent: %s_p_bioinformatics-platform-%d\n        description: Genome assembly and annotation of Baltic species, allocation %d\n        organization: university-of-somewhere-%d\n", tag, a, tag, int(a / 10), a, int(a / 40)
    printf "        qos: [normal, %s_gpu]\n        default_qos: normal\n        grp_tres_mins: {cpu: %d, mem: %d, gres/gpu: %d}\n        max_wall: \"2-00:00:00\"\n        users: [", tag, 600000 * (a % 7 + 1), 1024000 * (a % 5 + 1), 6000 * (a % 3 + 1)
    for (i = 0; i < 10; i++) printf "%s%s_jmustermann%d", (i ? ", " : ""), tag, (a * 5 + i) % U
    printf "]\n"
  }
  printf "    users:\n"
  for (u = 0; u < U; u++)
    printf "      %s_jmustermann%d:\n        default_account: %s_a_genome-assembly-2026-%d\n", tag, u, tag, int(u / 5)
}'
}
count() { "$S" -n -P show assoc "where" "cluster=$1" format=id 2>/dev/null | grep -c . || true; }

timeout 60 "$S" -i add qos "${tag}_gpu" >/dev/null
printf 'slurm %s, %s\n' "$("$S" --version)" "$(echo "SELECT VERSION(), @@max_allowed_packet;" | sql | tr '\t' ' ')" | tee "$out/results.txt"
printf '%-7s %-9s %-11s %-9s %-9s %-10s %s\n' N assocs file_bytes txn_rows txn_bytes seconds result | tee -a "$out/results.txt"
for n in $SIZES; do
  A=$(( (n * 8 + 88) / 89 ))   # ~11.125 associations per allocation
  t="${tag}n$n"; cl="${t}c"
  timeout 60 "$S" -i add cluster "$cl" >/dev/null
  gen "$t" "$cl" "$A" | sed "s/${t}_gpu/${tag}_gpu/" >"$out/$n.yaml"
  "$SP" plan -d "$out/$n.yaml" --cluster "$cl" --format script --color never >"$out/$n.sh" 2>"$out/$n.plan.log"
  # the load steps' bodies, as one file
  awk -v cl="$cl" 'BEGIN { printf "Cluster - \047%s\047\n", cl }
    /<<\047SLURMPLAN_LOAD_FILE\047$/ { inload = 1; next }
    /^SLURMPLAN_LOAD_FILE$/ { inload = 0; next }
    inload && !/^Cluster - / { print }' "$out/$n.sh" >"$out/$n.cfg"
  steps=$(grep -c "load file=/dev/stdin" "$out/$n.sh" || true)
  want=$(grep -cE "^(Account|User) - " "$out/$n.cfg")
  bytes=$(wc -c <"$out/$n.cfg")
  before=$(count "$cl")
  t0=$(date +%s.%N)
  rc=0
  timeout "$TIMEOUT" "$S" -i load file=/dev/stdin "cluster=$cl" <"$out/$n.cfg" >"$out/$n.load.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  got=$(( $(count "$cl") - before ))
  txn=$(echo "SELECT COUNT(*), COALESCE(SUM(LENGTH(info)),0) FROM txn_table WHERE cluster='$cl';" | sql | tr '\t' ' ' || echo "? ?")
  if [ "$got" -eq "$want" ]; then res=ok; else res="FAILED: $got of $want associations (exit $rc; slurmplan: $steps load steps)"; fi
  grep -q "Done adding cluster" "$out/$n.load.log" && res="$res, said Done"
  printf '%-7s %-9s %-11s %-9s %-9s %-10.1f %s\n' "$n" "$want" "$bytes" ${txn} "$(echo "$t1 - $t0" | bc)" "$res" | tee -a "$out/results.txt"
  if [ "$got" -ne "$want" ] && [ "${KEEP_GOING:-0}" != 1 ]; then break; fi
done
echo "results in $out/results.txt (slurmdbd log: $SLURMPLAN_TESTBED/log/slurmdbd.log)"
