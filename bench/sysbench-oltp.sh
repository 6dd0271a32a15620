#!/usr/bin/env bash
# Every OLTP workload Debian's sysbench ships, against `kista up`: prepare, run and
# cleanup, 16 threads, 4 tables (select_random_* take one), sysbench's default key
# distribution. Prints one line per workload: TPS, QPS, p95 ms, ignored errors (deadlocks
# and lock wait timeouts, which sysbench retries).
#   [WORKLOADS="oltp_write_only ..."] bench/sysbench-oltp.sh [SECONDS_PER_WORKLOAD=60] [TABLE_SIZE=100000]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
table_size=${2:-100000}
bench_name=sysbench-oltp
source bench/sql-lib.sh

start_kista 2G
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE sbtest"
printf '%-24s %10s %10s %8s %8s\n' workload tps qps p95_ms ignored
workloads=${WORKLOADS:-oltp_point_select oltp_read_only oltp_read_write oltp_write_only \
  oltp_insert oltp_update_index oltp_update_non_index oltp_delete select_random_points \
  select_random_ranges}
for workload in $workloads; do
  tables=4
  case $workload in select_random_*) tables=1 ;; esac
  sb "$kista_port" "$workload" prepare --tables=$tables --table-size="$table_size" > "$dir/prepare.log" 2>&1 \
    || { cat "$dir/prepare.log"; exit 1; }
  sb "$kista_port" "$workload" run --tables=$tables --table-size="$table_size" --threads=16 \
    --time="$seconds" > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
  read -r tps qps p95 ignored < <(summary < "$dir/run.log")
  printf '%-24s %10s %10s %8s %8s\n' "$workload" "$tps" "$qps" "$p95" "$ignored"
  sb "$kista_port" "$workload" cleanup --tables=$tables > /dev/null 2>&1
done
