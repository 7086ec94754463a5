#!/bin/sh
# An agent loop in miniature: three iterations of BUILD → VERIFY over a small tree.
#   pass 1: every verifier misses and runs (and its PASS is recorded)
#   pass 2: nothing changed, so every verifier is served from the cache
#   pass 3: the "agent" edits one shell script: only that file's shellcheck runs again
# Needs shellcheck (Debian package) and pyflakes (pip install 'actioncache[loop]').
#   sh examples/agent_loop/run_loop.sh
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -R "$here/tree/." "$work/"
cp "$here/verify.sh" "$work/"
mkdir -p "$work/.git"   # marks the loop's root: the config search stops here

if [ -z "${ACTIONCACHE:-}" ]; then
  if command -v actioncache >/dev/null 2>&1; then ACTIONCACHE=actioncache; else ACTIONCACHE="python3 -m actioncache"; fi
fi
if [ -z "${PYFLAKES:-}" ]; then
  if command -v pyflakes >/dev/null 2>&1; then PYFLAKES=pyflakes; else PYFLAKES="python3 -m pyflakes"; fi
fi
# Check the verifiers first: a missing one would only show up as a failing check in the loop.
command -v shellcheck >/dev/null 2>&1 || {
  echo "run_loop.sh: shellcheck is not installed; install it with: apt-get install shellcheck" >&2; exit 2; }
# shellcheck disable=SC2086 # PYFLAKES may be "python3 -m pyflakes"
$PYFLAKES --version >/dev/null 2>&1 || {
  echo "run_loop.sh: pyflakes is not installed ($PYFLAKES); install it with: pip install 'actioncache[loop]'" >&2; exit 2; }
export ACTIONCACHE PYFLAKES
export ACTIONCACHE_URL="${ACTIONCACHE_URL:-sqlite:///$work/loop-cache.db}"
export CACHE_MODE="${CACHE_MODE:-use}"
export CACHE_SCOPE="${CACHE_SCOPE:-verify,read}"
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

cd "$work"
for pass in 1 2 3; do
  if [ "$pass" = 3 ]; then
    echo "== BUILD: the agent edits scripts/clean.sh"
    printf 'echo "cleaned"\n' >> scripts/clean.sh
  fi
  echo "== pass $pass: VERIFY"
  CACHE_PHASE=VERIFY sh verify.sh 2>&1
done
echo "== loop summary"
$ACTIONCACHE stats --since "$started"
$ACTIONCACHE loop-stats --since "$started"
