// Stored programs through MariaDB Connector/J against idgate (or MariaDB directly): a cursor loop
// with an OUT parameter through CallableStatement, a compound statement with a cursor, a
// procedure ending in an error after a result, and SIGNAL, with client- and server-side prepared
// statements. Prints one line per observation so that the transcripts can be compared.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcStoredPrograms HOST PORT USER PASSWORD DATABASE

import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

public class JdbcStoredPrograms {
    static void out(String s) {
        System.out.println(s);
    }

    /** Every result set of a statement that was just executed, as text, until the end or an error. */
    static String results(Statement st, boolean hasResult) throws SQLException {
        List<String> sets = new ArrayList<>();
        while (true) {
            if (hasResult) {
                try (ResultSet rs = st.getResultSet()) {
                    List<String> rows = new ArrayList<>();
                    while (rs.next()) {
                        rows.add(rs.getString(1));
                    }
                    sets.add(rows.toString());
                }
            } else if (st.getUpdateCount() == -1) {
                return sets.toString();
            }
            hasResult = st.getMoreResults();
        }
    }

    static void run(Connection c, String label) throws SQLException {
        try (Statement st = c.createStatement()) {
            boolean r = st.execute(
                "BEGIN NOT ATOMIC DECLARE va INT; "
                    + "DECLARE cur CURSOR FOR SELECT a FROM spj_t WHERE a > 1 ORDER BY a; "
                    + "OPEN cur; FETCH cur INTO va; SELECT va; CLOSE cur; END");
            out(label + " compound: " + results(st, r));
        }
        try (CallableStatement cs = c.prepareCall("{call spj_loop(?)}")) {
            cs.registerOutParameter(1, Types.INTEGER);
            boolean r = cs.execute();
            out(label + " loop results: " + results(cs, r));
            out(label + " loop total: " + cs.getInt(1));
        }
        for (String sql : new String[] {"CALL spj_error()", "CALL spj_signal(-1)", "CALL spj_signal(3)"}) {
            try (Statement st = c.createStatement()) {
                boolean r = st.execute(sql);
                out(label + " " + sql + ": " + results(st, r));
            } catch (SQLException e) {
                out(label + " " + sql + ": error code=" + e.getErrorCode() + " sqlstate=" + e.getSQLState());
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 40 + 2")) {
                rs.next();
                out(label + " usable after " + sql + ": " + rs.getInt(1));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String base = "jdbc:mariadb://" + args[0] + ":" + args[1] + "/" + args[4];
        try (Connection c = DriverManager.getConnection(base, args[2], args[3]);
             Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS spj_t");
            st.execute("CREATE TABLE spj_t (a INT)");
            st.execute("INSERT INTO spj_t VALUES (1), (2), (3)");
            st.execute("DROP PROCEDURE IF EXISTS spj_loop");
            st.execute("CREATE PROCEDURE spj_loop(OUT total INT) BEGIN "
                + "DECLARE done INT DEFAULT 0; DECLARE va INT; "
                + "DECLARE cur CURSOR FOR SELECT a FROM spj_t ORDER BY a; "
                + "DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1; "
                + "SET total = 0; OPEN cur; "
                + "l: LOOP FETCH cur INTO va; IF done THEN LEAVE l; END IF; "
                + "SET total = total + va; SELECT va AS row_seen; END LOOP; CLOSE cur; END");
            st.execute("DROP PROCEDURE IF EXISTS spj_error");
            st.execute("CREATE PROCEDURE spj_error() BEGIN DECLARE va INT; "
                + "DECLARE cur CURSOR FOR SELECT a FROM spj_t; "
                + "OPEN cur; FETCH cur INTO va; SELECT va AS before_error; CLOSE cur; "
                + "FETCH cur INTO va; END");
            st.execute("DROP PROCEDURE IF EXISTS spj_signal");
            st.execute("CREATE PROCEDURE spj_signal(v INT) BEGIN IF v < 0 THEN "
                + "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'negative value', MYSQL_ERRNO = 4025; "
                + "END IF; SELECT v AS accepted; END");
        }
        try (Connection c = DriverManager.getConnection(base, args[2], args[3])) {
            run(c, "client-prep");
        }
        try (Connection c = DriverManager.getConnection(base + "?useServerPrepStmts=true", args[2], args[3])) {
            run(c, "server-prep");
        }
        out("done");
    }
}
