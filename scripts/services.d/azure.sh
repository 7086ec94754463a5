#!/usr/bin/env bash
# Azure Blob for the blob-sqlite tests: Azurite (npm, installed into $AC_NODE_PREFIX/node_modules by
# scripts/install.d/30-emulators.sh) in memory on 127.0.0.1:10000 (tests/services.py).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main azurite 10000 "${1:-}" "$AC_NODE_PREFIX/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort 10000 \
  --inMemoryPersistence --disableTelemetry --skipApiVersionCheck --silent
