#!/usr/bin/env bash
# Redis and PostgreSQL servers for the redis/postgres stores' tests (the outage tests also run
# private instances from these binaries). Quiet and instant when they are already installed.
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
