-- sysbench workload for scripts/bench-load: a query on a non-sharding column with ORDER BY …
-- LIMIT 10. Over shards it reaches every shard and idgate merges the sorted answers; directly it
-- is one indexed range read. Uses the sbtest tables oltp_common prepares (index on k).
sysbench.cmdline.options = {
    tables = { "Number of tables", 1 },
    table_size = { "Number of rows per table", 10000 },
}

function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
end

function event()
    local t = sysbench.rand.uniform(1, sysbench.opt.tables)
    local k = sysbench.rand.default(1, sysbench.opt.table_size)
    con:query(string.format(
        "SELECT id, k, c FROM sbtest%d WHERE k >= %d ORDER BY k, id LIMIT 10", t, k))
end

function thread_done()
    con:disconnect()
end
