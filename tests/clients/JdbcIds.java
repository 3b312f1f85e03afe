// MariaDB Connector/J and generated ids: every way a JDBC application inserts rows and reads back the
// ids they got. Run once against a table with `id BIGINT AUTO_INCREMENT` on MariaDB directly and
// once through idgate against the same table without AUTO_INCREMENT (idgate generates the ids): the
// transcripts must be identical.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcIds HOST PORT USER PASSWORD DATABASE sequence
//        java -cp mariadb-java-client.jar:<classes> JdbcIds HOST PORT USER PASSWORD DATABASE concurrent THREADS ROWS
// `sequence` works on table jdbc_ids (id, v VARCHAR(40) NOT NULL); `concurrent` on jdbc_conc (same
// columns). Exits non-zero on any unexpected exception.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

public class JdbcIds {
    static String host, port, user, password, database;

    static Connection open(String options) throws SQLException {
        String url = "jdbc:mariadb://" + host + ":" + port + "/" + database + (options.isEmpty() ? "" : "?" + options);
        return DriverManager.getConnection(url, user, password);
    }

    static void out(String s) {
        System.out.println(s);
    }

    static String msg(SQLException e) {
        return String.valueOf(e.getMessage()).replaceAll("\\(conn=\\d+\\) ", "").replace('\n', ' ');
    }

    static List<Long> keyList(Statement s) throws SQLException {
        List<Long> ks = new ArrayList<>();
        try (ResultSet rs = s.getGeneratedKeys()) {
            while (rs.next()) {
                ks.add(rs.getLong(1));
            }
        }
        return ks;
    }

    static void keys(String what, Statement s) throws SQLException {
        out(what + " keys: " + keyList(s));
    }

    /** A long key list in short: size, first, last and whether it is one consecutive run. */
    static String summary(List<Long> ks) {
        boolean consecutive = true;
        for (int i = 1; i < ks.size(); i++) {
            consecutive = consecutive && ks.get(i) == ks.get(i - 1) + 1;
        }
        return "size=" + ks.size() + (ks.isEmpty() ? "" : " first=" + ks.get(0) + " last=" + ks.get(ks.size() - 1))
                + " consecutive=" + consecutive;
    }

