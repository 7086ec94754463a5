#!/usr/bin/env bash
# The test command: install (into .venv, see install.sh), start this run's own servers, run the suite
# on every core (pytest-xdist; tests that must not share a moment carry an xdist_group mark), then
# stop the servers and remove everything the run made. Arguments go to pytest;
# ACTIONCACHE_TEST_WORKERS=1 runs in one process.
#
# What a run leaves behind: nothing. Its servers listen on free ports (two runs at once never share
# one), its Redis is its own, its PostgreSQL tables live in a database of its own that is dropped at
# the end, and pytest's temporary files and every temporary file a test makes are under one run
# directory that is removed at the end. tests/leftovers.py fails the run if the machine's Redis or
# PostgreSQL, the user's cache directory or the checkout gained anything.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
# Python's default bytecode behaviour, whatever the calling shell sets: some shells and CI images set
# PYTHONDONTWRITEBYTECODE, and tests of exec's hits and the launcher count what Python writes and
# imports (tests that need the other setting set it for their own runs).
unset PYTHONDONTWRITEBYTECODE
bash scripts/install.sh
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc  # runs_home: this user's own directory of runs
RUNS_HOME="$(runs_home)"
ACTIONCACHE_TEST_RUN_DIR="$(mktemp -d "$RUNS_HOME/run.XXXXXX")"
chmod 755 "$ACTIONCACHE_TEST_RUN_DIR"  # tests run a reader as another user (test_sqlite_store.py)
# Before anything else: this run holds a lock on owner.lock for as long as it lives; another run's
# sweep takes a run whose lock it can take for a dead one (a lock works across PID namespaces, where
# `kill -0 PID` does not).
exec 8>"$ACTIONCACHE_TEST_RUN_DIR/owner.lock"
flock 8
echo $$ > "$ACTIONCACHE_TEST_RUN_DIR/owner.pid"
export ACTIONCACHE_TEST_RUN_DIR ACTIONCACHE_TEST_RUN_OWNER=$$
cleanup() {
  # A start still under way (a check failed first) finishes before the stop, so nothing it starts is left.
  [ -z "${services_pid:-}" ] || wait "$services_pid" 2>/dev/null || true
  bash scripts/services.sh stop || true
  rm -rf "$ACTIONCACHE_TEST_RUN_DIR"
}
trap cleanup EXIT
# The servers start (each waits on its own, a few seconds) while the checks below run; their output
# is shown, and a failed start stops the run, before pytest, the first thing that talks to them.
bash scripts/services.sh start >"$ACTIONCACHE_TEST_RUN_DIR/services-start.log" 2>&1 &
services_pid=$!
PYTHONPATH=src lint-imports --no-cache  # the layer contracts of pyproject.toml (lint-imports is in .venv)
ruff check --no-cache src tests bench   # the lint rules of pyproject.toml
# The package under mypy --strict (pyproject.toml) and a typed user's script. mypy's cache is the
# machine's, shared by every checkout like uv's (a cold check of the package and the libraries it
# imports takes ~3 min on 2 cores, a warm one seconds): mypy takes a cached module only when its
# source's hash, mypy's version and the options match, so a fresh clone or another branch re-checks
# what differs and whatever depends on it. One mypy per mypy version at a time writes it (the lock).
MYPY_CACHE="$ACTIONCACHE_DEV_HOME/mypy-cache/$(mypy --version | awk '{ print $2 }')"
mkdir -p "$MYPY_CACHE"
check_types() {
  mypy --cache-dir "$MYPY_CACHE"
  mypy --strict --cache-dir "$MYPY_CACHE" tests/typing/user_script.py
}
with_lock "$MYPY_CACHE.lock" "mypy's shared cache" check_types
services_status=0
wait "$services_pid" || services_status=$?
services_pid=
cat "$ACTIONCACHE_TEST_RUN_DIR/services-start.log"
rm -f "$ACTIONCACHE_TEST_RUN_DIR/services-start.log"
[ "$services_status" = 0 ] || { echo "!! the servers did not all start (scripts/services.sh start)" >&2; exit 1; }
workers=()
if [ "${ACTIONCACHE_TEST_WORKERS:-auto}" != 1 ] && "$AC_PY" -c "import xdist" 2>/dev/null; then
  workers=(-n "${ACTIONCACHE_TEST_WORKERS:-auto}" --dist loadgroup)
fi
mkdir -m 755 "$ACTIONCACHE_TEST_RUN_DIR/tmp"
# --durations: every run ends with its 30 slowest test phases (setup, call, teardown), so a test that
# became slow shows in the first CI run after it did (an argument --durations=N overrides it).
TMPDIR="$ACTIONCACHE_TEST_RUN_DIR/tmp" HYPOTHESIS_STORAGE_DIRECTORY="$ACTIONCACHE_TEST_RUN_DIR/hypothesis" "$AC_PY" -m pytest -q -p no:cacheprovider \
  --basetemp="$ACTIONCACHE_TEST_RUN_DIR/pytest" --durations=30 "${workers[@]}" "$@"
