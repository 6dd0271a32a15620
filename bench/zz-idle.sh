#!/usr/bin/env bash
set -euo pipefail
bench_name=zz
source bench/sql-lib.sh
file="$dir/rows.csv"
import_rows_file 1000000 "$file"
start_kista 2G
n=0; for t in $THREADS_LIST; do n=$((n+1));
mysql -h 127.0.0.1 -P "$kista_port" -u root -e "CREATE DATABASE imp$n; USE imp$n; $import_table"
s0=$(awk '/^cpu / {print $2+$3+$4, $5+$6}' /proc/stat)
t0=$(date +%s.%N)
$kista import --mgm "127.0.0.1:$mgm_port" imp$n.t "$file" --threads $t --quiet --rejects "$dir/rejects$t" --state "$dir/state$t" >/dev/null
t1=$(date +%s.%N)
s1=$(awk '/^cpu / {print $2+$3+$4, $5+$6}' /proc/stat)
echo "$s0 $s1" | awk -v t=$t -v w=$(echo "$t1 - $t0" | bc) '{b=$3-$1; i=$4-$2; printf "threads %d: wall %.2f s, busy %.0f%%\n", t, w, 100*b/(b+i)}'
done
