#!/usr/bin/env bash
# Where a data node's *time* goes during `kista import` (callgrind counts instructions; a
# loaded row's time is mostly memory waits): `kista up` (two data nodes, two replicas)
# loads ROUNDS copies of the import benchmark's file of ROWS rows, each into a table of its
# own, and `perf record -e cpu-clock` (a software event: this machine allows no hardware
# counters) samples data node 1 during the last round. Prints the top symbols; the profile
# stays in OUT for `perf report -i OUT`.
#
#   bench/perf-import.sh [ROWS] [ROUNDS] [OUT]   (defaults 1000000, 1, /tmp/perf-import.data)
#
# PERF_HZ sets the sampling rate (2000); PERF_CALLGRAPH how stacks are taken (`-g`, frame
# pointers): `PERF_HZ=700 PERF_CALLGRAPH="--call-graph dwarf,16384"` gives whole stacks
# through inlined code, for `perf report --children`.
set -euo pipefail
bench_name=perf-import
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
rounds=${2:-1}
out=${3:-/tmp/perf-import.data}
command -v perf >/dev/null || { echo "needs perf: apt-get install linux-perf" >&2; exit 2; }

file="$dir/rows.csv"
import_rows_file "$rows" "$file"
# Data memory touched at start and sized to the load, as in bench/import.sh.
start_kista 1G --touch-memory
node=$(pgrep -f "kista datad --mgm 127.0.0.1:$mgm_port" | head -1)
for round in $(seq 1 "$rounds"); do
  mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE imp$round; USE imp$round; $import_table"
  if [ "$round" = "$rounds" ]; then
    perf record -e cpu-clock -F ${PERF_HZ:-2000} ${PERF_CALLGRAPH:--g} -p "$node" -o "$out" > "$dir/perf.log" 2>&1 &
    perf_pid=$!
    sleep 0.5
  fi
  $kista import --mgm "127.0.0.1:$mgm_port" "imp$round.t" "$file" --threads 8 --quiet \
    --rejects "$dir/rejects.$round" --state "$dir/state.$round"
done
kill -INT "$perf_pid"; wait "$perf_pid" || true
perf report -i "$out" --no-children --stdio --sort comm,symbol 2>/dev/null | grep -E '^ +[0-9]' | head -30
