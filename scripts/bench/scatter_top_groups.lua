-- sysbench workload for scripts/bench-load: the groups with the most rows in a range of about
-- 2,000 k values (GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT 10). Ordered by an aggregate, no
-- shard can stop early: over shards every shard sends all its groups of the range and idgate
-- folds them before writing any; directly it is one indexed range read and a grouping.
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
        "SELECT k, COUNT(*), MAX(id) FROM sbtest%d WHERE k BETWEEN %d AND %d GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT 10",
        t, k, k + 2000))
end

function thread_done()
    con:disconnect()
end