    static long scalar(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static void lastInsertId(String what, Connection c) throws SQLException {
        out(what + " LAST_INSERT_ID()=" + scalar(c, "SELECT LAST_INSERT_ID()"));
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 6) {
            System.err.println("usage: JdbcIds HOST PORT USER PASSWORD DATABASE sequence|concurrent [THREADS ROWS]");
            System.exit(2);
        }
        host = args[0];
        port = args[1];
        user = args[2];
        password = args[3];
        database = args[4];
        try {
            if (args[5].equals("sequence")) {
                section("client-prep", "");
                section("rewrite", "rewriteBatchedStatements=true");
                section("server-prep", "useServerPrepStmts=true");
                section("server-prep-nobulk", "useServerPrepStmts=true&useBulkStmts=false");
                explicitIds();
                readBack();
                upserts();
            } else if (args[5].equals("concurrent")) {
                concurrent(Integer.parseInt(args[6]), Integer.parseInt(args[7]));
            } else {
                System.err.println("unknown mode " + args[5]);
                System.exit(2);
            }
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        out("done");
    }

    /** Every INSERT form that generates ids, on one connection opened with `options`. */
    static void section(String m, String options) throws SQLException {
        try (Connection c = open(options)) {
            try (Statement s = c.createStatement()) {
                out(m + " stmt single count: " + s.executeUpdate("INSERT INTO jdbc_ids (v) VALUES ('" + m + " stmt single')", Statement.RETURN_GENERATED_KEYS));
                keys(m + " stmt single", s);
                lastInsertId(m + " stmt single", c);
                out(m + " stmt multi count: " + s.executeUpdate("INSERT INTO jdbc_ids (v) VALUES ('" + m + " a'), ('" + m + " b'), ('" + m + " c')", Statement.RETURN_GENERATED_KEYS));
                keys(m + " stmt multi", s);
                lastInsertId(m + " stmt multi", c);
                out(m + " stmt id NULL and 0 count: " + s.executeUpdate("INSERT INTO jdbc_ids (id, v) VALUES (NULL, '" + m + " null'), (0, '" + m + " zero')", Statement.RETURN_GENERATED_KEYS));
                keys(m + " stmt id NULL and 0", s);
                out(m + " stmt execute: " + s.execute("INSERT INTO jdbc_ids (v) VALUES ('" + m + " execute')", Statement.RETURN_GENERATED_KEYS) + " count=" + s.getUpdateCount());
                keys(m + " stmt execute", s);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                ps.setString(1, m + " prep single");
                out(m + " prep single count: " + ps.executeUpdate());
                keys(m + " prep single", ps);
                ps.setString(1, m + " prep single again");
                out(m + " prep single again count: " + ps.executeUpdate());
                keys(m + " prep single again", ps);
                lastInsertId(m + " prep single", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (v) VALUES (?), (?), (?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 1; i <= 3; i++) {
                    ps.setString(i, m + " prep multi " + i);
                }
                out(m + " prep multi count: " + ps.executeUpdate());
                keys(m + " prep multi", ps);
                lastInsertId(m + " prep multi", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (id, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                ps.setNull(1, Types.BIGINT);
                ps.setString(2, m + " prep setNull");
                out(m + " prep setNull count: " + ps.executeUpdate());
                keys(m + " prep setNull", ps);
                lastInsertId(m + " prep setNull", c);
                ps.setLong(1, 0);
                ps.setString(2, m + " prep setLong(0)");
                out(m + " prep setLong(0) count: " + ps.executeUpdate());
                keys(m + " prep setLong(0)", ps);
                lastInsertId(m + " prep setLong(0)", c);
                ps.setObject(1, null);
                ps.setString(2, m + " prep setObject(null)");
                out(m + " prep setObject(null) count: " + ps.executeUpdate());
                keys(m + " prep setObject(null)", ps);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (id, v) VALUES (?, ?), (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                ps.setLong(1, 0);
                ps.setString(2, m + " prep pair zero");
                ps.setNull(3, Types.BIGINT);
                ps.setString(4, m + " prep pair null");
                out(m + " prep pair NULL and 0 count: " + ps.executeUpdate());
                keys(m + " prep pair NULL and 0", ps);
                lastInsertId(m + " prep pair NULL and 0", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 1; i <= 5; i++) {
                    ps.setString(1, m + " batch " + i);
                    ps.addBatch();
                }
                out(m + " prep batch counts: " + Arrays.toString(ps.executeBatch()));
                keys(m + " prep batch", ps);
                lastInsertId(m + " prep batch", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (id, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 1; i <= 4; i++) {
                    if (i % 2 == 1) {
                        ps.setNull(1, Types.BIGINT);
                    } else {
                        ps.setLong(1, 0);
                    }
                    ps.setString(2, m + " batch id " + (i % 2 == 1 ? "null " : "zero ") + i);
                    ps.addBatch();
                }
                out(m + " prep batch NULL/0 counts: " + Arrays.toString(ps.executeBatch()));
                keys(m + " prep batch NULL/0", ps);
                lastInsertId(m + " prep batch NULL/0", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 1; i <= 120; i++) {
                    ps.setString(1, m + " big batch " + i);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                int sum = 0;
                for (int n : counts) {
                    sum += n;
                }
                out(m + " prep big batch counts: n=" + counts.length + " sum=" + sum + " distinct=" + new HashSet<>(intList(counts)));
                out(m + " prep big batch keys: " + summary(keyList(ps)));
                lastInsertId(m + " prep big batch", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (v) VALUES (?)")) {
                for (int i = 1; i <= 3; i++) {
                    ps.setString(1, m + " batch without keys " + i);
                    ps.addBatch();
                }
                out(m + " prep batch without keys counts: " + Arrays.toString(ps.executeBatch()));
                lastInsertId(m + " prep batch without keys", c);
            }
            try (Statement s = c.createStatement()) {
                s.addBatch("INSERT INTO jdbc_ids (v) VALUES ('" + m + " stmt batch 1')");
                s.addBatch("INSERT INTO jdbc_ids (v) VALUES ('" + m + " stmt batch 2a'), ('" + m + " stmt batch 2b')");
                s.addBatch("INSERT INTO jdbc_ids (id, v) VALUES (NULL, '" + m + " stmt batch 3')");
                s.addBatch("INSERT INTO jdbc_ids (id, v) VALUES (0, '" + m + " stmt batch 4')");
                s.addBatch("UPDATE jdbc_ids SET v = v WHERE id < 0");
                out(m + " stmt batch counts: " + Arrays.toString(s.executeBatch()));
                keys(m + " stmt batch", s);
                lastInsertId(m + " stmt batch", c);
            }
            lastInsertId(m + " end", c);
        }
    }

    static List<Integer> intList(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int x : a) {
            l.add(x);
        }
        return l;
    }

    /** Explicit ids are kept; they come last (idgate's generator does not move past them). */
    static void explicitIds() throws SQLException {
        try (Connection c = open("")) {
            lastInsertId("explicit before", c);
            try (Statement s = c.createStatement()) {
                out("explicit stmt count: " + s.executeUpdate("INSERT INTO jdbc_ids (id, v) VALUES (100000, 'explicit stmt')", Statement.RETURN_GENERATED_KEYS));
                keys("explicit stmt", s);
                lastInsertId("explicit stmt", c);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (id, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                ps.setLong(1, 100001);
                ps.setString(2, "explicit prep");
                out("explicit prep count: " + ps.executeUpdate());
                keys("explicit prep", ps);
                lastInsertId("explicit prep", c);
                ps.setLong(1, 100001);
                ps.setString(2, "explicit duplicate");
                try {
                    ps.executeUpdate();
                    out("explicit duplicate: no error");
                } catch (SQLException e) {
                    out("explicit duplicate: code=" + e.getErrorCode() + " sqlstate=" + e.getSQLState() + " message=" + msg(e));
                }
            }
        }
        try (Connection c = open("useServerPrepStmts=true");
                PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (id, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
            ps.setLong(1, 100002);
            ps.setString(2, "explicit server-prep");
            out("explicit server-prep count: " + ps.executeUpdate());
            keys("explicit server-prep", ps);
            lastInsertId("explicit server-prep", c);
        }
        try (Connection c = open("rewriteBatchedStatements=true");
                PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_ids (id, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
            for (long id = 100003; id <= 100005; id++) {
                ps.setLong(1, id);
                ps.setString(2, "explicit batch " + id);
                ps.addBatch();
            }
            out("explicit batch counts: " + Arrays.toString(ps.executeBatch()));
            keys("explicit batch", ps);
            lastInsertId("explicit batch", c);
        }
    }

    /** The row an id names (the two sides' ids differ once a row is left out). */
    static String name(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT v FROM jdbc_upserts WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "no row has id " + id;
            }
        }
    }

    /** Generated keys of IGNORE and ON DUPLICATE KEY UPDATE, named by their rows. */
    static void upsertKeys(String what, Connection c, int count, List<Long> ks, boolean all) throws SQLException {
        String first = ks.isEmpty() ? "none" : name(c, ks.get(0));
        String more = all ? " keys=" + ks.size() + " last insert id=" + name(c, scalar(c, "SELECT LAST_INSERT_ID()")) : "";
        out("upsert " + what + ": count=" + count + " first key=" + first + more);
    }

    static void upserts() throws SQLException {
        try (Connection c = open(""); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO jdbc_upserts (v) VALUES ('a'), ('b')");
            int n = s.executeUpdate("INSERT IGNORE INTO jdbc_upserts (v) VALUES ('a'), ('c'), ('d')", Statement.RETURN_GENERATED_KEYS);
            upsertKeys("ignore first left out", c, n, keyList(s), true);
            n = s.executeUpdate("INSERT IGNORE INTO jdbc_upserts (v) VALUES ('a'), ('b')", Statement.RETURN_GENERATED_KEYS);
            upsertKeys("ignore all left out", c, n, keyList(s), true);
            n = s.executeUpdate("INSERT INTO jdbc_upserts (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n", Statement.RETURN_GENERATED_KEYS);
            upsertKeys("unchanged", c, n, keyList(s), true);
            n = s.executeUpdate("INSERT INTO jdbc_upserts (v) VALUES ('e') ON DUPLICATE KEY UPDATE n = n", Statement.RETURN_GENERATED_KEYS);
            upsertKeys("new row", c, n, keyList(s), true);
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO jdbc_upserts (v) VALUES (?) ON DUPLICATE KEY UPDATE n = COALESCE(n, 0) + 1", Statement.RETURN_GENERATED_KEYS)) {
                ps.setString(1, "b");
                n = ps.executeUpdate();
                // Connector/J makes a key per counted row from the insert id: only the first is the row's.
                upsertKeys("prepared update", c, n, keyList(ps), false);
                ps.setString(1, "f");
                n = ps.executeUpdate();
                upsertKeys("prepared new row", c, n, keyList(ps), true);
            }
        }
    }

    static void readBack() throws SQLException {
        try (Connection c = open("");
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT id, v FROM jdbc_ids ORDER BY id")) {
            int n = 0;
            while (rs.next()) {
                n++;
                out("row " + rs.getLong(1) + " " + rs.getString(2));
            }
            out("rows: " + n);
        }
    }

    /**
     * THREADS threads insert ROWS rows each, in four styles; every key Connector/J reports must be
     * the id of the row it inserted (checked by reading all rows back) and no key may repeat.
     */
    static void concurrent(int threads, int rows) throws Exception {
        Map<Long, String> reported = new ConcurrentHashMap<>();
        List<Long> duplicates = new ArrayList<>();
        Throwable[] failures = new Throwable[threads];
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int me = t;
            ts[t] = new Thread(() -> {
                try {
                    long t0 = System.nanoTime();
                    List<Long> dups = insertRows(me, rows, reported);
                    System.err.println("thread " + me + " took " + (System.nanoTime() - t0) / 1000000 + " ms");
                    synchronized (duplicates) {
                        duplicates.addAll(dups);
                    }
                } catch (Throwable e) {
                    failures[me] = e;
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        for (Throwable f : failures) {
            if (f != null) {
                throw new RuntimeException(f);
            }
        }
        long sum = 0;
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (long k : reported.keySet()) {
            sum += k;
            min = Math.min(min, k);
            max = Math.max(max, k);
        }
        out("concurrent keys reported=" + reported.size() + " duplicates=" + duplicates.size());
        out("concurrent keys min=" + min + " max=" + max + " sum=" + sum);
        int matching = 0;
        int stored = 0;
        try (Connection c = open("");
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT id, v FROM jdbc_conc")) {
            while (rs.next()) {
                stored++;
                if (rs.getString(2).equals(reported.get(rs.getLong(1)))) {
                    matching++;
                }
            }
        }
        out("concurrent rows stored=" + stored + " matching their reported keys=" + matching);
    }

    static List<Long> insertRows(int t, int rows, Map<Long, String> reported) throws SQLException {
        List<Long> dups = new ArrayList<>();
        String style;
        String options;
        switch (t % 4) {
            case 0:
                style = "rewritten batches";
                options = "rewriteBatchedStatements=true";
                break;
            case 1:
                style = "client-prep single rows";
                options = "";
                break;
            case 2:
                style = "server-prep single rows";
                options = "useServerPrepStmts=true";
                break;
            default:
                style = "batches";
                options = "";
                break;
        }
        try (Connection c = open(options);
                PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_conc (id, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
            boolean batched = t % 4 == 0 || t % 4 == 3;
            List<String> pending = new ArrayList<>();
            for (int i = 0; i < rows; i++) {
                String v = "t" + t + " r" + i;
                if (i % 3 == 0) {
                    ps.setNull(1, Types.BIGINT);
                } else {
                    ps.setLong(1, 0);
                }
                ps.setString(2, v);
                if (batched) {
                    ps.addBatch();
                    pending.add(v);
                    if (pending.size() == 100 || i == rows - 1) {
                        ps.executeBatch();
                        record(keyList(ps), pending, reported, dups, style);
                        pending.clear();
                    }
                } else {
                    ps.executeUpdate();
                    record(keyList(ps), List.of(v), reported, dups, style);
                }
            }
        }
        return dups;
    }

    static void record(List<Long> keys, List<String> values, Map<Long, String> reported, List<Long> dups, String style) {
        if (keys.size() != values.size()) {
            throw new IllegalStateException(style + ": " + keys.size() + " keys for " + values.size() + " rows");
        }
        for (int i = 0; i < keys.size(); i++) {
            if (reported.putIfAbsent(keys.get(i), values.get(i)) != null) {
                dups.add(keys.get(i));
            }
        }
    }
}
