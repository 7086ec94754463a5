#!/usr/bin/env bash
# Emulators for the blob-sqlite and Firestore tests. Idempotent and quiet; a second run only checks.
#   pip: moto[server] (S3), gcp-storage-emulator (GCS)      -> also in pyproject's `test` extra
#   npm: azurite (Azure Blob), @firestore-emulator/server   -> $AC_NODE_PREFIX/node_modules, outside
#        the checkout (~/.cache/actioncache/dev/npm: a fresh clone reuses it; see scripts/dev-env.inc)
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
PY="${PY:-$AC_PY}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if ! command -v moto_server >/dev/null 2>&1 || ! command -v gcp-storage-emulator >/dev/null 2>&1; then
  "$PY" -m pip install -q "moto[server]>=5.1" "gcp-storage-emulator>=2024.8.3"
fi

AZURITE_VERSION=3.37.0
FIRESTORE_EMULATOR_VERSION=0.3.15
installed() { # name version: is exactly that version in $AC_NODE_PREFIX/node_modules?
  node -e "process.exit(require('$AC_NODE_PREFIX/node_modules/$1/package.json').version === '$2' ? 0 : 1)" 2>/dev/null
}
if ! command -v npm >/dev/null 2>&1; then
  echo "30-emulators: npm not found; Azure and Firestore tests will skip (fail under CI=true)" >&2
  exit 0
fi
if ! installed azurite "$AZURITE_VERSION" || ! installed @firestore-emulator/server "$FIRESTORE_EMULATOR_VERSION"; then
  mkdir -p "$AC_NODE_PREFIX"
  npm install --prefix "$AC_NODE_PREFIX" --no-audit --no-fund --silent --no-save \
    "azurite@$AZURITE_VERSION" "@firestore-emulator/server@$FIRESTORE_EMULATOR_VERSION"
fi
