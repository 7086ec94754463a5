#!/usr/bin/env bash
# A Redis Cluster for the tests: three masters and three replicas from the installed redis-server,
# each on a free loopback port of this run's own, keeping nothing on disk. The seeds go to the tests
# as ACTIONCACHE_TEST_REDIS_CLUSTER_URL (redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3) and
# every node's port as ACTIONCACHE_TEST_REDIS_CLUSTER_PORTS. A test that kills a node starts a
# cluster of its own with this script and another ACTIONCACHE_TEST_RUN_DIR.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
NODES=6

start_node() { # N: start node N on free ports and print its port. A free port may be taken between
  # the check and redis-server's bind (another service starting, an outgoing connection): a node
  # that died or never opened its port is started again on other ports, up to 3 times.
  local n=$1 dir="$RUN/redis-cluster-$1" try port bus pid
  mkdir -p "$dir"
  for try in 1 2 3; do
    read -r port bus < <(free_ports 2)
    rm -f "$dir/nodes.conf"
    # A short node timeout: a replica takes over a dead master's slots within about 2 s (validity
    # factor 0: whatever the age of its copy, as a test of failover wants). The bus port is given,
    # not port + 10000: that one may be taken, or past 65535.
    setsid redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" --logfile "" \
      --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-port "$bus" --cluster-node-timeout 1000 \
      --cluster-replica-validity-factor 0 --repl-diskless-sync-delay 0 \
      >"$dir.log" 2>&1 </dev/null &
    pid=$!
    if await_port "$pid" "$port" 100 0.1; then record_pid "$RUN/redis-cluster-$n.pid" "$pid"; echo "$port"; return 0; fi
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "redis-cluster: node $n on ports $port/$bus did not start (try $try): $(tail -1 "$dir.log")" >&2
  done
  return 1
}
case "${1:-}" in
  start)
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
      echo "redis-cluster: redis-server or redis-cli not installed (run scripts/install.sh)" >&2; exit 1
    fi
    ports=()
    for n in $(seq 1 "$NODES"); do
      port="$(start_node "$n")" || { echo "redis-cluster: node $n did not start (3 tries); logs in $RUN" >&2; exit 1; }
      ports+=("$port")
    done
    nodes=()
    for port in "${ports[@]}"; do nodes+=("127.0.0.1:$port"); done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$RUN/redis-cluster.create.log" 2>&1 \
      || { echo "redis-cluster: redis-cli --cluster create failed:" >&2; tail -5 "$RUN/redis-cluster.create.log" >&2; exit 1; }
    for _ in $(seq 1 150); do
      ok=0
      for port in "${ports[@]}"; do
        redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && ok=$((ok + 1))
      done
      [ "$ok" = "$NODES" ] && break
      sleep 0.2
    done
    [ "$ok" = "$NODES" ] || { echo "redis-cluster: the cluster did not reach state ok" >&2; exit 1; }
    for _ in $(seq 1 150); do  # every replica has its master's copy (a failover has something to serve)
      synced=0
      for port in "${ports[@]}"; do
        redis-cli -p "$port" info replication 2>/dev/null | grep -q -e '^role:master' -e '^master_link_status:up' \
          && synced=$((synced + 1))
      done
      [ "$synced" = "$NODES" ] && break
      sleep 0.2
    done
    publish ACTIONCACHE_TEST_REDIS_CLUSTER_URL "redis+cluster://${nodes[0]},${nodes[1]},${nodes[2]}"
    publish ACTIONCACHE_TEST_REDIS_CLUSTER_PORTS "${ports[*]}"
    echo "redis-cluster: 3 masters + 3 replicas on 127.0.0.1 ports ${ports[*]}" ;;
  stop)
    stopped=0
    for n in $(seq 1 "$NODES"); do
      [ -f "$RUN/redis-cluster-$n.pid" ] || continue
      stop_pid "$RUN/redis-cluster-$n.pid"
      rm -rf "$RUN/redis-cluster-$n"
      stopped=1
    done
    [ "$stopped" = 1 ] && echo "redis-cluster: stopped" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
exit 0
