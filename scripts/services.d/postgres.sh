#!/usr/bin/env bash
# PostgreSQL on 127.0.0.1:5432 (trust auth, database `test`) for the tests. Uses the machine's
# running cluster; starts the Debian cluster only when none answers, and `stop` stops only
# what this script started.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
state=.ci/.state
marker="$state/postgres.started"
mkdir -p "$state"
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
ensure_db() {
  psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" 2>/dev/null \
    | grep -q 1 || psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE test" >/dev/null
}
case "${1:-}" in
  start)
    if ready; then echo "postgres: already running on 127.0.0.1:5432"; ensure_db; exit 0; fi
    version="$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -1)"
    if [ -z "$version" ]; then
      echo "postgres: no cluster in /etc/postgresql (scripts/install.d/40-redis-postgres.sh installs one)" >&2; exit 1
    fi
    pg_ctlcluster --skip-systemctl-redirect "$version" main start && echo "$version" > "$marker"
    for _ in $(seq 100); do ready && { echo "postgres: started cluster $version main"; ensure_db; exit 0; }; sleep 0.1; done
    echo "postgres: did not become ready on 127.0.0.1:5432" >&2; exit 1 ;;
  stop)
    if [ -f "$marker" ]; then
      pg_ctlcluster --skip-systemctl-redirect "$(cat "$marker")" main stop && echo "postgres: stopped the cluster this script started"
      rm -f "$marker"
    fi ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
