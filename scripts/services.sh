#!/usr/bin/env bash
# Start or stop the real servers the tests talk to, on loopback only.
#   scripts/services.sh start   # starts what is not already running; records what it started
#   scripts/services.sh stop    # stops only what `start` started
# Each service is a script in scripts/services.d/ taking start|stop; ports are fixed and listed
# in tests/services.py so tests and scripts agree.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
action="${1:?usage: scripts/services.sh start|stop}"
mkdir -p .ci/.state
status=0
for svc in scripts/services.d/*.sh; do
  [ -e "$svc" ] || continue
  echo "== services $action: ${svc##*/}"
  bash "$svc" "$action" || { echo "!! ${svc##*/} $action failed" >&2; status=1; }
done
exit $status
