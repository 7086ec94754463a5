#!/usr/bin/env bash
# Emulators for the blob-sqlite and Firestore tests. Idempotent and quiet; a second run only checks.
#   moto[server] (S3), gcp-storage-emulator (GCS)           -> pyproject's `test` extra (uv.lock)
#   npm: azurite (Azure Blob), @firestore-emulator/server   -> $AC_NODE_PREFIX/node_modules, outside
#        the checkout (~/.cache/actioncache/dev/npm: a fresh clone reuses it; see scripts/dev-env.inc)
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
AZURITE_VERSION=3.37.0
FIRESTORE_EMULATOR_VERSION=0.3.15
PYRIGHT_VERSION=1.1.414  # the type checker tests/test_public_surface.py runs on a typed user's script
installed() { # name version: is exactly that version in $AC_NODE_PREFIX/node_modules?
  node -e "process.exit(require('$AC_NODE_PREFIX/node_modules/$1/package.json').version === '$2' ? 0 : 1)" 2>/dev/null
}
if ! command -v npm >/dev/null 2>&1; then
  echo "30-emulators: npm not found; Azure and Firestore tests will skip (fail under CI=true)" >&2
  exit 0
fi
if ! installed azurite "$AZURITE_VERSION" || ! installed @firestore-emulator/server "$FIRESTORE_EMULATOR_VERSION" \
    || ! installed pyright "$PYRIGHT_VERSION"; then
  mkdir -p "$AC_NODE_PREFIX"
  echo "   npm: azurite@$AZURITE_VERSION, @firestore-emulator/server@$FIRESTORE_EMULATOR_VERSION and pyright@$PYRIGHT_VERSION into $AC_NODE_PREFIX (about 420 MB)"
  with_lock "$ACTIONCACHE_DEV_HOME/npm.lock" "another checkout's npm install of the emulators" npm install --prefix "$AC_NODE_PREFIX" --no-audit --no-fund --silent --no-save \
    "azurite@$AZURITE_VERSION" "@firestore-emulator/server@$FIRESTORE_EMULATOR_VERSION" "pyright@$PYRIGHT_VERSION"
fi
