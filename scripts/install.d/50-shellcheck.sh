#!/usr/bin/env bash
# Agent loops (`actioncache exec`): the real verifiers its tests and example loop run.
# The shell linter comes from Debian's package; the Python linter (pyflakes) comes with the `test` extra.
# Idempotent and quiet; when shellcheck is already there this only checks for it.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/install.d/_apt.inc
. scripts/install.d/_apt.inc
command -v shellcheck >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || apt_install shellcheck
