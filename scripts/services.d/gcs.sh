#!/usr/bin/env bash
# GCS for the blob-sqlite tests: gcp-storage-emulator (pip) in memory, this run's own, on a free loopback port.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main gcp-storage-emulator ACTIONCACHE_TEST_GCS_ENDPOINT "http://127.0.0.1:{port}" "${1:-}" \
  gcp-storage-emulator start -H 127.0.0.1 --port "{port}" --in-memory -q
