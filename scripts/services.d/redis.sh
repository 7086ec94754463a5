#!/usr/bin/env bash
# Redis on 127.0.0.1:6379 for the tests. Uses the machine's running server; starts one (no
# persistence) only when none answers, and `stop` stops only the one this script started.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
state=.ci/.state
pidfile="$state/redis.pid"
port="${ACTIONCACHE_REDIS_PORT:-6379}"
mkdir -p "$state"
ping() { redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; }
case "${1:-}" in
  start)
    if ping; then echo "redis: already running on 127.0.0.1:$port"; exit 0; fi
    if ! command -v redis-server >/dev/null; then
      echo "redis: redis-server is not installed (scripts/install.d/40-redis-postgres.sh installs it)" >&2; exit 1
    fi
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
      --dir "$PWD/$state" --pidfile "$PWD/$pidfile" --logfile "$PWD/$state/redis.log"
    for _ in $(seq 50); do ping && { echo "redis: started on 127.0.0.1:$port"; exit 0; }; sleep 0.1; done
    echo "redis: did not answer on 127.0.0.1:$port; see $state/redis.log" >&2; exit 1 ;;
  stop)
    if [ -f "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null && echo "redis: stopped the server this script started"
      rm -f "$pidfile"
    fi ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
