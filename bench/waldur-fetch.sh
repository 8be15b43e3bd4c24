#!/usr/bin/env bash
# `waldur fetch`: one team request per resource, so the team phase dominates a large offering.
# Compares --jobs 1 with --jobs 4 against a local stand-in for Waldur (Python's threaded HTTP
# server over static pages, each request delayed by DELAY_MS as a Django worker would take),
# alternating the two, RUNS times each; prints every wall time and the medians.
#
# usage: bench/waldur-fetch.sh [RESOURCES (default 500)] [DELAY_MS (default 20)] [RUNS (default 3)]
# (SLURMPLAN=path/to/slurmplan uses that binary instead of building the release one)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-500}; delay=${2:-20}; runs=${3:-3}
if [ -z "${SLURMPLAN:-}" ]; then
  cargo build --release --quiet --bin slurmplan
fi
SP="${SLURMPLAN:-$PWD/target/release/slurmplan}"
work=$(mktemp -d /tmp/slurmplan-fetch.XXXXXX)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 - "$work/www" "$n" <<'PY'
import json, os, sys
www, n = sys.argv[1], int(sys.argv[2])
res = []
for i in range(n):
    u = "%032x" % (i + 1)
    res.append({"uuid": u, "name": "R%d" % i, "slug": "r%d" % i, "backend_id": "hpc_a_r%d" % i, "state": "OK",
                "project_uuid": "%032x" % (10**6 + i // 10), "project_slug": "p%d" % (i // 10), "project_name": "P",
                "customer_uuid": "%032x" % (2 * 10**6 + i // 100), "customer_slug": "c%d" % (i // 100),
                "customer_name": "C", "limits": {"cpu": 1}, "paused": False, "downscaled": False,
                "restrict_member_access": False, "attributes": {}})
    d = os.path.join(www, "api/marketplace-provider-resources", u, "team")
    os.makedirs(d)
    json.dump([{"uuid": "%032x" % i, "username": "u%d" % i, "full_name": "U", "role": "PROJECT.MEMBER",
                "expiration_time": None, "offering_user_username": "u%d" % i, "offering_user_state": "OK"}],
              open(os.path.join(d, "index.html"), "w"))
json.dump(res, open(os.path.join(www, "api/marketplace-provider-resources/index.html"), "w"))
os.makedirs(os.path.join(www, "api/marketplace-offering-users"))
json.dump([{"username": "u%d" % i, "state": "OK"} for i in range(n)],
          open(os.path.join(www, "api/marketplace-offering-users/index.html"), "w"))
PY
port=$((20000 + RANDOM % 20000))
python3 - "$work/www" "$port" "$delay" <<'PY' &
import functools, http.server, sys, time
www, port, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(delay)
        super().do_GET()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(H, directory=www)).serve_forever()
PY
server=$!
sleep 1
cat > "$work/config.yaml" <<EOF2
offerings:
  - name: bench
    waldur_api_url: http://127.0.0.1:$port/api/
    waldur_api_token: bench-token
    waldur_offering_uuid: "00000000000000000000000000000001"
    backend_type: slurm
    backend_settings: {default_account: d, customer_prefix: c_, project_prefix: p_, allocation_prefix: a_}
EOF2
declare -A times
for run in $(seq "$runs"); do
  for jobs in 1 4; do
    t0=$(date +%s.%N)
    "$SP" waldur fetch --config "$work/config.yaml" --out "$work/export" --jobs "$jobs" -q
    t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc)
    times[$jobs]+="$t "
    echo "run $run --jobs $jobs: $t s"
  done
done
for jobs in 1 4; do
  # shellcheck disable=SC2086 # the words are the times
  echo "--jobs $jobs median: $(printf '%s\n' ${times[$jobs]} | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') s ($n resources, ${delay} ms per request)"
done
