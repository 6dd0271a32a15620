#!/usr/bin/env bash
# sysbench oltp_point_select, oltp_read_only and oltp_read_write at 1, 16 and 64 threads
# against `kista up` and against Debian's MariaDB (InnoDB) on this machine, in the same
# run, each point on one server then the other. Also the CPU time `kista sql` spends per
# point select (its user + system time over the 16-thread point-select run / queries).
#   bench/sysbench-vs-mariadb.sh [SECONDS_PER_POINT=30] [TABLE_SIZE=100000]
# WORKLOADS="oltp_point_select" runs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
table_size=${2:-100000}
bench_name=sysbench-vs-mariadb
source bench/sql-lib.sh

start_kista 2G
start_mariadb
for port in "$kista_port" "$mariadb_port"; do
  mysql -h 127.0.0.1 -P "$port" -u root -e "CREATE DATABASE sbtest"
  sb "$port" oltp_read_write prepare --tables=4 --table-size="$table_size" > "$dir/prepare.log" 2>&1 \
    || { cat "$dir/prepare.log"; exit 1; }
done
printf '%-18s %7s %-8s %10s %10s %8s %8s\n' workload threads server tps qps p95_ms ignored
for workload in ${WORKLOADS:-oltp_point_select oltp_read_only oltp_read_write}; do
  for threads in 1 16 64; do
    for server in kista mariadb; do
      port=$kista_port
      [ $server = mariadb ] && port=$mariadb_port
      cpu_before=$(cpu_seconds "$kista_sql_pid")
      sb "$port" "$workload" run --tables=4 --table-size="$table_size" --threads="$threads" \
        --time="$seconds" > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
      cpu_after=$(cpu_seconds "$kista_sql_pid")
      read -r tps qps p95 ignored < <(summary < "$dir/run.log")
      printf '%-18s %7s %-8s %10s %10s %8s %8s\n' "$workload" "$threads" "$server" "$tps" "$qps" "$p95" "$ignored"
      if [ $server = kista ] && [ $workload = oltp_point_select ] && [ "$threads" = 16 ]; then
        queries=$(awk '/queries:/ && /per sec/ { print $2 }' "$dir/run.log")
        sql_cpu_us=$(awk -v a="$cpu_before" -v b="$cpu_after" -v q="$queries" 'BEGIN { printf "%.1f", (b - a) * 1e6 / q }')
      fi
    done
  done
done
echo "kista sql CPU per point select (16 threads): ${sql_cpu_us} us"
