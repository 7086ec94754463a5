#!/usr/bin/env bash
# GCS for the blob-sqlite tests: gcp-storage-emulator (pip) in memory on 127.0.0.1:9023 (tests/services.py).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main gcp-storage-emulator 9023 "${1:-}" gcp-storage-emulator start -H 127.0.0.1 --port 9023 --in-memory -q
