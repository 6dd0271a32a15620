#!/usr/bin/env bash
# Where a data node's instructions go during writes, with durability on and off: one data
# node (one replica) runs under callgrind while `kista bench --phases insert,update`
# (outside valgrind) writes KEYS keys. Counters are zeroed once the node is started and
# dumped when the bench ends; instructions per operation are the node's total over
# 2 x KEYS. With a REDO log of LOG, local checkpoints run during the phases (each starts
# once a quarter of the log is in use). The profiles stay in OUT for callgrind_annotate.
#
# Usage: bench/callgrind-writes.sh [KEYS] [LOG] [OUT]   (defaults 100000, 32M, /tmp/callgrind-writes)
set -euo pipefail
keys=${1:-100000}
log=${2:-32M}
out=${3:-/tmp/callgrind-writes}
cd "$(dirname "$0")/.."
bench_name=callgrind-writes
source bench/cluster-lib.sh
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
mkdir -p "$out"

profile() { # redo-log name
  local mgm_port node_port
  mgm_port=$(free_port); node_port=$(free_port); mgm="127.0.0.1:$mgm_port"
  rm -rf "$dir/node-1" "$dir/mgmd"
  printf '[cluster]\nreplicas = 1\ndata_memory = "512M"\nheartbeat_interval_ms = 1500\nredo_log = "%s"\n[mgmd]\nport = %s\ndata_dir = "%s"\n[[data_node]]\nhost = "127.0.0.1"\nport = %s\ndata_dir = "%s"\n' \
    "$1" "$mgm_port" "$dir/mgmd" "$node_port" "$dir/node-1" > "$dir/cluster.toml"
  $kista mgmd --config "$dir/cluster.toml" > "$dir/mgmd.log" 2>&1 &
  pids=($!)
  wait_ready "$dir/mgmd.log"
  rm -f "$out/$2".*
  valgrind --tool=callgrind --callgrind-out-file="$out/$2" \
    $kista datad --mgm "$mgm" --node-id 1 > "$dir/n1.log" 2>&1 &
  local node=$!
  pids+=($node)
  for _ in $(seq 1 1200); do [ "$(state_of 1)" = started ] && break; sleep 0.1; done
  callgrind_control -z $node > /dev/null 2>&1
  $kista bench --mgm "$mgm" --keys "$keys" --threads 2 --parallel 32 \
      --phases insert,update > "$out/$2.bench" 2>&1
  callgrind_control -d $node > /dev/null 2>&1
  for _ in $(seq 100); do ls "$out/$2".* > /dev/null 2>&1 && break; sleep 0.1; done
  sleep 1
  local total
  total=$(grep -h '^summary:' "$out/$2".[0-9]* | awk '{s += $2} END {print s}')
  echo "$2 (redo_log $1): $total instructions, $(( total / (2 * keys) )) per operation"
  grep -a "checkpoint" "$dir/n1.log" | tail -3 || true
  stop_cluster
}

profile 0 off
profile "$log" on
