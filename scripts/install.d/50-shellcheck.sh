#!/usr/bin/env bash
# Agent loops (`actioncache exec`): the real verifiers its tests and example loop run.
# The shell linter comes from Debian's package; the Python linter (pyflakes) comes with the `test` extra.
# Idempotent and quiet; when shellcheck is already there this only checks for it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
if ! command -v shellcheck >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if ! apt-cache show shellcheck >/dev/null 2>&1; then $SUDO apt-get update -qq; fi
  $SUDO apt-get install -y -qq shellcheck >/dev/null
fi
