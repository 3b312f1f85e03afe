// MariaDB Connector/J doing ordinary CRUD on a sharded schema: users sharded by id, their orders
// sharded by user_id. Run once against MariaDB directly (AUTO_INCREMENT ids, one server) and once
// through idgate (ids generated, rows on two shards): the transcripts must be identical.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcSharded HOST PORT USER PASSWORD DATABASE
// Tables sh_users (id, name VARCHAR(40) NOT NULL, score INT) and sh_orders (id, user_id BIGINT NOT
// NULL, amount DECIMAL(10,2), note VARCHAR(40)) exist and are empty. Exits non-zero on any
// unexpected exception.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class JdbcSharded {
    static String host, port, user, password, database;

    static Connection open(String options) throws SQLException {
        String url = "jdbc:mariadb://" + host + ":" + port + "/" + database + (options.isEmpty() ? "" : "?" + options);
        return DriverManager.getConnection(url, user, password);
    }

    static void out(String s) {
        System.out.println(s);
    }

    static List<Long> keys(Statement s) throws SQLException {
        List<Long> ks = new ArrayList<>();
        try (ResultSet rs = s.getGeneratedKeys()) {
            while (rs.next()) {
                ks.add(rs.getLong(1));
            }
        }
        return ks;
    }

    /** Every row of a result set, one line each, columns separated by `|`. */
    static void rows(String what, ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        int n = md.getColumnCount();
        while (rs.next()) {
            StringBuilder b = new StringBuilder(what).append(':');
            for (int i = 1; i <= n; i++) {
                b.append(i == 1 ? " " : " | ").append(rs.getString(i));
            }
            out(b.toString());
        }
        rs.close();
    }

    static void query(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            rows(sql, s.executeQuery(sql));
        }
    }

    static void crud(Connection c, String mode) throws SQLException {
        List<Long> users = new ArrayList<>();
        try (PreparedStatement p = c.prepareStatement(
                "INSERT INTO sh_users (name, score) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
            for (int i = 0; i < 6; i++) {
                p.setString(1, mode + " user " + i);
                p.setInt(2, i * 7);
                p.executeUpdate();
                users.addAll(keys(p));
            }
        }
        out(mode + " user ids: " + users);
        try (PreparedStatement p = c.prepareStatement(
                "INSERT INTO sh_orders (user_id, amount, note) VALUES (?, ?, ?)", Statement.RETURN_GENERATED_KEYS)) {
            for (long u : users) {
                for (int k = 1; k <= 2; k++) {
                    p.setLong(1, u);
                    p.setBigDecimal(2, new java.math.BigDecimal(u * 10 + k + ".25"));
                    p.setString(3, "order " + k + " of " + u);
                    p.addBatch();
                }
            }
            out(mode + " order batch counts: " + Arrays.toString(p.executeBatch()));
        }
        try (PreparedStatement p = c.prepareStatement("SELECT name, score FROM sh_users WHERE id = ?")) {
            for (long u : users) {
                p.setLong(1, u);
                rows(mode + " user " + u, p.executeQuery());
            }
        }
        try (PreparedStatement p = c.prepareStatement(
                "SELECT id, amount, note FROM sh_orders WHERE user_id = ? ORDER BY id DESC")) {
            p.setLong(1, users.get(3));
            rows(mode + " orders of " + users.get(3), p.executeQuery());
        }
        try (PreparedStatement p = c.prepareStatement("UPDATE sh_users SET score = score + 100 WHERE id = ?")) {
            p.setLong(1, users.get(1));
            out(mode + " update one: " + p.executeUpdate());
        }
        try (Statement s = c.createStatement()) {
            out(mode + " update scattered: "
                    + s.executeUpdate("UPDATE sh_users SET score = score + 1 WHERE name LIKE '" + mode + "%' AND score >= 14"));
            out(mode + " delete one order: "
                    + s.executeUpdate("DELETE FROM sh_orders WHERE user_id = " + users.get(0) + " AND note LIKE 'order 2%'"));
        }
    }

    public static void main(String[] a) throws Exception {
        host = a[0];
        port = a[1];
        user = a[2];
        password = a[3];
        database = a[4];
        try (Connection c = open("")) {
            crud(c, "client-prep");
            query(c, "SELECT id, name, score FROM sh_users ORDER BY id");
            query(c, "SELECT COUNT(*), SUM(amount), MIN(amount), MAX(user_id) FROM sh_orders");
            query(c, "SELECT id, user_id, amount FROM sh_orders ORDER BY amount DESC LIMIT 5");
            query(c, "SELECT user_id, COUNT(*), SUM(amount), AVG(amount) FROM sh_orders GROUP BY user_id HAVING COUNT(*) > 1");
            query(c, "SELECT DISTINCT score % 3 AS m FROM sh_users ORDER BY m DESC LIMIT 2 OFFSET 1");
            query(c, "SELECT note, MIN(amount) FROM sh_orders GROUP BY note ORDER BY note");

            // Transactions touching both shards: a rollback leaves nothing, a commit everything.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO sh_users (name, score) VALUES ('tx rolled back a', 1), ('tx rolled back b', 2)");
                s.executeUpdate("UPDATE sh_users SET score = -1");
                c.rollback();
                s.executeUpdate("INSERT INTO sh_users (name, score) VALUES ('tx committed a', 3), ('tx committed b', 4)",
                        Statement.RETURN_GENERATED_KEYS);
                out("tx committed ids: " + keys(s));
                c.commit();
            }
            c.setAutoCommit(true);
            query(c, "SELECT COUNT(*), SUM(score) FROM sh_users");
            query(c, "SELECT name FROM sh_users WHERE name LIKE 'tx%' ORDER BY id");
        }
        try (Connection c = open("useServerPrepStmts=true")) {
            crud(c, "server-prep");
            try (PreparedStatement p = c.prepareStatement("SELECT id FROM sh_users WHERE id IN (?, ?, ?)")) {
                p.setLong(1, 2);
                p.setLong(2, 3);
                p.setLong(3, 4);
                List<Long> ids = new ArrayList<>();
                try (ResultSet rs = p.executeQuery()) {
                    while (rs.next()) {
                        ids.add(rs.getLong(1));
                    }
                }
                ids.sort(null);
                out("server-prep IN: " + ids);
            }
            try (PreparedStatement p = c.prepareStatement("DELETE FROM sh_users WHERE id = ?")) {
                p.setLong(1, 5);
                out("server-prep delete: " + p.executeUpdate());
            }
        }
        try (Connection c = open("")) {
            query(c, "SELECT id, name, score FROM sh_users ORDER BY id");
            query(c, "SELECT COUNT(*) FROM sh_orders");
        }
        out("done");
    }
}
