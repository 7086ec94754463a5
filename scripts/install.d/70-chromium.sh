#!/usr/bin/env bash
# Plan replay in a real browser: Debian's Chromium, driven by Playwright (the `browser` extra)
# through executable_path, since Playwright's own browser download is not used. Without recommended
# packages (they would add avahi-daemon, cups-pk-helper and more; headless Chromium needs none).
# Idempotent and quiet; when chromium is already there this only checks for it.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/install.d/_apt.inc
. scripts/install.d/_apt.inc
command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || apt_install chromium
