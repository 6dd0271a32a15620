# Shared by the cluster benchmarks: start `kista mgmd` and data nodes on free ports.
# Source it from the repository root after setting `bench_name`: it builds kista (`$kista`;
# KISTA=path runs that binary instead, e.g. an earlier build to compare with), makes a
# scratch directory (`$dir`) and kills what it started, and removes `$dir`, on exit.

if [ -z "${KISTA:-}" ]; then cargo build --release -q -p kista; fi
kista=${KISTA:-target/release/kista}
dir=$(mktemp -d "/tmp/kista-$bench_name.XXXXXX")
pids=()
cleanup() { for pid in "${pids[@]:-}"; do kill -9 "$pid" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_ready() { # log file
  for _ in $(seq 1 200); do grep -q "ready" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "not ready: $1" >&2; cat "$1" >&2; return 1
}

# start_cluster DATA_NODES REPLICAS HEARTBEAT_MS: sets mgm (HOST:PORT), mgmd_pid,
# node_pids[], node_ports[]. DATAD_ARGS: extra `kista datad` options. REDO_LOG (e.g. 256M, 0 for none) sets each node's REDO log;
# unset, the configuration's default; DATA_MEMORY (default 256M) each node's data memory.
# Each node's data directory is under $dir.
start_cluster() {
  local nodes=$1 replicas=$2 heartbeat_ms=$3 mgm_port redo_line=""
  mgm_port=$(free_port)
  mgm="127.0.0.1:$mgm_port"
  node_pids=(); node_ports=()
  if [ -n "${REDO_LOG:-}" ]; then redo_line="redo_log = \"$REDO_LOG\""; fi
  printf '[cluster]\nreplicas = %s\ndata_memory = "%s"\nheartbeat_interval_ms = %s\nheartbeat_misses_max = 3\n%s\n[mgmd]\nport = %s\ndata_dir = "%s"\n' \
    "$replicas" "${DATA_MEMORY:-256M}" "$heartbeat_ms" "$redo_line" "$mgm_port" "$dir/mgmd" > "$dir/cluster.toml"
  for id in $(seq 1 "$nodes"); do
    node_ports[id]=$(free_port)
    printf '[[data_node]]\nhost = "127.0.0.1"\nport = %s\ndata_dir = "%s"\n' \
      "${node_ports[id]}" "$dir/node-$id" >> "$dir/cluster.toml"
  done
  $kista mgmd --config "$dir/cluster.toml" > "$dir/mgmd.log" 2>&1 & mgmd_pid=$!
  pids=("$mgmd_pid")
  wait_ready "$dir/mgmd.log"
  for id in $(seq 1 "$nodes"); do
    # shellcheck disable=SC2086 # DATAD_ARGS: extra options, split on spaces
    $kista datad --mgm "127.0.0.1:$mgm_port" --node-id "$id" ${DATAD_ARGS:-} > "$dir/n$id.log" 2>&1 &
    node_pids[id]=$!; pids+=("${node_pids[id]}")
  done
  for id in $(seq 1 "$nodes"); do wait_ready "$dir/n$id.log"; done
}

stop_cluster() {
  for pid in "${pids[@]:-}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

# now_ms: the time in milliseconds. state_of NODE: its state in `kista mgm -e show`
# ("started", "not connected", ...). wait_state NODE STATE LIMIT_S: waits until NODE is
# in STATE, failing the benchmark after LIMIT_S seconds.
now_ms() { date +%s%3N; }
state_of() { # node -> its state in `show`
  $kista mgm --mgm "$mgm" -e show | awk -v id="$1" '$1 == id && $2 == "data" { s = $3; if ($4 == "connected") s = s " " $4; print s }'
}
wait_state() { # node state limit_s
  local deadline=$(( $(date +%s) + $3 ))
  until [ "$(state_of "$1")" = "$2" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "node $1 not $2 after $3 s" >&2; exit 1; }
    sleep 0.05
  done
}

# SQL on the cluster, for the benchmarks that need rows of a real table (needs `mysql`).
# start_sql: a `kista sql` front end (sql_port). sql ARGS: the mysql client on it.
# load_rows ROWS: creates b.t (id BIGINT PRIMARY KEY, v BIGINT, pad VARCHAR(100)) and
# inserts ROWS rows (v = 0), 1,000 per INSERT. update_rows COUNT: v = v + 1 for ids 0 to
# COUNT - 1, 1,000 per UPDATE.
start_sql() {
  command -v mysql >/dev/null || { echo "needs mysql: apt-get install mariadb-client" >&2; exit 2; }
  sql_port=$(free_port)
  $kista sql --mgm "$mgm" --port "$sql_port" > "$dir/sql.log" 2>&1 & pids+=($!)
  wait_ready "$dir/sql.log"
}
sql() { mysql -h 127.0.0.1 -P "$sql_port" -u root -N -B "$@"; }
load_rows() { # rows
  sql -e "CREATE DATABASE b; CREATE TABLE b.t (id BIGINT PRIMARY KEY, v BIGINT, pad VARCHAR(100))"
  python3 - "$1" <<'PY' | sql
import sys
rows, batch = int(sys.argv[1]), 1000
pad = "x" * 100
for start in range(0, rows, batch):
    values = ",".join(f"({i},0,'{pad}')" for i in range(start, min(rows, start + batch)))
    print(f"INSERT INTO b.t VALUES {values};")
PY
}
update_rows() { # count
  local start
  for start in $(seq 0 1000 $(( $1 - 1 ))); do
    echo "UPDATE b.t SET v = v + 1 WHERE id >= $start AND id < $(( start + 1000 < $1 ? start + 1000 : $1 ));"
  done | sql
}

# start_node_under_callgrind DATA_MEMORY REDO_LOG OUT: a management server and one data
# node (one replica) whose process runs under callgrind, writing OUT.N; sets mgm and node
# (the data node's pid). Zero its counters (`callgrind_control -z $node`) once the load's
# set-up is done, and read them with callgrind_node_total.
start_node_under_callgrind() {
  local mgm_port node_port
  mgm_port=$(free_port); node_port=$(free_port); mgm="127.0.0.1:$mgm_port"
  rm -rf "$dir/node-1" "$dir/mgmd"
  rm -f "$3" "$3".[0-9]*
  printf '[cluster]\nreplicas = 1\ndata_memory = "%s"\nheartbeat_interval_ms = 1500\nredo_log = "%s"\n[mgmd]\nport = %s\ndata_dir = "%s"\n[[data_node]]\nhost = "127.0.0.1"\nport = %s\ndata_dir = "%s"\n' \
    "$1" "$2" "$mgm_port" "$dir/mgmd" "$node_port" "$dir/node-1" > "$dir/cluster.toml"
  $kista mgmd --config "$dir/cluster.toml" > "$dir/mgmd.log" 2>&1 &
  pids=($!)
  wait_ready "$dir/mgmd.log"
  valgrind --tool=callgrind --cache-sim="${CALLGRIND_CACHE_SIM:-no}" --callgrind-out-file="$3" \
    $kista datad --mgm "$mgm" --node-id 1 > "$dir/n1.log" 2>&1 &
  node=$!
  pids+=("$node")
  for _ in $(seq 1 1200); do [ "$(state_of 1)" = started ] && break; sleep 0.1; done
}

# callgrind_node_total OUT: dumps the data node's counters (OUT.N) and prints the
# instructions it executed since they were zeroed.
callgrind_node_total() {
  callgrind_control -d "$node" > /dev/null 2>&1
  for _ in $(seq 100); do ls "$1".[0-9]* > /dev/null 2>&1 && break; sleep 0.1; done
  sleep 1
  grep -h '^summary:' "$1".[0-9]* | awk '{s += $2} END {print s}'
}

# callgrind_node_misses OUT: after callgrind_node_total, with CALLGRIND_CACHE_SIM=yes: the
# data reads and writes that missed callgrind's simulated last-level cache (its model of
# this machine's), a stable count where time is noisy. Prefetch hints are not simulated.
callgrind_node_misses() {
  grep -h '^events:' "$1".[0-9]* | head -1 | grep -q DLmr || { echo "no cache simulation"; return; }
  grep -h '^summary:' "$1".[0-9]* | awk '{r += $9; w += $10} END {print r + w}'
}
