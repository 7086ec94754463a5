#!/usr/bin/env bash
# The test command: install (into .venv, see install.sh), start the real servers, run the suite on
# every core (pytest-xdist; tests that must not share a moment carry an xdist_group mark), stop
# what was started. Arguments go to pytest; ACTIONCACHE_TEST_WORKERS=1 runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
bash scripts/install.sh
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
bash scripts/services.sh start
trap 'bash scripts/services.sh stop' EXIT
PYTHONPATH=src lint-imports --no-cache  # the layer contract of pyproject.toml (lint-imports is in .venv)
workers=()
if [ "${ACTIONCACHE_TEST_WORKERS:-auto}" != 1 ] && "$AC_PY" -c "import xdist" 2>/dev/null; then
  workers=(-n "${ACTIONCACHE_TEST_WORKERS:-auto}" --dist loadgroup)
fi
"$AC_PY" -m pytest -q -p no:cacheprovider "${workers[@]}" "$@"
