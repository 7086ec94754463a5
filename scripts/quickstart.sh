#!/usr/bin/env bash
# The README's first command: install actioncache into .venv (scripts/install.sh), then run the document-extraction agent twice
# on the SQLite default store. The first run is a miss (a slow extraction), the second a hit.
#
# It uses a fresh default store in a temporary directory (XDG_CACHE_HOME), so the demo shows a
# miss then a hit every time it runs and never touches your own cache.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
if ! "$AC_PY" -c "import actioncache.agents, sys, os; sys.exit(0 if os.path.realpath(actioncache.__file__).startswith(os.path.realpath('src')) else 1)" 2>/dev/null; then
  echo "== installing actioncache from this checkout into .venv (scripts/install.sh, no extras)"
  ACTIONCACHE_EXTRAS="${ACTIONCACHE_EXTRAS-}" ACTIONCACHE_PARTS="${ACTIONCACHE_PARTS-}" ACTIONCACHE_SYNC=inexact \
    bash scripts/install.sh
  # shellcheck source=scripts/dev-env.inc
  . scripts/dev-env.inc
fi
PY="$AC_PY"

demo_home="$(mktemp -d)"
trap 'rm -rf "$demo_home"' EXIT
export XDG_CACHE_HOME="$demo_home"
unset ACTIONCACHE_URL
input='{"file_path": "examples/data/report.txt"}'

for run in 1 2; do
  echo
  echo "== run $run: actioncache run examples/document_extraction.yaml --input '$input'"
  start=$("$PY" -c 'import time; print(time.time())')
  state=$("$PY" -m actioncache run examples/document_extraction.yaml --input "$input")
  "$PY" - "$state" "$start" <<'PYEOF'
import json, sys, time
state, start = json.loads(sys.argv[1]), float(sys.argv[2])
r = state["extraction_result"]
print(f"   _cache_hit={str(r['_cache_hit']).lower()}  key={r['_cache_key'][:40]}...  "
      f"data={json.dumps(state['data'])}  ({time.time() - start:.2f}s)")
PYEOF
done

echo
echo "== actioncache stats (the default store: $XDG_CACHE_HOME/actioncache/actioncache.db)"
"$PY" -m actioncache stats
