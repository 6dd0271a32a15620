#!/usr/bin/env bash
# Online backup and restore speed: ROWS rows loaded by `kista import` into a cluster of two
# data nodes (two replicas), then ROUNDS backups (`kista mgm -e "start backup"`, idle
# cluster), then each restored by `kista restore` into a cluster of one data node (one
# replica), the tables dropped between rounds; and one backup under a `kista bench` load
# (its ops/s without and with the backup). Prints each backup's and restore's bytes,
# seconds, MB/s and rows/s. A backup's time includes waiting for its stop GCI to be saved
# (up to two global checkpoint intervals).
#
#   bench/backup-restore.sh [ROWS] [ROUNDS] [THREADS]
set -euo pipefail
bench_name=backup-restore
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-1000000}
rounds=${2:-2}
threads=${3:-8}

file="$dir/rows.csv"
import_rows_file "$rows" "$file"
table=$import_table

start_kista 2G --redo-log 1G
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE imp; USE imp; $table"
$kista import --mgm "127.0.0.1:$mgm_port" imp.t "$file" --threads "$threads" --quiet \
  --rejects "$dir/rejects" --state "$dir/state" > "$dir/import.log"
cat "$dir/import.log"
mb_s() { echo "$1 $2" | awk '{ printf "%.1f", $1 / 1e6 / $2 }'; }
for round in $(seq 1 "$rounds"); do
  t0=$(date +%s.%N)
  answer=$($kista mgm --mgm "127.0.0.1:$mgm_port" -e "start backup")
  t1=$(date +%s.%N)
  seconds=$(echo "$t1 - $t0" | bc)
  backup_rows=$(echo "$answer" | awk '{ print $7 }')
  bytes=$(echo "$answer" | awk '{ print $9 }')
  printf 'backup round %s: %s\n  %s bytes in %.2f s = %s MB/s, %.0f rows/s\n' "$round" "$answer" \
    "$bytes" "$seconds" "$(mb_s "$bytes" "$seconds")" "$(echo "$backup_rows / $seconds" | bc -l)"
done
# A backup while `kista bench` updates and reads 100,000 keys (two threads, 32 transactions
# in flight each): the bench's ops/s without and with the backup, and the backup's speed.
bench_json() {
  $kista bench --mgm "127.0.0.1:$mgm_port" --keys 100000 --duration 10 --phases update,read --json 2>/dev/null
}
cat > "$dir/ops.py" <<'PY'
import json, sys
phases = json.load(sys.stdin)["phases"]
print(", ".join("%s %.0f ops/s" % (name, p["ops_per_sec"]["avg"]) for name, p in phases.items()))
PY
ops() { python3 "$dir/ops.py"; }
echo "under load: without a backup: $(bench_json | ops)"
bench_json > "$dir/loaded.json" & bench_pid=$!
sleep 5
t0=$(date +%s.%N)
answer=$($kista mgm --mgm "127.0.0.1:$mgm_port" -e "start backup")
t1=$(date +%s.%N)
wait "$bench_pid"
seconds=$(echo "$t1 - $t0" | bc)
bytes=$(echo "$answer" | awk '{ print $9 }')
printf 'under load: with a backup: %s\n  %s\n  %s bytes in %.2f s = %s MB/s\n' "$(ops < "$dir/loaded.json")" \
  "$answer" "$bytes" "$seconds" "$(mb_s "$bytes" "$seconds")"
mkdir -p "$dir/backups"
for node in "$dir"/kista/node-*; do cp -r "$node/backup" "$dir/backups/$(basename "$node")"; done
stop_kista

start_kista 2G --data-nodes 1 --replicas 1 --redo-log 1G
for round in $(seq 1 "$rounds"); do
  mysql -h 127.0.0.1 -P "$kista_port" -u root -e "DROP DATABASE IF EXISTS imp"
  $kista restore --mgm "127.0.0.1:$mgm_port" --backup-id "$round" --threads "$threads" --quiet \
    "$dir/backups" | sed "s/^/restore round $round: /"
  echo "  restored rows: $(mysql -h 127.0.0.1 -P "$kista_port" -u root -N -e "SELECT COUNT(*) FROM imp.t")"
done
