#!/usr/bin/env bash
# `LOAD DATA INFILE` through the SQL front end: Kista (two data nodes, two replicas; the
# front end reads the file on its own host) against MariaDB's (InnoDB, log flushed about
# once a second) on the import benchmarks' CSV file, ROUNDS times each, alternating. Each
# round loads into a database of its own on both sides and drops none (as bench/import.sh).
# With `local`, `LOAD DATA LOCAL INFILE` on both sides: the mysql client sends the file.
#
#   bench/load-data.sh [ROWS] [ROUNDS] [local]
set -euo pipefail
bench_name=load-data
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
rounds=${2:-2}
local=${3:-}
case "$local" in
  "") load_local=""; client_options="" ;;
  local) load_local="LOCAL"; client_options="--local-infile=1" ;;
  *) echo "the third argument is 'local' or nothing, not '$local'" >&2; exit 2 ;;
esac

file="$dir/rows.csv"
import_rows_file "$rows" "$file"
echo "file: $rows rows, $(du -m "$file" | cut -f1) MB"
# The rounds load millions of rows in all: a REDO log of NDB's default size (1G), as
# docs/operations.md ("Large loads") advises for them; the default 256M fills in the
# third round, which then waits for local checkpoints. Data memory touched at start and
# sized to the rounds, as in bench/import.sh.
start_kista 1G --redo-log 1G --touch-memory
start_mariadb 0
load="LOAD DATA $load_local INFILE '$file' INTO TABLE t FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"
timed_load() {
  local port=$1 db=$2 t0 t1
  mysql -h 127.0.0.1 -P "$port" -u root -e "CREATE DATABASE $db; USE $db; $import_table"
  t0=$(date +%s.%N)
  mysql $client_options -h 127.0.0.1 -P "$port" -u root "$db" -e "$load"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
for round in $(seq 1 "$rounds"); do
  kista_s=$(timed_load "$kista_port" "ld$round")
  mariadb_s=$(timed_load "$mariadb_port" "ld$round")
  loaded=$(mysql -h 127.0.0.1 -P "$kista_port" -u root -N -e "SELECT COUNT(*) FROM ld$round.t")
  printf 'round %s: Kista LOAD DATA%s %s rows in %.2f s; MariaDB in %.2f s; ratio %.2f\n' \
    "$round" "${load_local:+ $load_local}" "$loaded" "$kista_s" "$mariadb_s" \
    "$(echo "$mariadb_s / $kista_s" | bc -l)"
done
