#!/usr/bin/env bash
# Redis for the tests: a redis-server of this run's own on a free loopback port, keeping nothing on
# disk, so no test leaves a key in the machine's Redis and two runs never see each other's keys.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main redis ACTIONCACHE_TEST_REDIS_URL "redis://127.0.0.1:{port}/15" "${1:-}" \
  redis-server --bind 127.0.0.1 --port "{port}" --save "" --appendonly no --dir "$RUN" --logfile ""
