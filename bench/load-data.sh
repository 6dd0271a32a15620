#!/usr/bin/env bash
# `LOAD DATA INFILE` through the SQL front end: Kista (two data nodes, two replicas; the
# front end reads the file on its own host) against MariaDB's (InnoDB, log flushed about
# once a second) on the import benchmarks' CSV file, ROUNDS times each, alternating. Each
# round loads into a database of its own on both sides and drops none (as bench/import.sh).
# With `local`, `LOAD DATA LOCAL INFILE` on both sides: the mysql client sends the file.
# With `auto`, the file without its first column into the table whose `id` is
# AUTO_INCREMENT, the column list naming the others (an application's usual load).
#
#   bench/load-data.sh [ROWS] [ROUNDS] [local|auto]
set -euo pipefail
bench_name=load-data
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
rounds=${2:-2}
mode=${3:-}

file="$dir/rows.csv"
import_rows_file "$rows" "$file"
echo "file: $rows rows, $(du -m "$file" | cut -f1) MB"
load_local=""; client_options=""; columns=""; table=$import_table
case "$mode" in
  "") ;;
  local) load_local="LOCAL"; client_options="--local-infile=1" ;;
  auto)
    cut -d, -f2- "$file" > "$dir/no-id.csv"; file="$dir/no-id.csv"
    columns=" (k, name, amount, created)"
    table=${import_table/id INT PRIMARY KEY/id INT AUTO_INCREMENT PRIMARY KEY}
    ;;
  *) echo "the third argument is 'local', 'auto' or nothing, not '$mode'" >&2; exit 2 ;;
esac
# The rounds load millions of rows in all: a REDO log of NDB's default size (1G), as
# docs/operations.md ("Large loads") advises for them; the default 256M fills in the
# third round, which then waits for local checkpoints. Data memory touched at start and
# sized to the rounds, as in bench/import.sh.
start_kista 1G --redo-log 1G --touch-memory
start_mariadb 0
load="LOAD DATA $load_local INFILE '$file' INTO TABLE t FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'$columns"
timed_load() {
  local port=$1 db=$2 t0 t1
  mysql -h 127.0.0.1 -P "$port" -u root -e "CREATE DATABASE $db; USE $db; $table"
  t0=$(date +%s.%N)
  mysql $client_options -h 127.0.0.1 -P "$port" -u root "$db" -e "$load"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
for round in $(seq 1 "$rounds"); do
  kista_s=$(timed_load "$kista_port" "ld$round")
  mariadb_s=$(timed_load "$mariadb_port" "ld$round")
  loaded=$(mysql -h 127.0.0.1 -P "$kista_port" -u root -N -e "SELECT COUNT(*), MAX(id) FROM ld$round.t")
  printf 'round %s: Kista LOAD DATA%s %s rows (count, max id) in %.2f s; MariaDB in %.2f s; ratio %.2f\n' \
    "$round" "${mode:+ $mode}" "$loaded" "$kista_s" "$mariadb_s" \
    "$(echo "$mariadb_s / $kista_s" | bc -l)"
done
