#!/usr/bin/env bash
# Redis Sentinel for the tests: a master, one replica and one sentinel watching them as "actioncache",
# all from the installed redis-server (`redis-server CONF --sentinel`) on free loopback ports of this
# run's own. The tests reach the master through the sentinel:
# ACTIONCACHE_TEST_REDIS_SENTINEL_URL=redis+sentinel://127.0.0.1:PORT/actioncache/15.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
case "${1:-}" in
  start)
    command -v redis-server >/dev/null || { echo "redis-sentinel: redis-server not installed (run scripts/install.sh)" >&2; exit 1; }
    dir="$RUN/redis-sentinel"
    start_one() { # NAME PORT ARGS...: a process of this service, its pid in $RUN/redis-sentinel-NAME.pid
      local name="$1" port="$2" pid; shift 2
      setsid redis-server "$@" >"$dir/$name.log" 2>&1 </dev/null &
      pid=$!
      record_pid "$RUN/redis-sentinel-$name.pid" "$pid"
      await_port "$pid" "$port" 100 0.1 && return 0
      echo "redis-sentinel: $name on port $port did not start: $(tail -1 "$dir/$name.log")" >&2; return 1
    }
    start_all() { # the three on three free ports, chosen together (so they differ)
      read -r master replica sentinel < <(free_ports 3)
      rm -rf "$dir"
      mkdir -p "$dir"
      common=(--bind 127.0.0.1 --save "" --appendonly no --dir "$dir")
      start_one master "$master" --port "$master" "${common[@]}" || return 1
      start_one replica "$replica" --port "$replica" "${common[@]}" --replicaof 127.0.0.1 "$master" || return 1
      # The sentinel rewrites its configuration file: it must be a file of its own.
      printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor actioncache 127.0.0.1 %s 1\nsentinel down-after-milliseconds actioncache 1000\nsentinel failover-timeout actioncache 5000\n' \
        "$sentinel" "$dir" "$master" >"$dir/sentinel.conf"
      start_one sentinel "$sentinel" "$dir/sentinel.conf" --sentinel
    }
    # A free port may be taken between the check and the bind: the three start again on other ports
    # (up to 3 tries), what did start of them stopped first.
    started=0
    for try in 1 2 3; do
      if start_all; then started=1; break; fi
      for name in sentinel replica master; do stop_pid "$RUN/redis-sentinel-$name.pid"; done
      echo "redis-sentinel: try $try failed; starting again on other ports" >&2
    done
    [ "$started" = 1 ] || exit 1
    publish ACTIONCACHE_TEST_REDIS_SENTINEL_URL "redis+sentinel://127.0.0.1:$sentinel/actioncache/15"
    echo "redis-sentinel: master 127.0.0.1:$master, replica :$replica, sentinel :$sentinel" ;;
  stop)
    stopped=0
    for name in sentinel replica master; do
      [ -f "$RUN/redis-sentinel-$name.pid" ] || continue
      stop_pid "$RUN/redis-sentinel-$name.pid"
      stopped=1
    done
    rm -rf "$RUN/redis-sentinel"
    [ "$stopped" = 1 ] && echo "redis-sentinel: stopped" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
exit 0
