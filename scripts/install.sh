#!/usr/bin/env bash
# Install actioncache and everything its tests and benchmarks use into this checkout's own virtual
# environment, .venv, with uv and the lockfile (uv.lock). The system Python's packages are not touched.
#
#   .venv                         this checkout's environment: actioncache from this checkout (editable),
#                                 the extras in $ACTIONCACHE_EXTRAS (default all,test,bench), the versions
#                                 of uv.lock. Nothing in it is shared with another checkout.
#   $ACTIONCACHE_DEV_HOME/uv-cache  uv's package cache (about 2.3 GB for every extra): what checkouts share.
#                                 A second checkout's .venv is linked from it in seconds.
#   $ACTIONCACHE_DEV_HOME/uv      uv itself (from PyPI, pinned below) when uv is not on PATH.
#   system packages, npm          only in scripts/install.d/ parts; the README lists each, its size, and why.
#
# Each step says what it does before it does it; a wait for another checkout's install says whose.
# PYTHON picks the interpreter (default python3, 3.11+); ACTIONCACHE_PARTS="30-emulators 50-shellcheck"
# runs only those parts of install.d ("" none); ACTIONCACHE_SYNC=inexact keeps packages the lock's
# extras do not list (the quick start uses it, so it never removes what the test command installed).
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
EXTRAS="${ACTIONCACHE_EXTRAS-all,test,bench}"
PARTS="${ACTIONCACHE_PARTS-all}"
BASE_PY="${PYTHON:-python3}"
UV_VERSION=0.13.9
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
mkdir -p "$ACTIONCACHE_DEV_HOME"

"$BASE_PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "install: actioncache needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2; exit 2; }

# uv: the one on PATH when it is recent enough, else a private copy from PyPI (a venv holding only uv).
install_uv() { # PATH: a venv holding only uv, at the pinned version (once per machine)
  [ -x "$1" ] && uv_ok "$1" && return 0
  local venv="${1%/bin/uv}"
  echo "== install: uv $UV_VERSION from PyPI into $venv (about 40 MB, once per machine)"
  rm -rf "$venv"
  "$BASE_PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
}
uv_ok() { "$1" --version 2>/dev/null | awk '{ split($2, v, "."); exit !(v[1] > 0 || v[2] >= 9) }'; }
UV="$(command -v uv || true)"
if [ -z "$UV" ] || ! uv_ok "$UV"; then
  UV="$ACTIONCACHE_DEV_HOME/uv/bin/uv"
  if ! uv_ok "$UV"; then
    with_lock "$ACTIONCACHE_DEV_HOME/uv.lock" "uv's own install" install_uv "$UV"
  fi
fi
export UV_CACHE_DIR="${UV_CACHE_DIR:-$ACTIONCACHE_DEV_HOME/uv-cache}" UV_PYTHON_DOWNLOADS=never

if [ -L .venv ]; then
  # The old layout linked every checkout's .venv to one shared environment; leave that one alone.
  echo "== install: .venv was a link to $(readlink .venv) (shared by every checkout); making this checkout its own"
  rm .venv
elif made_for="$(sed -n "s/^VIRTUAL_ENV='\(.*\)'\$/\1/p" .venv/bin/activate 2>/dev/null)" && [ -n "$made_for" ] \
     && [ "$made_for" != "$PWD/.venv" ] && [ "$made_for" != "$(pwd -P)/.venv" ]; then
  # A checkout that was moved or copied: its programs (pytest, lint-imports...) still start the
  # interpreter at the old path. Build the environment again where it is now.
  echo "== install: .venv was made for another path ($made_for); building it again here"
  rm -rf .venv
fi

sync_args=(--locked --python "$BASE_PY")
IFS=, read -r -a extras <<< "$EXTRAS"
for extra in "${extras[@]}"; do [ -z "$extra" ] || sync_args+=(--extra "$extra"); done
[ "${ACTIONCACHE_SYNC:-exact}" = inexact ] && sync_args+=(--inexact)
if [ -d "$UV_CACHE_DIR" ]; then
  echo "== install: actioncache${EXTRAS:+[$EXTRAS]} into .venv from uv.lock (uv sync; packages linked from $UV_CACHE_DIR)"
else
  echo "== install: actioncache${EXTRAS:+[$EXTRAS]} into .venv from uv.lock (uv sync; first install on this machine:"
  echo "   downloads into $UV_CACHE_DIR, about 2.3 GB with every extra, then links from it)"
fi
if [ -e "$UV_CACHE_DIR/.lock" ] && ! flock -n -s "$UV_CACHE_DIR/.lock" true 2>/dev/null; then
  # uv itself waits without a word while another uv holds its cache (uv cache clean / prune).
  echo "== install: waiting for uv's package cache: another uv holds $UV_CACHE_DIR/.lock (uv cache clean or prune)"
fi
"$UV" sync "${sync_args[@]}"
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc  # again, now that .venv is there: AC_PY and PATH point into it
# A hit of `actioncache exec` loads its modules compiled; where Python may not write them itself
# (PYTHONDONTWRITEBYTECODE, a read-only checkout) every hit would compile them again, ~3x its cost.
echo "== install: compiling actioncache's modules and the command's launcher (python -m compileall)"
compiled=(src/actioncache bin/_actioncache_launch.py)
[ -e .venv/bin/_actioncache_launch.py ] && compiled+=(.venv/bin/_actioncache_launch.py)
"$AC_PY" -m compileall -q "${compiled[@]}" >/dev/null ||
  echo "== install: compileall failed: exec hits will compile their modules on every run (~3x their cost)" >&2

for part in scripts/install.d/*.sh; do
  [ -e "$part" ] || continue
  name="${part##*/}"
  if [ "$PARTS" != all ] && [[ " $PARTS " != *" ${name%.sh} "* ]]; then continue; fi
  echo "== install: $name"
  PY="$AC_PY" bash "$part"
done
echo "== install: done; use .venv/bin/python, or: source .venv/bin/activate"
