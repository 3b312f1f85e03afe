-- Point SELECTs by a unique email (scripts/bench-unique), values the INSERT runs wrote: through
-- a key held across shards by a lookup the lookup names the one shard to ask; without one every
-- shard is asked.
sysbench.cmdline.options = {
    table = {"table to read", "uniq_plain"},
    tag = {"the INSERT run's prefix whose values are read", "r"},
    writers = {"threads of that INSERT run", 1},
    rows = {"values per writer to pick from", 1000},
}

function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
end

function event()
    local rs = con:query(string.format(
        "SELECT id, email, name FROM %s WHERE email = '%s-%d-%d@example.com'",
        sysbench.opt.table, sysbench.opt.tag,
        sysbench.rand.uniform(0, sysbench.opt.writers - 1),
        sysbench.rand.uniform(1, sysbench.opt.rows)))
    if rs.nrows ~= 1 then
        error(string.format("expected one row from %s, got %d", sysbench.opt.table, rs.nrows))
    end
end

function thread_done()
    con:disconnect()
end
