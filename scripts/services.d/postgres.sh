#!/usr/bin/env bash
# PostgreSQL for the tests: a database of this run's own in the machine's cluster (127.0.0.1:5432,
# trust auth), created at start and dropped at stop with every table the run made. The cluster is
# started only when none answers, and then stopped by the last live run.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
admin() { PGOPTIONS='-c client_min_messages=warning' psql -q -h 127.0.0.1 -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
database="actioncache_test_$(printf %s "$RUN" | cksum | cut -d' ' -f1)"  # one per run directory
case "${1:-}" in
  start)
    if ! ready; then
      version="$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -1)"
      if [ -z "$version" ]; then
        echo "postgres: no cluster in /etc/postgresql (scripts/install.d/40-redis-postgres.sh installs one)" >&2; exit 1
      fi
      pg_ctlcluster --skip-systemctl-redirect "$version" main start && echo "$version" > "$RUN/postgres.started"
      for _ in $(seq 100); do ready && break; sleep 0.1; done
      ready || { echo "postgres: did not become ready on 127.0.0.1:5432" >&2; exit 1; }
    fi
    admin -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" -c "CREATE DATABASE \"$database\"" >/dev/null || exit 1
    echo "$database" > "$RUN/postgres.database"
    publish ACTIONCACHE_TEST_POSTGRES_URL "postgresql://postgres@127.0.0.1:5432/$database"
    echo "postgres: database $database on 127.0.0.1:5432" ;;
  stop)
    if [ -f "$RUN/postgres.database" ]; then
      # The name is computed from this run's directory again, never read from the file (a file
      # says only that the database was made): no file can point the clean-up at another database.
      admin -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" >/dev/null \
        && echo "postgres: dropped database $database"
      rm -f "$RUN/postgres.database"
    fi
    started="$(cat "$RUN/postgres.started" 2>/dev/null || true)"
    if [ -n "$started" ] && [ ! -d "/etc/postgresql/$started" ] || [[ "$started" == */* ]]; then
      echo "postgres: ignoring $RUN/postgres.started: $started is not a cluster of this machine" >&2
      rm -f "$RUN/postgres.started"; started=""
    fi
    if [ -n "$started" ]; then
      # Another live run may be using the cluster this run started: hand it over instead of stopping it.
      for other in "$RUNS_HOME"/run.*; do
        if [ ! -d "$other" ] || [ ! -O "$other" ] || [ "$other" = "$RUN" ]; then continue; fi
        run_is_alive "$other" || continue
        mv "$RUN/postgres.started" "$other/postgres.started" && echo "postgres: left the cluster running for $other"
        exit 0
      done
      pg_ctlcluster --skip-systemctl-redirect "$started" main stop && echo "postgres: stopped the cluster this run started"
      rm -f "$RUN/postgres.started"
    fi ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
