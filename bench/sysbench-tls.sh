#!/usr/bin/env bash
# TLS against plain on the same front end: `kista up --tls` and sysbench oltp_point_select
# at THREADS threads for SECONDS per point, 4 tables x ROWS rows, each point plain and over
# TLS (`--mysql-ssl=on`) one after the other, plain first in odd rounds and TLS first in
# even ones. Prints tps and the front end's CPU per statement (from /proc).
#
#   bench/sysbench-tls.sh [THREADS=16] [SECONDS=20] [ROWS=100000] [ROUNDS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
bench_name=sysbench-tls
source bench/sql-lib.sh
threads=${1:-16} seconds=${2:-20} rows=${3:-100000} rounds=${4:-2}

start_kista 1G --tls
sb_prepare "$kista_port" "$rows"
# sysbench's --mysql-ssl=on reads cacert.pem, client-cert.pem and client-key.pem from where
# it runs (the front end asks for no client certificate: any valid pair serves).
tls_files="$dir/kista/tls"
mkdir -p "$dir/sysbench-tls"
cp "$tls_files/ca.pem" "$dir/sysbench-tls/cacert.pem"
cp "$tls_files/sql.pem" "$dir/sysbench-tls/client-cert.pem"
cp "$tls_files/sql.key" "$dir/sysbench-tls/client-key.pem"

# point MODE: one point, plain or tls: "MODE TPS tps, US us front end CPU per statement".
point() {
  local ssl=off before after tps
  [ "$1" = tls ] && ssl=on
  before=$(cpu_seconds "$kista_sql_pid")
  tps=$(cd "$dir/sysbench-tls" && sb "$kista_port" oltp_point_select run --tables=4 \
    --table-size="$rows" --threads="$threads" --time="$seconds" --mysql-ssl="$ssl" \
    | summary | cut -d' ' -f1)
  after=$(cpu_seconds "$kista_sql_pid")
  awk -v mode="$1" -v tps="$tps" -v cpu="$(echo "$after - $before" | bc)" -v s="$seconds" \
    'BEGIN { printf "%-5s %8.0f tps, %5.1f us front end CPU per statement\n", mode, tps, cpu * 1e6 / (tps * s) }'
}

for round in $(seq 1 "$rounds"); do
  order="plain tls"
  ((round % 2)) || order="tls plain"
  for mode in $order; do echo "round $round: $(point "$mode")"; done
done
