-- One-row INSERTs with a new value of a unique key each (scripts/bench-unique): the cost of
-- holding the key across shards through a lookup, against the same insert without one.
sysbench.cmdline.options = {
    table = {"table to insert into", "uniq_plain"},
    tag = {"prefix that keeps this run's values apart from earlier runs'", "r"},
}

function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
    n = 0
end

function event()
    n = n + 1
    con:query(string.format(
        "INSERT INTO %s (email, name) VALUES ('%s-%d-%d@example.com', 'bench')",
        sysbench.opt.table, sysbench.opt.tag, sysbench.tid, n))
end

function thread_done()
    con:disconnect()
end
