#!/usr/bin/env bash
# Instructions the importer itself executes per row (the other side of
# bench/callgrind-import.sh, which counts a data node's): `kista up`'s cluster (two data
# nodes) serves while `kista import` of ROWS rows of the import benchmark's file runs under
# callgrind, start to end (connecting and reading the catalog included: ~1% at 100,000
# rows). The profile stays in OUT for callgrind_annotate.
#
#   bench/callgrind-importer.sh [ROWS] [OUT]   (defaults 100000, /tmp/callgrind-importer.out)
set -euo pipefail
bench_name=callgrind-importer
source "$(dirname "$0")/sql-lib.sh"
rows=${1:-100000}
out=${2:-/tmp/callgrind-importer.out}
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
file="$dir/rows.csv"
import_rows_file "$rows" "$file"
start_kista 1G
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE imp1; USE imp1; $import_table"
valgrind --tool=callgrind --callgrind-out-file="$out" $kista import --mgm "127.0.0.1:$mgm_port" \
  imp1.t "$file" --threads 8 --quiet --rejects "$dir/rejects" --state "$dir/state" \
  > "$dir/import.log" 2>&1
total=$(callgrind_annotate "$out" 2>/dev/null | grep "PROGRAM TOTALS" | awk '{print $1}' | tr -d ,)
echo "kista import of $rows rows: $total instructions, $((total / rows)) per row"
