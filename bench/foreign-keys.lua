-- sysbench script for bench/foreign-keys.sh: each event inserts one child row (`insert`)
-- or deletes one parent row (`delete`) in `--table`, in autocommit. Thread t of T takes
-- the ids first+t+1, first+t+1+T, ... so no two events touch one row.
sysbench.cmdline.options = {
  table = {"table to write", "children"},
  action = {"insert or delete", "insert"},
  parents = {"parent ids to reference (1..parents)", 1000},
  first = {"ids start after this one", 0},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  next_id = sysbench.opt.first + sysbench.tid + 1
end

function event()
  local id = next_id
  next_id = next_id + sysbench.opt.threads
  if sysbench.opt.action == "insert" then
    con:query(string.format("INSERT INTO %s (id, parent) VALUES (%d, %d)",
      sysbench.opt.table, id, (id % sysbench.opt.parents) + 1))
  else
    con:query(string.format("DELETE FROM %s WHERE id = %d", sysbench.opt.table, id))
  end
end

function thread_done()
  con:disconnect()
end
