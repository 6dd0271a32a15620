#!/usr/bin/env bash
# Deadlocks under contention: sysbench oltp_write_only (four writes per transaction, in
# random key order) on 4 tables of only ROWS rows each, 16 threads, so transactions collide
# and deadlock often. Against `kista up` (deadlock detection on, the default), against the
# same cluster with `deadlock_detection_interval_ms = 0` (deadlocks end only by the 1.2 s
# lock wait timeout, as in NDB), and against MariaDB (InnoDB, which detects deadlocks at
# once) when mariadb-server is installed. Prints TPS, p95 and max latency (ms), and the
# errors sysbench ignored and retried (1213 deadlocks, 1205 lock wait timeouts).
#   bench/sysbench-deadlocks.sh [SECONDS=30] [ROWS=100]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
rows=${2:-100}
bench_name=sysbench-deadlocks
source bench/sql-lib.sh

# run_contended PORT LABEL: prepare, run, cleanup; one line of results.
run_contended() {
  local port=$1 label=$2
  mysql -h 127.0.0.1 -P "$port" -u root -e "CREATE DATABASE IF NOT EXISTS sbtest"
  sb "$port" oltp_write_only prepare --tables=4 --table-size="$rows" > "$dir/prepare.log" 2>&1 \
    || { cat "$dir/prepare.log"; exit 1; }
  sb "$port" oltp_write_only run --tables=4 --table-size="$rows" --threads=16 \
    --time="$seconds" > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
  read -r tps _ p95 ignored < <(summary < "$dir/run.log")
  max=$(awk '/max:/ { print $2; exit }' "$dir/run.log")
  printf '%-34s %10s %8s %9s %8s\n' "$label" "$tps" "$p95" "$max" "$ignored"
  sb "$port" oltp_write_only cleanup --tables=4 > /dev/null 2>&1
}

# A cluster like `kista up`'s (two data nodes, two replicas, one CPU each) with detection
# off, and its SQL front end; sets off_port.
off_pids=()
start_detection_off() {
  local mgm_port node_port
  mgm_port=$(free_port); off_port=$(free_port)
  mkdir -p "$dir/off"
  printf '[cluster]\nreplicas = 2\ndata_memory = "1G"\ndeadlock_detection_interval_ms = 0\n[mgmd]\nport = %s\ndata_dir = "%s"\n' \
    "$mgm_port" "$dir/off/mgmd" > "$dir/off/cluster.toml"
  for id in 1 2; do
    node_port=$(free_port)
    printf '[[data_node]]\nhost = "127.0.0.1"\nport = %s\nnum_cpus = 1\ndata_dir = "%s"\n' \
      "$node_port" "$dir/off/node-$id" >> "$dir/off/cluster.toml"
  done
  $kista mgmd --config "$dir/off/cluster.toml" > "$dir/off/mgmd.log" 2>&1 & off_pids+=($!)
  for _ in $(seq 1 300); do grep -q "ready" "$dir/off/mgmd.log" && break; sleep 0.1; done
  for id in 1 2; do
    $kista datad --mgm "127.0.0.1:$mgm_port" --node-id "$id" > "$dir/off/n$id.log" 2>&1 & off_pids+=($!)
  done
  for id in 1 2; do
    for _ in $(seq 1 300); do grep -q "ready" "$dir/off/n$id.log" && break; sleep 0.1; done
  done
  $kista sql --mgm "127.0.0.1:$mgm_port" --port "$off_port" > "$dir/off/sql.log" 2>&1 & off_pids+=($!)
  for _ in $(seq 1 300); do grep -q "ready" "$dir/off/sql.log" && break; sleep 0.1; done
  grep -q "ready" "$dir/off/sql.log" || { cat "$dir/off"/*.log >&2; exit 1; }
}
stop_detection_off() {
  # (A bare `wait` would wait for MariaDB too.)
  ((${#off_pids[@]})) || return 0
  for pid in "${off_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${off_pids[@]}" 2>/dev/null || true
  off_pids=()
}
trap 'stop_detection_off; cleanup' EXIT

printf '%-34s %10s %8s %9s %8s\n' server tps p95_ms max_ms ignored
start_kista 2G
run_contended "$kista_port" "kista (deadlock detection)"
kill -TERM "$up_pid"; wait "$up_pid" 2>/dev/null || true; up_pid=""
start_detection_off
run_contended "$off_port" "kista (lock wait timeout only)"
stop_detection_off
if command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ]; then
  start_mariadb
  run_contended "$mariadb_port" "mariadb (innodb)"
fi
