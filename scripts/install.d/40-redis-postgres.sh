#!/usr/bin/env bash
# Redis and PostgreSQL servers for the redis/postgres stores' tests (each test run starts its own
# Redis from this binary and its own database in this PostgreSQL: scripts/services.d/). Quiet and
# instant when they are already installed.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/install.d/_apt.inc
. scripts/install.d/_apt.inc
command -v apt-get >/dev/null 2>&1 || exit 0
command -v redis-server >/dev/null || apt_install redis-server
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_install postgresql
