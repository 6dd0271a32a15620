#!/usr/bin/env bash
# Loading a file: `kista import` into Kista (two data nodes, two replicas) against
# MariaDB's `LOAD DATA INFILE` (InnoDB, log flushed about once a second) on the same CSV
# file and machine, ROUNDS times each, alternating. Prints rows/s for each round, then for
# all rounds together. Each round loads into a database of its own on both sides and drops
# none: a dropped table's rows are freed in the background (Kista's data nodes a slice at a
# time, MariaDB's purge), which would run during the next round's load.
#
#   bench/import.sh [ROWS] [ROUNDS] [THREADS]
set -euo pipefail
bench_name=import
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
rounds=${2:-2}
threads=${3:-8}

file="$dir/rows.csv"
import_rows_file "$rows" "$file"
echo "file: $rows rows, $(du -m "$file" | cut -f1) MB"
table=$import_table

# The rounds load millions of rows in all: a REDO log of NDB's default size (1G), as
# docs/operations.md ("Large loads") advises for them; the default 256M fills in the
# third round, which then waits for local checkpoints. The data nodes allocate and write
# their data memory at start (`--touch-memory`, as NDB's always do), so the loads meet no
# page faults; it is sized to the rounds (three million rows take ~0.5 GB a node), as a
# touched node holds all of it from its start (docs/operations.md, "Memory").
start_kista 1G --redo-log 1G --touch-memory
start_mariadb 0
rate() { echo "$1 $2" | awk '{ printf "%.0f", $1 / $2 }'; }
kista_total_s=0; mariadb_total_s=0; kista_total_rows=0; mariadb_total_rows=0
for round in $(seq 1 "$rounds"); do
  db="imp$round"
  mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE $db; USE $db; $table"
  t0=$(date +%s.%N)
  $kista import --mgm "127.0.0.1:$mgm_port" "$db.t" "$file" --threads "$threads" --quiet \
    --rejects "$dir/rejects.$round" --state "$dir/state.$round" > "$dir/import.log"
  t1=$(date +%s.%N)
  kista_s=$(echo "$t1 - $t0" | bc)
  loaded=$(mysql -h 127.0.0.1 -P "$kista_port" -u root -N -e "SELECT COUNT(*) FROM $db.t")

  mysql -h 127.0.0.1 -P "$mariadb_port" -u root -e "CREATE DATABASE $db; USE $db; $table"
  t0=$(date +%s.%N)
  mysql -h 127.0.0.1 -P "$mariadb_port" -u root "$db" -e \
    "LOAD DATA INFILE '$file' INTO TABLE t FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"
  t1=$(date +%s.%N)
  mariadb_s=$(echo "$t1 - $t0" | bc)
  mariadb_loaded=$(mysql -h 127.0.0.1 -P "$mariadb_port" -u root -N -e "SELECT COUNT(*) FROM $db.t")

  printf 'round %s: kista import %s rows in %.2f s = %s rows/s; MariaDB LOAD DATA %s rows in %.2f s = %s rows/s; ratio %.2f\n' \
    "$round" "$loaded" "$kista_s" "$(rate "$loaded" "$kista_s")" \
    "$mariadb_loaded" "$mariadb_s" "$(rate "$mariadb_loaded" "$mariadb_s")" \
    "$(echo "$mariadb_s / $kista_s" | bc -l)"
  kista_total_s=$(echo "$kista_total_s + $kista_s" | bc); kista_total_rows=$((kista_total_rows + loaded))
  mariadb_total_s=$(echo "$mariadb_total_s + $mariadb_s" | bc)
  mariadb_total_rows=$((mariadb_total_rows + mariadb_loaded))
done
# The run as a whole: each side's rows over its time in all rounds. The rounds alternate,
# so both sides meet this machine's slow and fast spells alike; a single round's ratio
# swings with them.
printf 'all rounds: kista %s rows/s, MariaDB %s rows/s, ratio %.2f\n' \
  "$(rate "$kista_total_rows" "$kista_total_s")" "$(rate "$mariadb_total_rows" "$mariadb_total_s")" \
  "$(echo "($kista_total_rows / $kista_total_s) / ($mariadb_total_rows / $mariadb_total_s)" | bc -l)"
