#!/usr/bin/env bash
# A load that goes on: `kista import` of the import benchmark's file ROUNDS times in a row,
# each into a table of its own, on `kista up` (two data nodes, two replicas). Prints each
# round's wall time and data node 1's CPU seconds (user + system) in it, then what the data
# nodes counted: aborted transactions (REDO log full was error 410) and writes that waited
# for room in the REDO log. From the third 1M-row round on, the default 256M log fills
# faster than local checkpoints free it; `--redo-log 4G` (as UP_OPTIONS) keeps every round
# clear of checkpoints.
#
#   bench/import-rounds.sh [ROWS] [ROUNDS] [UP_OPTIONS...]   (defaults 1000000, 4)
set -euo pipefail
bench_name=import-rounds
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
rounds=${2:-4}
shift $(( $# < 2 ? $# : 2 ))

import_rows_file "$rows" "$dir/rows.csv"
start_kista 2G "$@"
node=$(pgrep -f "kista datad --mgm 127.0.0.1:$mgm_port" | head -1)
for round in $(seq 1 "$rounds"); do
  mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE imp$round; USE imp$round; $import_table"
  cpu0=$(cpu_seconds "$node")
  t0=$(date +%s.%N)
  $kista import --mgm "127.0.0.1:$mgm_port" "imp$round.t" "$dir/rows.csv" --threads 8 --quiet \
    --rejects "$dir/rejects.$round" --state "$dir/state.$round" > "$dir/import.log"
  t1=$(date +%s.%N)
  printf 'round %s: %.2f s, data node 1 CPU %.2f s\n' "$round" "$(echo "$t1 - $t0" | bc)" \
    "$(echo "$(cpu_seconds "$node") - $cpu0" | bc)"
done
for url in $(grep -ho "http://127.0.0.1:[0-9]*/metrics" "$dir"/kista/logs/data-node-*.log); do
  curl -s "$url" | grep -E '^kista_(transactions_total\{.*aborted|redo_waits_total)'
done
grep -h "local checkpoint" "$dir"/kista/logs/data-node-1.log | sed 's/^.*ldm/ldm/'
