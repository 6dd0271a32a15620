# sysbench against a MySQL-protocol server; sourced by sql-lib.sh and the benchmarks that
# start their cluster with cluster-lib.sh. Needs `$dir` (a scratch directory).

# sb PORT WORKLOAD COMMAND [options...]: sysbench against the server on PORT, database sbtest.
sb() {
  local port=$1 workload=$2 command=$3; shift 3
  sysbench "$workload" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
    --mysql-user=root --mysql-db=sbtest "$@" "$command"
}

# sb_prepare PORT TABLE_SIZE: database sbtest with sysbench's 4 tables of TABLE_SIZE rows.
sb_prepare() {
  mysql -h 127.0.0.1 -P "$1" -u root -e "CREATE DATABASE sbtest"
  sb "$1" oltp_write_only prepare --tables=4 --table-size="$2" > "$dir/prepare.log" 2>&1 \
    || { cat "$dir/prepare.log"; exit 1; }
}
