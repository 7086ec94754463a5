#!/usr/bin/env bash
# Plan replay in a real browser: Debian's Chromium, driven by Playwright (the `browser` extra)
# through executable_path, since Playwright's own browser download is not used.
# Idempotent and quiet; when chromium is already there this only checks for it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if ! apt-cache show chromium >/dev/null 2>&1; then $SUDO apt-get update -qq; fi
  $SUDO apt-get install -y -qq chromium >/dev/null
fi
