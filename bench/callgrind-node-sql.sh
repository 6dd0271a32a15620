#!/usr/bin/env bash
# Where a data node's instructions go under a sysbench workload sent through `kista sql`:
# one data node (one replica, no REDO log) runs under callgrind while sysbench (outside
# valgrind, 4 threads) runs EVENTS events of WORKLOAD on 4 tables of ROWS rows. Counters are
# zeroed once the tables are loaded and dumped when the run ends; instructions per event are
# the node's total over EVENTS. The profile stays in OUT for callgrind_annotate.
#
# Usage: bench/callgrind-node-sql.sh [WORKLOAD] [EVENTS] [ROWS] [OUT]
#   (defaults oltp_update_non_index, 20000, 2000, /tmp/callgrind-node-sql)
set -euo pipefail
workload=${1:-oltp_update_non_index}
events=${2:-20000}
rows=${3:-2000}
out=${4:-/tmp/callgrind-node-sql}
cd "$(dirname "$0")/.."
bench_name=callgrind-node-sql
source bench/cluster-lib.sh
source bench/sql-lib.sh
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
mkdir -p "$out"
rm -f "$out"/node.*

mgm_port=$(free_port); node_port=$(free_port); mgm="127.0.0.1:$mgm_port"
printf '[cluster]\nreplicas = 1\ndata_memory = "512M"\nheartbeat_interval_ms = 1500\nredo_log = "0"\n[mgmd]\nport = %s\ndata_dir = "%s"\n[[data_node]]\nhost = "127.0.0.1"\nport = %s\ndata_dir = "%s"\n' \
  "$mgm_port" "$dir/mgmd" "$node_port" "$dir/node-1" > "$dir/cluster.toml"
$kista mgmd --config "$dir/cluster.toml" > "$dir/mgmd.log" 2>&1 &
pids=($!)
wait_ready "$dir/mgmd.log"
valgrind --tool=callgrind --callgrind-out-file="$out/node" \
  $kista datad --mgm "$mgm" --node-id 1 > "$dir/n1.log" 2>&1 &
node=$!
pids+=($node)
for _ in $(seq 1 1200); do [ "$(state_of 1)" = started ] && break; sleep 0.1; done
start_sql
sb_prepare "$sql_port" "$rows"
callgrind_control -z $node > /dev/null 2>&1
sb "$sql_port" "$workload" run --tables=4 --table-size="$rows" --threads=4 \
  --events="$events" --time=0 > "$out/sysbench.out" 2>&1
callgrind_control -d $node > /dev/null 2>&1
for _ in $(seq 100); do ls "$out"/node.* > /dev/null 2>&1 && break; sleep 0.1; done
sleep 1
total=$(grep -h '^summary:' "$out"/node.[0-9]* | awk '{s += $2} END {print s}')
echo "$workload, $events events: $total instructions, $(( total / events )) per event"
