#!/usr/bin/env bash
# How much a partial local checkpoint writes of a table that barely changes: a two-node
# cluster (two replicas, the default 256M REDO log unless REDO_LOG says) holds ROWS rows of
# `b.t (id BIGINT PRIMARY KEY, v BIGINT, pad VARCHAR(100))` written through `kista sql`;
# then the same CHANGED_PERCENT of the rows are updated again and again until node 1 has
# written CHECKPOINTS more local checkpoints. Node 1's log says what each wrote (rows,
# bytes, whole or partial); a whole checkpoint writes every row.
#
# Usage: bench/checkpoint-size.sh [ROWS=1000000] [CHANGED_PERCENT=1] [CHECKPOINTS=4]
set -euo pipefail
rows=${1:-1000000}
changed_percent=${2:-1}
checkpoints=${3:-4}
cd "$(dirname "$0")/.."
bench_name=checkpoint-size
source bench/cluster-lib.sh

written() { grep -c "local checkpoint [0-9]* written" "$dir/n1.log" || true; }

DATA_MEMORY=${DATA_MEMORY:-1G} start_cluster 2 2 200
wait_state 1 started 60; wait_state 2 started 60
start_sql
load_rows "$rows"
echo "$rows rows loaded through SQL"

changed=$(( rows * changed_percent / 100 ))
before=$(written)
rounds=0
while [ $(( $(written) - before )) -lt "$checkpoints" ]; do
  update_rows "$changed"
  rounds=$(( rounds + 1 ))
  [ "$rounds" -lt 2000 ] || { echo "no checkpoint after $rounds rounds" >&2; exit 1; }
done
echo "the same $changed rows ($changed_percent%) updated $rounds times"
echo "node 1's checkpoints (the first of the last $checkpoints may have begun during the load):"
grep -h "local checkpoint [0-9]* written" "$dir/n1.log"
du -sh "$dir/node-1/lcp"
