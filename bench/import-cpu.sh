#!/usr/bin/env bash
# Where the CPU of `kista import` goes: ROWS rows of the import benchmark's file loaded into
# `kista up` (two data nodes, two replicas; its SQL front end idle), with each process's
# user and system CPU seconds (from /proc) over the import, the wall time, and each data
# node's page faults and context switches (all its threads) over the import and resident
# memory after it.
#
#   bench/import-cpu.sh [ROWS] [THREADS]
#
# IMPORT_ARGS adds options to `kista import` (e.g. IMPORT_ARGS="--batch-rows 2000").
set -euo pipefail
bench_name=import-cpu
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
threads=${2:-8}

file="$dir/rows.csv"
import_rows_file "$rows" "$file"
table=$import_table
# Data memory touched at start and sized to the load, as in bench/import.sh.
start_kista 1G --touch-memory
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE imp; USE imp; $table"
ticks=$(getconf CLK_TCK)
cpu() { awk -v t="$ticks" '{ printf "%.2f %.2f %d", $14 / t, $15 / t, $10 }' "/proc/$1/stat"; }
# Context switches of all a process's threads (a thread that sleeps and is woken: two).
switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ { n += $2 } END { print n }'; }
nodes=$(pgrep -f "kista datad --mgm 127.0.0.1:$mgm_port" | tr '\n' ' ')
declare -A before
for pid in $nodes; do before[$pid]="$(cpu "$pid") $(switches "$pid")"; done
TIMEFORMAT="import: %U s user, %S s system; wall %R s"
time $kista import --mgm "127.0.0.1:$mgm_port" imp.t "$file" \
  --threads "$threads" --quiet --rejects "$dir/rejects" --state "$dir/state" ${IMPORT_ARGS:-}
for pid in $nodes; do
  read -r u0 s0 f0 c0 <<< "${before[$pid]}"; read -r u1 s1 f1 c1 <<< "$(cpu "$pid") $(switches "$pid")"
  printf 'data node (pid %s): %.2f s user, %.2f s system, %d page faults, %d context switches, %d MB resident\n' \
    "$pid" "$(echo "$u1 - $u0" | bc)" "$(echo "$s1 - $s0" | bc)" "$((f1 - f0))" "$((c1 - c0))" \
    "$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$pid/status")"
done
