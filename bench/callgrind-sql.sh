#!/usr/bin/env bash
# Instructions the SQL front end executes per statement, counted by callgrind: the stable
# figure for the SQL path, where throughput on this machine drifts by tens of percent.
# Starts `kista up` (its data nodes and tables), then each build's `kista sql` under
# callgrind on the same cluster, and runs sysbench WORKLOAD with one thread for SMALL and
# for LARGE events; the difference in instructions over the difference in events cancels
# start-up and shutdown.
#   bench/callgrind-sql.sh WORKLOAD SMALL LARGE KISTA_BINARY...
# e.g. bench/callgrind-sql.sh oltp_point_select 2000 8000 /tmp/before/kista target/release/kista
# SB_EXTRA adds sysbench options (SB_EXTRA=--db-ps-mode=disable: statements as text).
set -euo pipefail
cd "$(dirname "$0")/.."
(($# >= 4)) || { sed -n 2,9p "$0" >&2; exit 2; }
workload=$1 small=$2 large=$3
shift 3
bench_name=callgrind-sql
source bench/sql-lib.sh
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }

start_kista 512M
sb_prepare "$kista_port" 10000

# instructions BINARY EVENTS: the front end's instructions for a run of EVENTS statements.
instructions() {
  local port out
  port=$(free_port)
  out="$dir/callgrind.out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" sql \
    --mgm "127.0.0.1:$mgm_port" --port "$port" > "$dir/sql.log" 2>&1 & local sql_pid=$!
  for _ in $(seq 1 600); do mysql -h 127.0.0.1 -P "$port" -u root -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
  sb "$port" "$workload" run --tables=4 --table-size=10000 --threads=1 --events="$2" \
    --time=0 ${SB_EXTRA:-} > "$dir/run.log" 2>&1 || { cat "$dir/run.log" "$dir/sql.log" >&2; exit 1; }
  kill -TERM "$sql_pid"; wait "$sql_pid" 2>/dev/null || true
  sed -n 's/^summary: \([0-9]*\).*/\1/p' "$out"
  [ -n "${KEEP_CALLGRIND:-}" ] && cp "$out" "$KEEP_CALLGRIND.$(basename "$1")" ; rm -f "$out"
}

printf '%-40s %14s %14s %12s\n' build "I($small)" "I($large)" "per event"
for build in "$@"; do
  low=$(instructions "$build" "$small")
  high=$(instructions "$build" "$large")
  printf '%-40s %14s %14s %12s\n' "$build" "$low" "$high" $(( (high - low) / (large - small) ))
done
