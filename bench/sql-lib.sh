# Shared by the SQL benchmarks: start `kista up` (with its SQL front end) on free ports,
# and run sysbench against a MySQL-protocol server. Source it from the repository root
# after setting `bench_name`; it builds kista, makes a scratch directory (`$dir`), and on
# exit stops what it started and removes `$dir`. `KISTA_CLUSTER=path` runs the cluster of
# another build (a front end can read only the table definitions of its own format).

for tool in sysbench mysql; do
  command -v "$tool" >/dev/null || { echo "needs $tool: apt-get install sysbench mariadb-client" >&2; exit 2; }
done
cargo build --release -q -p kista
kista=${KISTA_CLUSTER:-target/release/kista}
dir=$(mktemp -d "/tmp/kista-$bench_name.XXXXXX")
up_pid=""
mariadb_pid=""
cleanup() {
  [ -n "$up_pid" ] && kill -TERM "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
  [ -n "$mariadb_pid" ] && kill -TERM "$mariadb_pid" 2>/dev/null && wait "$mariadb_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_kista DATA_MEMORY [kista up options...]: sets kista_port (SQL), kista_sql_pid and
# mgm_port. KISTA_UP_ARGS adds options (e.g. KISTA_UP_ARGS="--touch-memory").
start_kista() {
  local data_memory=$1; shift
  mgm_port=$(free_port); kista_port=$(free_port)
  $kista up --dir "$dir/kista" --mgm-port "$mgm_port" --data-port 0 --sql-port "$kista_port" \
    --data-memory "$data_memory" "$@" ${KISTA_UP_ARGS:-} > "$dir/up.log" 2>&1 & up_pid=$!
  for _ in $(seq 1 600); do grep -q "kista up: ready" "$dir/up.log" && break; sleep 0.1; done
  grep -q "kista up: ready" "$dir/up.log" || { cat "$dir/up.log" >&2; exit 1; }
  # The cluster's key, for the kista commands run against it from here on.
  export KISTA_KEY_FILE="$dir/kista/cluster.key"
  kista_sql_pid=$(pgrep -f "kista sql --mgm 127.0.0.1:$mgm_port" | head -1)
}

# start_mariadb [FLUSH_AT_COMMIT=0]: Debian's mariadb-server with InnoDB, its data in
# memory-sized buffers, `innodb_flush_log_at_trx_commit` FLUSH_AT_COMMIT (0: its log is
# written and synced about once a second; 2: written at each commit, synced once a second;
# 1: synced at each commit); sets mariadb_port.
start_mariadb() {
  local flush_at_commit=${1:-0}
  command -v mariadbd >/dev/null || PATH=$PATH:/usr/sbin
  command -v mariadbd >/dev/null || { echo "needs mariadb-server" >&2; exit 2; }
  mariadb_port=$(free_port)
  mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$dir/mariadb" \
    --auth-root-authentication-method=normal > "$dir/mariadb-install.log" 2>&1
  mariadbd --no-defaults --user="$(id -un)" --datadir="$dir/mariadb" --port="$mariadb_port" \
    --bind-address=127.0.0.1 --socket="$dir/mariadb.sock" --innodb-buffer-pool-size=2G \
    --innodb-flush-log-at-trx-commit="$flush_at_commit" --max-connections=500 --skip-log-bin \
    > "$dir/mariadb.log" 2>&1 & mariadb_pid=$!
  for _ in $(seq 1 300); do mysql -h 127.0.0.1 -P "$mariadb_port" -u root -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
  mysql -h 127.0.0.1 -P "$mariadb_port" -u root -e "SELECT 1" >/dev/null || { cat "$dir/mariadb.log" >&2; exit 1; }
}

# stop_kista, stop_mariadb: stop the server and remove its data.
stop_kista() { kill -TERM "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null; up_pid=""; rm -rf "$dir/kista"; }
stop_mariadb() { kill -TERM "$mariadb_pid" 2>/dev/null && wait "$mariadb_pid" 2>/dev/null; mariadb_pid=""; rm -rf "$dir/mariadb"; }

source "$(dirname "${BASH_SOURCE[0]}")/sysbench-lib.sh"

# CPU seconds (user + system) a process has used.
cpu_seconds() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; }

# summary: one line "tps qps p95 ignored" from a sysbench report on stdin.
summary() {
  awk '/transactions:/ { gsub(/\(/, "", $3); tps = $3 }
       /queries:/ && /per sec/ { gsub(/\(/, "", $3); qps = $3 }
       /95th percentile:/ { p95 = $3 }
       /ignored errors:/ { ignored = $3 }
       END { printf "%s %s %s %s\n", tps, qps, p95, ignored }'
}

source "$(dirname "${BASH_SOURCE[0]}")/import-lib.sh"
