-- sysbench workload for scripts/bench-load: a GROUP BY on a non-sharding column over a range of
-- about 500 k values, ordered by the group key (GROUP BY k ORDER BY k LIMIT 20). Over shards it
-- reaches every shard; ordered by its key, each shard stops after 20 groups and idgate folds
-- those. Directly it is one indexed range read and a grouping.
-- Uses the sbtest tables oltp_common prepares (index on k).
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
        "SELECT k, COUNT(*), MAX(id) FROM sbtest%d WHERE k BETWEEN %d AND %d GROUP BY k ORDER BY k LIMIT 20",
        t, k, k + 500))
end

function thread_done()
    con:disconnect()
end
