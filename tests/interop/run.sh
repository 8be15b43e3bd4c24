#!/bin/sh
# Interop suite: the real waldur-site-agent (pinned PyPI releases, in a private venv) and
# slurmplan on one real Slurm 22.05 slurmdbd, through a fake Waldur built from the API's own
# models (tests/interop/fake_waldur.py). What it plays and asserts: tests/interop/driver.py and
# docs/waldur.md ("Beside the site agent").
#
#   tests/interop/run.sh [VARIANT ...]      # common common-partition individual none skip-swap reconcile
#
# Uses the test bed of SLURMPLAN_TESTBED when it answers (`. DIR/env` first), else starts one
# under the work directory and stops it at the end. SLURMPLAN_INTEROP_DIR: work directory
# (default: a new one under /tmp). Needs network access to PyPI for the venv.
set -eu
cd "$(dirname "$0")/../.."
repo=$(pwd)
work="${SLURMPLAN_INTEROP_DIR:-$(mktemp -d /tmp/slurmplan-interop.XXXXXX)}"
mkdir -p "$work"
chmod 755 "$work" # munged refuses a socket below a directory others cannot traverse

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "interop: installing python3-venv" >&2
  apt-get install -y --no-install-recommends python3-venv >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends python3-venv >/dev/null; }
fi
if [ ! -x "$work/venv/bin/python" ]; then
  echo "interop: installing waldur-site-agent 1.0.7 into $work/venv" >&2
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check \
    'waldur-site-agent==1.0.7' 'waldur-site-agent-slurm==1.0.7' 'waldur-api-client==8.1.2'
fi
"$work/venv/bin/python" -c 'import importlib.metadata as m
for d, v in [("waldur-site-agent", "1.0.7"), ("waldur-site-agent-slurm", "1.0.7"), ("waldur-api-client", "8.1.2")]:
    assert m.version(d) == v, (d, m.version(d))'

started=""
if [ -n "${SLURMPLAN_TESTBED:-}" ] && scripts/slurm-testbed status "$SLURMPLAN_TESTBED" >/dev/null 2>&1; then
  [ "${SLURMPLAN_TESTBED_VERSION:-}" = 22.05 ] || { echo "interop: the suite runs on a 22.05 bed" >&2; exit 1; }
else
  started="$work/tb22"
  scripts/slurm-testbed up "$started" --version 22.05 >/dev/null
  . "$started/env"
fi
cleanup() { [ -z "$started" ] || scripts/slurm-testbed down "$started" >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM

cargo build --locked --quiet --bin slurmplan
echo "== export files parse with the waldur-api-client models"
"$work/venv/bin/python" tests/interop/check_shapes.py tests/data/waldur/site1/export examples/waldur/export
echo "== the agent and slurmplan on one slurmdbd ($(timeout 10 "$SLURMPLAN_SACCTMGR" -V))"
cd tests/interop
"$work/venv/bin/python" driver.py "$repo/target/debug/slurmplan" "$work/run" "$@"
