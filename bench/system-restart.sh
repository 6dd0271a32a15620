#!/usr/bin/env bash
# System restart time: a two-node cluster (two replicas, the default 256M REDO log) is
# loaded with ROWS records of RECORD_SIZE payload bytes by `kista bench --phases insert
# --keep-table` (each node holds every row); after a few global checkpoints every data node
# is killed (kill -9: a crash, so the restore replays REDO after the last local
# checkpoint), both are started again, and the start is timed from the processes' start
# until `kista mgm -e show` reports both started. The master's log says what was restored.
#
# Usage: bench/system-restart.sh [ROWS=1000000] [RECORD_SIZE=1000]   (DATA_MEMORY, default 2G)
set -euo pipefail
rows=${1:-1000000}
record_size=${2:-1000}
cd "$(dirname "$0")/.."
bench_name=system-restart
source bench/cluster-lib.sh

DATA_MEMORY=${DATA_MEMORY:-2G} start_cluster 2 2 200
wait_state 1 started 60; wait_state 2 started 60
load_start_ms=$(now_ms)
$kista bench --mgm "$mgm" --keys "$rows" --record-size "$record_size" --threads 2 \
  --parallel 32 --phases insert --keep-table > "$dir/bench.out" 2> "$dir/bench.err" \
  || { cat "$dir/bench.err" >&2; exit 1; }
echo "$rows rows of $record_size bytes loaded in $(( $(now_ms) - load_start_ms )) ms"
$kista mgm --mgm "$mgm" -e "report memory" || true
sleep 5
du -sh "$dir/node-1/lcp" "$dir/node-1/redo"

kill -9 "${node_pids[1]}" "${node_pids[2]}"
wait "${node_pids[1]}" "${node_pids[2]}" 2>/dev/null || true
wait_state 1 "not connected" 30; wait_state 2 "not connected" 30
# A cold start reads from the disk, not the page cache (as root, or with sudo).
sync
{ echo 3 > /proc/sys/vm/drop_caches || echo 3 | sudo -n tee /proc/sys/vm/drop_caches; } \
  > /dev/null 2>&1 && echo "page cache dropped" || echo "(page cache not dropped: not root)"
started_ms=$(now_ms)
for id in 1 2; do
  $kista datad --mgm "$mgm" --node-id "$id" > "$dir/n$id-again.log" 2>&1 &
  node_pids[id]=$!; pids+=("${node_pids[id]}")
done
wait_state 1 started 600; wait_state 2 started 600
restart_ms=$(( $(now_ms) - started_ms ))
echo "system restart of $rows rows x $record_size bytes: $restart_ms ms (processes' start to both started)"
grep -h "start from disk" "$dir/n1-again.log" "$dir/n2-again.log" | grep -v "to go" || true
