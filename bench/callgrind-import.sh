#!/usr/bin/env bash
# Where a data node's instructions go during `kista import`: one data node (one replica, no
# REDO log unless LOG is given) runs under callgrind while `kista import` (outside valgrind)
# loads ROWS rows of the import benchmark's file (`sql-lib.sh import_rows_file`: a primary
# key and a secondary index). Counters are zeroed once the table exists and dumped when the
# import ends; instructions per row are the node's total over ROWS. The profile stays in OUT
# for callgrind_annotate.
#
# Usage: bench/callgrind-import.sh [ROWS] [LOG] [OUT]   (defaults 100000, 0, /tmp/callgrind-import)
set -euo pipefail
rows=${1:-100000}
log=${2:-0}
out=${3:-/tmp/callgrind-import}
cd "$(dirname "$0")/.."
bench_name=callgrind-import
source bench/cluster-lib.sh
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
mkdir -p "$out"
rm -f "$out"/import.*

mgm_port=$(free_port); node_port=$(free_port); mgm="127.0.0.1:$mgm_port"
printf '[cluster]\nreplicas = 1\ndata_memory = "1G"\nheartbeat_interval_ms = 1500\nredo_log = "%s"\n[mgmd]\nport = %s\ndata_dir = "%s"\n[[data_node]]\nhost = "127.0.0.1"\nport = %s\ndata_dir = "%s"\n' \
  "$log" "$mgm_port" "$dir/mgmd" "$node_port" "$dir/node-1" > "$dir/cluster.toml"
$kista mgmd --config "$dir/cluster.toml" > "$dir/mgmd.log" 2>&1 &
pids=($!)
wait_ready "$dir/mgmd.log"
valgrind --tool=callgrind --callgrind-out-file="$out/import" \
  $kista datad --mgm "$mgm" --node-id 1 > "$dir/n1.log" 2>&1 &
node=$!
pids+=($node)
for _ in $(seq 1 1200); do [ "$(state_of 1)" = started ] && break; sleep 0.1; done
start_sql
source bench/import-lib.sh
import_rows_file "$rows" "$dir/rows.csv"
sql -e "CREATE DATABASE imp; USE imp; $import_table"
callgrind_control -z $node > /dev/null 2>&1
$kista import --mgm "$mgm" imp.t "$dir/rows.csv" --quiet --rejects "$dir/rejects" \
  --state "$dir/state" > "$out/import.out" 2>&1
callgrind_control -d $node > /dev/null 2>&1
for _ in $(seq 100); do ls "$out"/import.* > /dev/null 2>&1 && break; sleep 0.1; done
sleep 1
total=$(grep -h '^summary:' "$out"/import.[0-9]* | awk '{s += $2} END {print s}')
echo "import of $rows rows (redo_log $log): $total instructions, $(( total / rows )) per row"
cat "$out/import.out"
