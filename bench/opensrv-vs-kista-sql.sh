#!/usr/bin/env bash
# The MySQL protocol crate question (issue 5): sysbench oltp_point_select at 1, 16 and 64
# threads against `kista sql` (hand-written protocol, a thread per connection) and against
# bench/opensrv-point-select (opensrv-mysql on a 2-worker tokio runtime, the same reads
# through the same native client, answered from the client's callback), both on the same
# `kista up` cluster, alternating. Prints TPS, p95 and the front end's CPU per query.
#   bench/opensrv-vs-kista-sql.sh [SECONDS_PER_POINT=30] [TABLE_SIZE=100000]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
table_size=${2:-100000}
bench_name=opensrv-vs-kista-sql
cargo build --release -q --manifest-path bench/opensrv-point-select/Cargo.toml
source bench/sql-lib.sh

start_kista 2G
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE sbtest"
sb "$kista_port" oltp_point_select prepare --tables=4 --table-size="$table_size" > "$dir/prepare.log" 2>&1 \
  || { cat "$dir/prepare.log"; exit 1; }
opensrv_port=$(free_port)
bench/opensrv-point-select/target/release/opensrv-point-select "127.0.0.1:$mgm_port" "$opensrv_port" \
  > "$dir/opensrv.log" 2>&1 & opensrv_pid=$!
trap 'kill "$opensrv_pid" 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 100); do grep -q ready "$dir/opensrv.log" && break; sleep 0.1; done
grep -q ready "$dir/opensrv.log" || { cat "$dir/opensrv.log" >&2; exit 1; }

printf '%7s %-10s %10s %8s %12s\n' threads front_end tps p95_ms cpu_us_per_q
for threads in 1 16 64; do
  for front_end in kista-sql opensrv; do
    port=$kista_port pid=$kista_sql_pid
    [ $front_end = opensrv ] && port=$opensrv_port pid=$opensrv_pid
    cpu_before=$(cpu_seconds "$pid")
    sb "$port" oltp_point_select run --tables=4 --table-size="$table_size" --threads="$threads" \
      --time="$seconds" > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; exit 1; }
    cpu_after=$(cpu_seconds "$pid")
    read -r tps qps p95 _ < <(summary < "$dir/run.log")
    queries=$(awk '/queries:/ && /per sec/ { print $2 }' "$dir/run.log")
    cpu_us=$(awk -v a="$cpu_before" -v b="$cpu_after" -v q="$queries" 'BEGIN { printf "%.1f", (b - a) * 1e6 / q }')
    printf '%7s %-10s %10s %8s %12s\n' "$threads" "$front_end" "$tps" "$p95" "$cpu_us"
  done
done
