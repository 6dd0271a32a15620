#!/usr/bin/env bash
# ALTER TABLE while sysbench runs oltp_read_write with 16 threads on one table of ROWS rows
# (default 1,000,000; `kista up`, 2 data nodes). After a quiet stretch, ADD COLUMN, ADD
# INDEX, a copying ALTER (MODIFY pad's type: every row copied into a new table) and ADD
# UNIQUE run one after the other, each timed. Prints each ALTER's time, the seconds in
# which sysbench's per-second report shows the ALTERs (tps, p99 latency), and sysbench's
# summary: its maximum latency is the longest stall any transaction saw. A transaction
# open when the copy begins or switches that uses the table again is refused with 1412
# (retry, as NDB's 241), which sysbench counts among its ignored errors.
#   bench/alter-under-load.sh [ROWS] [SECONDS]
set -euo pipefail
bench_name=alter-under-load
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
seconds=${2:-150}

start_kista 4G --redo-log 2G
# On a failure, what the cluster's processes said (sql-lib.sh removes their logs on exit).
trap 'tail -n 30 "$dir"/kista/logs/*.log "$dir"/run.log >&2' ERR
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE sbtest"
sb "$kista_port" oltp_read_write prepare --tables=1 --table-size="$rows" > "$dir/prepare.log" 2>&1 \
  || { cat "$dir/prepare.log"; exit 1; }
echo "prepared: $rows rows"

sb "$kista_port" oltp_read_write run --tables=1 --table-size="$rows" --threads=16 \
  --time="$seconds" --report-interval=1 --percentile=99 \
  --mysql-ignore-errors=1213,1020,1205,1412 > "$dir/run.log" 2>&1 &
sysbench_pid=$!
start=$(date +%s.%N)
at() { printf '%6.1f' "$(echo "$(date +%s.%N) - $start" | bc)"; }
alter() { # STATEMENT
  local began
  began=$(at)
  local t0=$(date +%s.%N)
  mysql -h 127.0.0.1 -P "$kista_port" -u root sbtest -e "$1"
  local t1=$(date +%s.%N)
  printf 'ALTER at %s s took %6.2f s: %s\n' "$began" "$(echo "$t1 - $t0" | bc)" "$1"
}
sleep 15
alter "ALTER TABLE sbtest1 ADD COLUMN note VARCHAR(20) DEFAULT 'none'"
sleep 10
alter "ALTER TABLE sbtest1 ADD INDEX by_c (c)"
sleep 10
alter "ALTER TABLE sbtest1 MODIFY pad VARCHAR(80) NOT NULL DEFAULT ''"
sleep 10
alter "ALTER TABLE sbtest1 ADD UNIQUE KEY u_id_k (id, k)"
wait "$sysbench_pid" || true
echo "per-second reports (time, tps, p99 ms):"
awk '/^\[ [0-9]+s \]/ { gsub(/s$/, "", $2); printf "%s %s %s\n", $2, $7, $14 }' "$dir/run.log" \
  | tr '\n' ';'
echo
grep -E "transactions:|queries:|ignored errors:|min:|avg:|max:|99th percentile:" "$dir/run.log"
mysql -h 127.0.0.1 -P "$kista_port" -u root sbtest -e \
  "SELECT COUNT(*), SUM(note = 'none') FROM sbtest1; SHOW INDEX FROM sbtest1"
grep -h "ALTER TABLE" "$dir"/kista/logs/*.log || true
