#!/usr/bin/env bash
# S3 for the blob-sqlite tests: moto_server (pip moto[server]) on 127.0.0.1:5555 (tests/services.py).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main moto_server 5555 "${1:-}" moto_server -H 127.0.0.1 -p 5555
