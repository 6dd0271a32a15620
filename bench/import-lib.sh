# The import benchmarks' file and table, shared by sql-lib.sh and callgrind-import.sh.
# import_rows_file ROWS FILE: the import benchmarks' CSV file (`id,k,"name i",amount,datetime`)
# of ROWS rows, and their table in `import_table` (t, with a secondary index on k).
import_table="CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, name VARCHAR(40), amount DECIMAL(10,2), created DATETIME, KEY by_k (k))"
import_rows_file() {
  python3 - "$1" "$2" <<'PY'
import sys
rows, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    for i in range(1, rows + 1):
        f.write(f'{i},{i * 7 % 100000},"name {i}",{i % 1000}.25,2024-01-{1 + i % 28:02d} 10:00:00\n')
PY
}
