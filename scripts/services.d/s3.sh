#!/usr/bin/env bash
# S3 for the blob-sqlite tests: moto_server (pip moto[server]), this run's own, on a free loopback port.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main moto_server ACTIONCACHE_TEST_S3_ENDPOINT "http://127.0.0.1:{port}" "${1:-}" moto_server -H 127.0.0.1 -p "{port}"
