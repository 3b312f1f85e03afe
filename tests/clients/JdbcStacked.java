// Stacked queries from MariaDB Connector/J with allowMultiQueries=false (the default: no
// CLIENT_MULTI_STATEMENTS) and =true, against MariaDB directly or through idgate. `orders` is a
// table whose ids idgate generates; `victim` a plain table. Prints one line per observation, never
// a generated id, so both transcripts can be compared.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcStacked HOST PORT USER PASSWORD DATABASE

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class JdbcStacked {
    static String host, port, user, password, database;

    static Connection open(String options) throws SQLException {
        String url = "jdbc:mariadb://" + host + ":" + port + "/" + database + "?" + options;
        return DriverManager.getConnection(url, user, password);
    }

    static void out(String s) {
        System.out.println(s);
    }

    static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static String state(Connection c) throws SQLException {
        return "victim rows " + count(c, "SELECT COUNT(*) FROM victim") + ", stacked orders "
                + count(c, "SELECT COUNT(*) FROM orders WHERE note LIKE 'jstk%'");
    }

    static void reset(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS victim");
            s.execute("CREATE TABLE victim (v INT)");
            s.execute("INSERT INTO victim VALUES (1), (2)");
            s.execute("DELETE FROM orders WHERE note LIKE 'jstk%'");
        }
    }

    /** Runs `sql` as one Statement.execute and describes every result it gave. */
    static String attempt(Connection c, String sql) {
        try (Statement s = c.createStatement()) {
            boolean rs = s.execute(sql);
            StringBuilder b = new StringBuilder("ran:");
            while (true) {
                if (rs) {
                    try (ResultSet r = s.getResultSet()) {
                        int n = 0;
                        while (r.next()) {
                            n++;
                        }
                        b.append(" rows=").append(n);
                    }
                } else {
                    int u = s.getUpdateCount();
                    if (u == -1) {
                        break;
                    }
                    b.append(" update=").append(u);
                }
                rs = s.getMoreResults();
            }
            return b.toString();
        } catch (SQLException e) {
            return "error " + e.getErrorCode() + " " + e.getSQLState() + ": " + e.getMessage().replaceAll("\\(conn=\\d+\\) ", "");
        }
    }

    static String attemptPrepared(Connection c, String sql) {
        try (PreparedStatement p = c.prepareStatement(sql)) {
            p.execute();
            return "ran";
        } catch (SQLException e) {
            return "error " + e.getErrorCode() + " " + e.getSQLState() + ": " + e.getMessage().replaceAll("\\(conn=\\d+\\) ", "");
        }
    }

    public static void main(String[] a) throws Exception {
        host = a[0];
        port = a[1];
        user = a[2];
        password = a[3];
        database = a[4];
        String[] attacks = {
            "SELECT 1; DROP TABLE victim",
            "SELECT COUNT(*) FROM orders; DROP TABLE victim",
            "INSERT INTO orders (note) VALUES ('jstk1'); DROP TABLE victim",
            "INSERT INTO orders (note) VALUES ('jstk2'); INSERT INTO orders (note) VALUES ('jstk3')",
            "SELECT NEXTVAL(seq); DROP TABLE victim",
        };
        try (Connection c = open("allowMultiQueries=false")) {
            reset(c);
            for (String sql : attacks) {
                out("[no multi] " + sql);
                out("  -> " + attempt(c, sql));
                out("  " + state(c));
            }
            for (String sql : attacks) {
                out("[no multi server-prepared] " + sql);
                try (Connection p = open("allowMultiQueries=false&useServerPrepStmts=true")) {
                    out("  -> " + attemptPrepared(p, sql));
                }
                out("  " + state(c));
            }
        }
        try (Connection c = open("allowMultiQueries=true")) {
            reset(c);
            String[] batches = {
                "INSERT INTO orders (note) VALUES ('jstk1'); SELECT COUNT(*) FROM orders WHERE note = 'jstk1'",
                "SELECT 1; INSERT INTO orders (note) VALUES ('jstk2'), ('jstk3'); INSERT INTO victim VALUES (3)",
                "INSERT INTO victim VALUES (4); SELECT COUNT(*) FROM victim",
            };
            for (String sql : batches) {
                out("[multi] " + sql);
                out("  -> " + attempt(c, sql));
                out("  " + state(c));
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE victim");
            }
        }
        out("done");
    }
}
