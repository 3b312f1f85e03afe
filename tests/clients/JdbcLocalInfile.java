// LOAD DATA LOCAL INFILE from MariaDB Connector/J against idgate (or MariaDB directly): prints one
// line per observation so that the transcript through idgate can be compared with the transcript
// of a direct connection.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcLocalInfile HOST PORT USER PASSWORD DATABASE
// Exits non-zero on any unexpected exception.

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class JdbcLocalInfile {
    static String host, port, user, password, database;

    static Connection open(String options) throws SQLException {
        String url = "jdbc:mariadb://" + host + ":" + port + "/" + database + "?" + options;
        return DriverManager.getConnection(url, user, password);
    }

    static void out(String s) {
        System.out.println(s);
    }

    static String contents(Statement st) throws SQLException {
        try (ResultSet rs = st.executeQuery(
                "SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS(',', id, t))), 0) FROM li_j")) {
            rs.next();
            return rs.getLong(1) + " rows, checksum " + rs.getLong(2);
        }
    }

    static String usable(Statement st) throws SQLException {
        try (ResultSet rs = st.executeQuery("SELECT 40 + 2")) {
            rs.next();
            return "usable: " + rs.getInt(1);
        }
    }

    static File rows(int first, int count) throws IOException {
        File f = File.createTempFile("li_j", ".tsv");
        f.deleteOnExit();
        StringBuilder sb = new StringBuilder();
        for (int i = first; i < first + count; i++) {
            sb.append(i).append('\t').append("jdbc row ").append(i).append(" ü").append('\n');
        }
        try (FileOutputStream o = new FileOutputStream(f)) {
            o.write(sb.toString().getBytes(StandardCharsets.UTF_8));
        }
        return f;
    }

    static String load(File f) {
        return "LOAD DATA LOCAL INFILE '" + f.getAbsolutePath() + "' INTO TABLE li_j CHARACTER SET utf8mb4";
    }

    public static void main(String[] args) throws Exception {
        host = args[0];
        port = args[1];
        user = args[2];
        password = args[3];
        database = args[4];
        File many = rows(1, 5000);
        File few = rows(10001, 7);
        try (Connection c = open("allowLocalInfile=true"); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS li_j");
            st.execute("CREATE TABLE li_j (id INT PRIMARY KEY, t VARCHAR(100)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
            out("load count: " + st.executeUpdate(load(many)));
            out("after load: " + contents(st));
            try {
                st.executeUpdate("LOAD DATA LOCAL INFILE '/nonexistent/li_j.tsv' INTO TABLE li_j");
                out("missing file: no error");
            } catch (SQLException e) {
                out("missing file: error sqlstate=" + e.getSQLState());
            }
            out(usable(st));
            c.setAutoCommit(false);
            st.executeUpdate(load(few));
            out("in transaction: " + contents(st));
            c.rollback();
            out("after rollback: " + contents(st));
            st.executeUpdate(load(few));
            c.commit();
            c.setAutoCommit(true);
            out("after commit: " + contents(st));
        }
        try (Connection c = open("allowLocalInfile=false"); Statement st = c.createStatement()) {
            try {
                st.executeUpdate(load(few));
                out("without allowLocalInfile: no error");
            } catch (SQLException e) {
                out("without allowLocalInfile: error code=" + e.getErrorCode() + " sqlstate=" + e.getSQLState());
            }
            out(usable(st));
            out("unchanged: " + contents(st));
        }
        out("done");
    }
}
