#!/usr/bin/env bash
# Install actioncache and everything its tests and benchmarks use into the project's virtual
# environment, .venv; the system Python's packages are not touched. What goes where:
#   .venv -> ~/.cache/actioncache/dev/venv-pyX.Y   a link to a virtual environment the machine keeps,
#        so a fresh clone (CI) reuses it; a .venv that is already a real directory is used as it is.
#        It gets actioncache from this checkout (editable) with the extras in $ACTIONCACHE_EXTRAS
#        (default all,test,bench), plus what scripts/install.d/ adds (CPU torch first, the emulators).
#   ~/.cache/actioncache/dev/npm   the npm emulators (Azurite, Firestore), outside the checkout.
#   system packages: only where nothing else serves; the README lists each and why.
# A second run takes seconds: the extras are resolved again only when pyproject.toml or these
# scripts change. PYTHON picks the interpreter the venv is made from (default python3, 3.11+);
# ACTIONCACHE_PARTS="30-emulators 50-shellcheck" runs only those parts of install.d ("" none).
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
EXTRAS="${ACTIONCACHE_EXTRAS-all,test,bench}"
PARTS="${ACTIONCACHE_PARTS-all}"
BASE_PY="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc
mkdir -p "$ACTIONCACHE_DEV_HOME"
exec 9>"$ACTIONCACHE_DEV_HOME/install.lock"
flock 9  # one install at a time on this machine: checkouts may share the virtual environment

if [ ! -e .venv ] || [ -L .venv ]; then
  "$BASE_PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "install: actioncache needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2; exit 2; }
  shared="$ACTIONCACHE_DEV_HOME/venv-py$("$BASE_PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if [ ! -x "$shared/bin/python" ]; then
    echo "== install: a virtual environment in $shared"
    "$BASE_PY" -m venv "$shared"
  fi
  ln -sfn "$shared" .venv
fi
# shellcheck source=scripts/dev-env.inc
. scripts/dev-env.inc  # again, now that .venv is there: AC_PY and PATH point into it

for part in scripts/install.d/*.sh; do
  [ -e "$part" ] || continue
  name="${part##*/}"
  if [ "$PARTS" != all ] && [[ " $PARTS " != *" ${name%.sh} "* ]]; then continue; fi
  echo "== install: $name"
  PY="$AC_PY" bash "$part"
done

spec="."
[ -z "$EXTRAS" ] || spec=".[$EXTRAS]"
# One stamp per set of extras (the quick start installs none, the tests all): the inputs' hash.
stamp_file=".venv/.actioncache-installed-${EXTRAS:-base}"
# Versions known to install together on this interpreter and platform (scripts/constraints/, a pip
# freeze of a full install): with them pip's resolver has nothing to search. Without them a fresh
# full install spent about 25 minutes resolving here; with them it took under 4.
constraints="scripts/constraints/$("$AC_PY" -c 'import platform, sys; print("py%d%d-%s-%s" % (sys.version_info[:2] + (platform.system().lower(), platform.machine())))').txt"
pinned=()
[ -f "$constraints" ] && pinned=(-c "$constraints")
stamp="$(cat pyproject.toml scripts/install.sh scripts/install.d/*.sh "$constraints" 2>/dev/null | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
  echo "== install: actioncache${spec#.} into .venv${pinned:+ (versions from $constraints)}"
  "$AC_PY" -m pip install -q "${pinned[@]}" -e "$spec"
  echo "$stamp" > "$stamp_file"
elif ! "$AC_PY" -c "import actioncache, os, sys; sys.exit(os.path.realpath(actioncache.__file__) != os.path.realpath('src/actioncache/__init__.py'))" 2>/dev/null; then
  echo "== install: actioncache from this checkout into .venv (its extras are already there)"
  "$AC_PY" -m pip install -q --no-deps -e .
fi
echo "== install: done; use .venv/bin/python, or: source .venv/bin/activate"
