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
source bench/sysbench-lib.sh
command -v sysbench >/dev/null || { echo "needs sysbench: apt-get install sysbench" >&2; exit 2; }
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
mkdir -p "$out"

start_node_under_callgrind 512M 0 "$out/node"
start_sql
sb_prepare "$sql_port" "$rows"
callgrind_control -z $node > /dev/null 2>&1
sb "$sql_port" "$workload" run --tables=4 --table-size="$rows" --threads=4 \
  --events="$events" --time=0 > "$out/sysbench.out" 2>&1
total=$(callgrind_node_total "$out/node")
echo "$workload, $events events: $total instructions, $(( total / events )) per event"
