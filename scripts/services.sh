#!/usr/bin/env bash
# Start or stop the real servers one test run talks to, on loopback only, each run its own:
#   scripts/services.sh start   # servers on free ports, a Redis and a PostgreSQL database of this run's own
#   scripts/services.sh stop    # stops what `start` started and drops the run's database
# The run's state lives in $ACTIONCACHE_TEST_RUN_DIR (test.sh makes one per run; by hand it is
# .ci/.state). `start` writes $ACTIONCACHE_TEST_RUN_DIR/services.env, the addresses tests/services.py
# reads, so two runs at once never share a server and one never stops the other's. `start` first
# cleans up after runs whose process is gone (killed before their own `stop`).
set -uo pipefail
exec 8>&-  # the test command's liveness lock: a server started here must not hold it past its run
cd "$(dirname "$0")/.." || exit 1
action="${1:?usage: scripts/services.sh start|stop}"
export ACTIONCACHE_TEST_RUN_DIR="${ACTIONCACHE_TEST_RUN_DIR:-$PWD/.ci/.state}"
mkdir -p "$ACTIONCACHE_TEST_RUN_DIR"
status=0
if [ "$action" = start ]; then
  # shellcheck source=scripts/services.d/_background.inc
  . scripts/services.d/_background.inc
  sweep_dead_runs
  : > "$ACTIONCACHE_TEST_RUN_DIR/services.env"
  [ -f "$ACTIONCACHE_TEST_RUN_DIR/owner.pid" ] || echo "${ACTIONCACHE_TEST_RUN_OWNER:-$$}" > "$ACTIONCACHE_TEST_RUN_DIR/owner.pid"
fi
# Every service at once (each waits on its own server, a cluster about 3 s, an emulator up to 5 s;
# one after another they took ~15 s to start and, with a ~2 s wait per stopped process, ~30 s to
# stop). Each one's output is kept apart and shown in order once all are done.
said="$(mktemp -d)"
for svc in scripts/services.d/*.sh; do
  [ -e "$svc" ] || continue
  name="${svc##*/}"
  { bash "$svc" "$action" >"$said/$name.out" 2>"$said/$name.err"; echo $? >"$said/$name.rc"; } &
done
wait
for svc in scripts/services.d/*.sh; do
  [ -e "$svc" ] || continue
  name="${svc##*/}"
  echo "== services $action: $name"
  cat "$said/$name.out"
  cat "$said/$name.err" >&2
  [ "$(cat "$said/$name.rc")" = 0 ] || { echo "!! $name $action failed" >&2; status=1; }
done
rm -rf "$said"
[ "$action" = start ] && echo "== services: addresses in $ACTIONCACHE_TEST_RUN_DIR/services.env"
exit $status
