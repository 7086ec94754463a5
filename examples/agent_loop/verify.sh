#!/bin/sh
# The loop's verifier: every check goes through `actioncache exec`. It reads the cache mode and
# scopes from the environment the loop exported (CACHE_MODE, CACHE_SCOPE, CACHE_PHASE), so the
# same script runs uncached when the loop is started with CACHE_MODE=off.
set -u
: "${ACTIONCACHE:=actioncache}"
: "${PYFLAKES:=pyflakes}"
status=0
for script in scripts/*.sh; do
  $ACTIONCACHE exec --summary --scope verify -- shellcheck "$script" || status=1
done
# shellcheck disable=SC2086 # PYFLAKES may be "python3 -m pyflakes"
$ACTIONCACHE exec --summary --scope verify -- $PYFLAKES app || status=1
$ACTIONCACHE exec --summary --scope read -- cat app/greet.py >/dev/null || status=1
exit "$status"
