#!/usr/bin/env bash
# Remove what the set-up installed (scripts/install.sh, scripts/test.sh), and say how much it was.
#   bash scripts/uninstall.sh            # this checkout's .venv, and what the machine keeps for every
#                                        # checkout: uv's package cache, uv itself, the npm emulators,
#                                        # the exported embedding models, test runs left by a killed run
#   bash scripts/uninstall.sh --system   # also the Debian packages and pgvector files the set-up added
#                                        # (only those it added itself: see $ACTIONCACHE_DEV_HOME/*-installed.txt)
# Your own cache (~/.cache/actioncache/actioncache.db and other stores you chose) is never touched.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
system=no
[ "${1:-}" = "--system" ] && system=yes
size() { du -sh "$1" 2>/dev/null | cut -f1; }
remove() { # PATH WHAT
  [ -e "$1" ] || [ -L "$1" ] || return 0
  echo "removing $2: $1 ($(size "$1"))"
  rm -rf "$1"
}
remove .venv "this checkout's virtual environment"
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
for run in "$RUNS_HOME"/run.*; do  # only this user's runs whose test command is gone
  if [ ! -d "$run" ] || [ -L "$run" ] || [ ! -O "$run" ]; then continue; fi
  run_is_alive "$run" && continue
  ACTIONCACHE_TEST_RUN_DIR="$run" bash scripts/services.sh stop >/dev/null 2>&1 || true
  remove "$run" "a test run a killed run left"
done
remove "${ACTIONCACHE_MODEL_CACHE:-$HOME/.cache/actioncache/onnx}" "the exported embedding models"
if [ "$system" = yes ]; then
  if [ -s "$ACTIONCACHE_DEV_HOME/apt-installed.txt" ]; then
    mapfile -t packages < <(sort -u "$ACTIONCACHE_DEV_HOME/apt-installed.txt")
    echo "removing Debian packages the set-up installed: ${packages[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get purge -y -qq --auto-remove "${packages[@]}" >/dev/null || echo "  (apt could not remove some; see above)"
  fi
  if [ -s "$ACTIONCACHE_DEV_HOME/files-installed.txt" ]; then
    echo "removing the pgvector files the set-up built and installed"
    while IFS= read -r file; do [ -n "$file" ] && rm -rf "$file"; done < "$ACTIONCACHE_DEV_HOME/files-installed.txt"
  fi
fi
remove "$ACTIONCACHE_DEV_HOME/uv-cache" "uv's package cache (what every checkout's .venv links from)"
remove "$ACTIONCACHE_DEV_HOME/uv" "uv"
remove "$ACTIONCACHE_DEV_HOME/npm" "the npm emulators (Azurite, Firestore)"
remove "$ACTIONCACHE_DEV_HOME/mypy-cache" "mypy's cache (test.sh's type checks)"
if [ "$system" = yes ]; then
  # Only the files the set-up writes there, never the directory itself: ACTIONCACHE_DEV_HOME may be
  # a directory the user chose (~/.cache, another disk) that holds other things.
  for note in "$ACTIONCACHE_DEV_HOME"/*-installed.txt "$ACTIONCACHE_DEV_HOME"/*.lock "$ACTIONCACHE_DEV_HOME"/*.owner; do
    [ -f "$note" ] && rm -f "$note"
  done
  rmdir "$ACTIONCACHE_DEV_HOME" 2>/dev/null && echo "removed the set-up's notes and its empty directory $ACTIONCACHE_DEV_HOME" \
    || echo "removed the set-up's notes; kept $ACTIONCACHE_DEV_HOME (it holds files the set-up did not write)"
elif [ -d "$ACTIONCACHE_DEV_HOME" ]; then
  echo "kept $ACTIONCACHE_DEV_HOME: its notes list the system packages the set-up added (--system removes them)"
fi
echo "done; other checkouts' .venv directories are their own: run this script in each, or delete them"
