#!/usr/bin/env bash
# `actioncache exec` read-sets: strace traces a command on a miss to record every file it reads.
# From Debian's package. Idempotent and quiet; when strace is already there this only checks for it.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/install.d/_apt.inc
. scripts/install.d/_apt.inc
command -v strace >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || apt_install strace
