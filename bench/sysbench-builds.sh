#!/usr/bin/env bash
# sysbench write workloads on two or more builds of Kista and on MariaDB in the same run,
# so a change to the SQL or write path is measured against the build before it and
# against the peer under the same drift of the machine. Each round starts every server
# afresh (Kista default commits against MariaDB innodb_flush_log_at_trx_commit=2) and runs
# each workload on each in turn.
#   bench/sysbench-builds.sh SECONDS TABLE_SIZE THREADS ROUNDS KISTA_BINARY...
# e.g. cp target/release/kista /tmp/before/kista; (change, build); (each binary named kista)
#      bench/sysbench-builds.sh 20 100000 16 2 /tmp/before/kista target/release/kista
# WORKLOADS="oltp_insert" runs only those (default: oltp_insert oltp_write_only).
# DURABLE=1 pairs durable commits instead: kista up --durable-commits against
# innodb_flush_log_at_trx_commit=1.
set -euo pipefail
cd "$(dirname "$0")/.."
(($# >= 5)) || { sed -n 2,12p "$0" >&2; exit 2; }
seconds=$1 table_size=$2 threads=$3 rounds=$4
shift 4
builds=("$@")
bench_name=sysbench-builds
source bench/sql-lib.sh
flush_at_commit=2 kista_options=()
if [ "${DURABLE:-0}" = 1 ]; then flush_at_commit=1 kista_options=(--durable-commits); fi

run_point() { # round workload server-name port
  sb "$4" "$2" run --tables=4 --table-size="$table_size" --threads="$threads" \
    --time="$seconds" > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
  read -r tps qps p95 ignored < <(summary < "$dir/run.log")
  printf '%-6s %-16s %-28s %10s %10s %8s %8s\n' "$1" "$2" "$3" "$tps" "$qps" "$p95" "$ignored"
}

printf '%-6s %-16s %-28s %10s %10s %8s %8s\n' round workload server tps qps p95_ms ignored
for round in $(seq 1 "$rounds"); do
  for workload in ${WORKLOADS:-oltp_insert oltp_write_only}; do
    start_mariadb "$flush_at_commit"; sb_prepare "$mariadb_port" "$table_size"
    run_point "$round" "$workload" mariadb "$mariadb_port"
    stop_mariadb
    for build in "${builds[@]}"; do
      kista=$build
      start_kista 2G "${kista_options[@]}"; sb_prepare "$kista_port" "$table_size"
      run_point "$round" "$workload" "$build" "$kista_port"
      stop_kista
    done
  done
done
