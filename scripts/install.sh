#!/usr/bin/env bash
# Install actioncache and everything its tests and benchmarks use, on a fresh machine.
# Each optional part adds a script to scripts/install.d/ (system packages, npm emulators, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
for part in scripts/install.d/*.sh; do
  [ -e "$part" ] || continue
  echo "== install: ${part##*/}"
  PY="$PY" bash "$part"
done
echo "== install: actioncache[${ACTIONCACHE_EXTRAS:-all,test,bench}]"
"$PY" -m pip install -q -e ".[${ACTIONCACHE_EXTRAS:-all,test,bench}]"
