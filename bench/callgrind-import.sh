#!/usr/bin/env bash
# Where a data node's instructions go during `kista import`: one data node (one replica, no
# REDO log unless LOG is given) runs under callgrind while `kista import` (outside valgrind)
# loads ROWS rows of the import benchmark's file (`sql-lib.sh import_rows_file`: a primary
# key and a secondary index). Counters are zeroed once the table exists and dumped when the
# import ends; instructions per row are the node's total over ROWS. The profile stays in OUT
# for callgrind_annotate. CALLGRIND_CACHE_SIM=yes also counts the node's data misses in
# callgrind's simulated last-level cache (slower).
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

start_node_under_callgrind 1G "$log" "$out/import"
start_sql
source bench/import-lib.sh
import_rows_file "$rows" "$dir/rows.csv"
sql -e "CREATE DATABASE imp; USE imp; $import_table"
callgrind_control -z $node > /dev/null 2>&1
$kista import --mgm "$mgm" imp.t "$dir/rows.csv" --quiet --rejects "$dir/rejects" \
  --state "$dir/state" > "$out/import.out" 2>&1
total=$(callgrind_node_total "$out/import")
echo "import of $rows rows (redo_log $log): $total instructions, $(( total / rows )) per row"
if [ "${CALLGRIND_CACHE_SIM:-no}" = yes ]; then
  misses=$(callgrind_node_misses "$out/import")
  echo "last-level cache data misses: $misses, $(echo "$misses / $rows" | bc -l | xargs printf '%.1f') per row"
fi
cat "$out/import.out"
