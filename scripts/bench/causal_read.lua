-- A session reads its own write (scripts/bench-ha): each event inserts a row, then reads it
-- back by its id. With `reads: replica` the read goes to a replica that has applied the
-- INSERT (idgate reads the session's @@last_gtid, then waits on the replica if it must).
sysbench.cmdline.options = {
    table = {"table to write and read", "causal"},
    run = {"a number of this run, so runs on one table write different ids", 1},
}

function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
    n = 0
end

function event()
    n = n + 1
    local id = (sysbench.opt.run * 1000 + sysbench.tid) * 100000000 + n
    con:query(string.format("INSERT INTO %s (id, v) VALUES (%d, %d)", sysbench.opt.table, id, n))
    local rs = con:query(string.format("SELECT v FROM %s WHERE id = %d", sysbench.opt.table, id))
    if rs.nrows ~= 1 then
        error(string.format("read %d rows of its own write %d", rs.nrows, id))
    end
end

function thread_done()
    con:disconnect()
end
