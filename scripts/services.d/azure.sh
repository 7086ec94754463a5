#!/usr/bin/env bash
# Azure Blob for the blob-sqlite tests: Azurite (npm, installed into $AC_NODE_PREFIX/node_modules by
# scripts/install.d/30-emulators.sh) in memory, this run's own, on a free loopback port.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main azurite ACTIONCACHE_TEST_AZURITE_PORT "{port}" "${1:-}" "$AC_NODE_PREFIX/node_modules/.bin/azurite-blob" \
  --blobHost 127.0.0.1 --blobPort "{port}" --inMemoryPersistence --disableTelemetry --skipApiVersionCheck --silent
