#!/usr/bin/env bash
# `actioncache exec` read-sets: strace traces a command on a miss to record every file it reads.
# From Debian's package. Idempotent and quiet; when strace is already there this only checks for it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
if ! command -v strace >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if ! apt-cache show strace >/dev/null 2>&1; then $SUDO apt-get update -qq; fi
  $SUDO apt-get install -y -qq strace >/dev/null
fi
