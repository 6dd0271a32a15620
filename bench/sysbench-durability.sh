#!/usr/bin/env bash
# sysbench oltp_write_only and oltp_insert at THREADS threads against `kista up` and
# Debian's MariaDB (InnoDB) in the same run, in two pairings of like durability:
#   default: Kista's default commit (in memory on every replica, on disk within a global
#            checkpoint interval) against MariaDB innodb_flush_log_at_trx_commit=2
#            (written at commit, synced once a second);
#   durable: `kista up --durable-commits` (each commit confirmed once on disk on every
#            replica) against MariaDB innodb_flush_log_at_trx_commit=1 (synced at commit).
# Each point runs on one server, then the other; ROUNDS repeats the whole for the spread.
#   bench/sysbench-durability.sh [SECONDS_PER_POINT=30] [TABLE_SIZE=100000] [THREADS=16] [ROUNDS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
table_size=${2:-100000}
threads=${3:-16}
rounds=${4:-2}
bench_name=sysbench-durability
source bench/sql-lib.sh

printf '%-6s %-8s %-16s %-8s %10s %10s %8s %8s\n' round pairing workload server tps qps p95_ms ignored
for round in $(seq 1 "$rounds"); do
  for pairing in default durable; do
    if [ $pairing = default ]; then start_kista 2G; start_mariadb 2
    else start_kista 2G --durable-commits; start_mariadb 1; fi
    sb_prepare "$kista_port" "$table_size"; sb_prepare "$mariadb_port" "$table_size"
    for workload in oltp_write_only oltp_insert; do
      for server in kista mariadb; do
        port=$kista_port
        [ $server = mariadb ] && port=$mariadb_port
        sb "$port" "$workload" run --tables=4 --table-size="$table_size" --threads="$threads" \
          --time="$seconds" > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
        read -r tps qps p95 ignored < <(summary < "$dir/run.log")
        printf '%-6s %-8s %-16s %-8s %10s %10s %8s %8s\n' "$round" "$pairing" "$workload" "$server" "$tps" "$qps" "$p95" "$ignored"
      done
    done
    stop_kista; stop_mariadb
  done
done
