#!/usr/bin/env bash
# What a foreign key costs a write (`kista up`, 2 data nodes, 16 sysbench threads in
# autocommit, bench/foreign-keys.lua): child INSERTs into a table with a foreign key
# (each also reads its parent under a shared lock) against the same table without one,
# and parent DELETEs of rows no child references (each also searches the child index on
# every partition, which holds the children of parents 1..1000) against a table no
# foreign key references. The two sides alternate,
# ROUNDS times (default 2), SECONDS each (default 20); prints rows/s per run and the
# ratios of each round.
#   bench/foreign-keys.sh [SECONDS] [ROUNDS]
set -euo pipefail
bench_name=foreign-keys
source "$(dirname "$0")/sql-lib.sh"
seconds=${1:-20}
rounds=${2:-2}
script="$(cd "$(dirname "$0")" && pwd)/foreign-keys.lua"

start_kista 4G --redo-log 2G
trap 'tail -n 30 "$dir"/kista/logs/*.log >&2' ERR
sql() { mysql -h 127.0.0.1 -P "$kista_port" -u root fk -e "$1"; }
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE fk"
sql "CREATE TABLE digits (d INT PRIMARY KEY)"
sql "INSERT INTO digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)"
numbers="SELECT a.d*100000 + b.d*10000 + c.d*1000 + e.d*100 + f.d*10 + g.d + 1 \
  FROM digits a, digits b, digits c, digits e, digits f, digits g"
for kind in plain referenced; do
  sql "CREATE TABLE parents_$kind (id INT PRIMARY KEY, note VARCHAR(20))"
  sql "INSERT INTO parents_$kind (id) $numbers"
done
sql "CREATE TABLE children_plain (id INT PRIMARY KEY, parent INT, KEY (parent))"
sql "CREATE TABLE children_fk (id INT PRIMARY KEY, parent INT, \
  FOREIGN KEY (parent) REFERENCES parents_referenced (id))"
echo "tables ready: parents of 1,000,000 rows each"

run() { # TABLE ACTION FIRST_ID
  sysbench "$script" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$kista_port" \
    --mysql-user=root --mysql-db=fk --threads=16 --time="$seconds" --table="$1" \
    --action="$2" --first="$3" --parents=1000 run 2>&1 \
    | awk -v seconds="$seconds" '/total number of events/ { printf "%.0f", $5 / seconds }'
}
for round in $(seq 1 "$rounds"); do
  plain=$(run children_plain insert 0)
  fk=$(run children_fk insert 0)
  echo "round $round insert child: plain $plain/s, with foreign key $fk/s, ratio $(echo "scale=3; $fk / $plain" | bc)"
  # Parents no child references (children reference 1..1000), ids no round before
  # reached.
  first=$(( 1000 + (round - 1) * 400000 ))
  plain=$(run parents_plain delete "$first")
  fk=$(run parents_referenced delete "$first")
  echo "round $round delete parent: plain $plain/s, referenced $fk/s, ratio $(echo "scale=3; $fk / $plain" | bc)"
  sql "DELETE FROM children_plain; DELETE FROM children_fk" >/dev/null
done
