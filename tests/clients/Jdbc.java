// MariaDB Connector/J against idgate (or MariaDB directly): prints one line per observation so that
// the transcript through idgate can be compared with the transcript of a direct connection.
//
// Usage: java -cp mariadb-java-client.jar:<classes> Jdbc HOST PORT USER PASSWORD DATABASE
// Exits non-zero on any unexpected exception.

import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class Jdbc {
    static String host, port, user, password, database;

    static Connection open(String options) throws SQLException {
        // Options every connection of a run takes (e.g. useCompression=true).
        String common = System.getProperty("idgate.test.options", "");
        if (!common.isEmpty()) {
            options = options.isEmpty() ? common : options + "&" + common;
        }
        String url = "jdbc:mariadb://" + host + ":" + port + "/" + database + (options.isEmpty() ? "" : "?" + options);
        return DriverManager.getConnection(url, user, password);
    }

    static void out(String s) {
        System.out.println(s);
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    /** A value with its Java type; the connection id Connector/J puts in messages is removed. */
    static String show(Object o) {
        if (o == null) {
            return "NULL";
        }
        if (o instanceof byte[]) {
            return "byte[]:" + hex((byte[]) o);
        }
        return o.getClass().getName() + ":" + o;
    }

    /** A string with control characters escaped, so binary columns read as text stay one line. */
    static String printable(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder();
        for (char ch : s.toCharArray()) {
            if (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && ch < 0xa0)) {
                sb.append(String.format("\\u%04x", (int) ch));
            } else {
                sb.append(ch);
            }
        }
        return sb.toString();
    }

    static String msg(SQLException e) {
        String m = String.valueOf(e.getMessage());
        return m.replaceAll("\\(conn=\\d+\\) ", "").replace('\n', ' ');
    }

    static String err(SQLException e) {
        return "error code=" + e.getErrorCode() + " sqlstate=" + e.getSQLState() + " message=" + msg(e);
    }

    static void warnings(String what, SQLWarning w) {
        if (w == null) {
            out(what + " warnings: none");
        }
        for (; w != null; w = w.getNextWarning()) {
            out(what + " warning code=" + w.getErrorCode() + " sqlstate=" + w.getSQLState() + " message=" + msg(w));
        }
    }

    static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static void dumpRows(String what, ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        int row = 0;
        while (rs.next()) {
            row++;
            for (int i = 1; i <= md.getColumnCount(); i++) {
                String obj;
                String str;
                try {
                    obj = show(rs.getObject(i));
                } catch (SQLException | RuntimeException e) {
                    obj = "getObject failed: " + e.getClass().getName() + ": " + e.getMessage();
                }
                try {
                    str = printable(rs.getString(i));
                } catch (SQLException | RuntimeException e) {
                    str = "getString failed: " + e.getClass().getName() + ": " + e.getMessage();
                }
                out(what + " row " + row + " " + md.getColumnLabel(i) + " = " + obj + " | string=" + str + " | wasNull=" + rs.wasNull());
            }
        }
        out(what + " rows: " + row);
    }

    static void dumpMeta(String what, ResultSetMetaData md) throws SQLException {
        out(what + " columns: " + md.getColumnCount());
        for (int i = 1; i <= md.getColumnCount(); i++) {
            out(what + " column " + i
                    + " name=" + md.getColumnName(i)
                    + " label=" + md.getColumnLabel(i)
                    + " table=" + md.getTableName(i)
                    + " catalog=" + md.getCatalogName(i)
                    + " type=" + md.getColumnType(i)
                    + " typeName=" + md.getColumnTypeName(i)
                    + " class=" + md.getColumnClassName(i)
                    + " precision=" + md.getPrecision(i)
                    + " scale=" + md.getScale(i)
                    + " displaySize=" + md.getColumnDisplaySize(i)
                    + " nullable=" + md.isNullable(i)
                    + " signed=" + md.isSigned(i)
                    + " autoIncrement=" + md.isAutoIncrement(i)
                    + " caseSensitive=" + md.isCaseSensitive(i));
        }
    }

    static void keys(String what, Statement s) throws SQLException {
        List<Long> ks = new ArrayList<>();
        try (ResultSet rs = s.getGeneratedKeys()) {
            while (rs.next()) {
                ks.add(rs.getLong(1));
            }
        }
        out(what + " generated keys: " + ks);
    }

    static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: Jdbc HOST PORT USER PASSWORD DATABASE");
            System.exit(2);
        }
        host = args[0];
        port = args[1];
        user = args[2];
        password = args[3];
        database = args[4];
        try {
            setup();
            bytes("client-prep", "useServerPrepStmts=false");
            bytes("server-prep", "useServerPrepStmts=true");
            batch();
            transactions();
            generatedKeys();
            types();
            errorsAndWarnings();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        out("done");
    }

    static void setup() throws SQLException {
        try (Connection c = open("")) {
            exec(c, "DROP TABLE IF EXISTS jdbc_bytes, jdbc_batch, jdbc_tx, jdbc_keys, jdbc_types");
            exec(c, "CREATE TABLE jdbc_bytes (id INT PRIMARY KEY, vb VARBINARY(300), bl BLOB, st LONGBLOB)");
            exec(c, "CREATE TABLE jdbc_batch (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL)");
            exec(c, "CREATE TABLE jdbc_tx (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB");
            exec(c, "CREATE TABLE jdbc_keys (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))");
            exec(c, "CREATE TABLE jdbc_types ("
                    + "id INT AUTO_INCREMENT PRIMARY KEY, "
                    + "ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, i INT NOT NULL DEFAULT 0, "
                    + "iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, dcm DECIMAL(20,6), f FLOAT, d DOUBLE, "
                    + "bit1 BIT(1), bit8 BIT(8), dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, "
                    + "yr YEAR, ch CHAR(10), vc VARCHAR(100) CHARACTER SET utf8mb4, bin BINARY(4), vb VARBINARY(10), "
                    + "tx TEXT, bl BLOB, en ENUM('a','b'), st SET('x','y'), js JSON, bo BOOLEAN)");
            out("setup: OK");
        }
    }

    /** All 256 byte values as parameters, written and read back, compared by Java and by the server. */
    static void bytes(String mode, String options) throws SQLException {
        byte[] all = new byte[256];
        for (int i = 0; i < 256; i++) {
            all[i] = (byte) i;
        }
        byte[] reversed = new byte[256];
        for (int i = 0; i < 256; i++) {
            reversed[i] = (byte) (255 - i);
        }
        int id = mode.equals("client-prep") ? 1 : 2;
        try (Connection c = open(options)) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_bytes (id, vb, bl, st) VALUES (?, ?, ?, ?)")) {
                ps.setInt(1, id);
                ps.setBytes(2, all);
                ps.setBytes(3, reversed);
                ps.setBinaryStream(4, new ByteArrayInputStream(all), all.length);
                out("bytes " + mode + " insert: " + ps.executeUpdate());
            }
            boolean ok = true;
            try (PreparedStatement ps = c.prepareStatement("SELECT vb, bl, st, HEX(vb), HEX(bl), LENGTH(st) FROM jdbc_bytes WHERE id = ? AND vb = ?")) {
                ps.setInt(1, id);
                ps.setBytes(2, all);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        out("bytes " + mode + " select by byte[] parameter: no row");
                        ok = false;
                    } else {
                        byte[] vb = rs.getBytes(1);
                        byte[] bl = rs.getBytes(2);
                        byte[] st = rs.getBytes(3);
                        out("bytes " + mode + " vb length=" + vb.length + " equal=" + Arrays.equals(vb, all));
                        out("bytes " + mode + " bl length=" + bl.length + " equal=" + Arrays.equals(bl, reversed));
                        out("bytes " + mode + " st length=" + st.length + " equal=" + Arrays.equals(st, all));
                        boolean serverHex = rs.getString(4).equalsIgnoreCase(hex(all)) && rs.getString(5).equalsIgnoreCase(hex(reversed));
                        out("bytes " + mode + " server HEX matches=" + serverHex + " LENGTH(st)=" + rs.getLong(6));
                        ok = Arrays.equals(vb, all) && Arrays.equals(bl, reversed) && Arrays.equals(st, all) && serverHex && rs.getLong(6) == 256;
                    }
                }
            }
            // Each single byte as its own parameter, compared on the server.
            int singles = 0;
            try (PreparedStatement ps = c.prepareStatement("SELECT ? = UNHEX(?), LENGTH(?)")) {
                for (int i = 0; i < 256; i++) {
                    byte[] one = new byte[] {(byte) i};
                    ps.setBytes(1, one);
                    ps.setString(2, String.format("%02X", i));
                    ps.setBytes(3, one);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        if (rs.getInt(1) == 1 && rs.getInt(2) == 1) {
                            singles++;
                        }
                    }
                }
            }
            out("bytes " + mode + " single-byte parameters equal on the server: " + singles + "/256");
            ok = ok && singles == 256;
            out("bytes " + mode + " round trip " + (ok ? "OK" : "FAILED"));
        }
    }

    static void batch() throws SQLException {
        try (Connection c = open("rewriteBatchedStatements=true")) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_batch (id, v) VALUES (?, ?)")) {
                for (int i = 1; i <= 100; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "row-" + i + (i % 10 == 0 ? " 🦀" : ""));
                    ps.addBatch();
                }
                out("batch insert counts: " + Arrays.toString(ps.executeBatch()));
            }
            try (PreparedStatement ps = c.prepareStatement("UPDATE jdbc_batch SET v = ? WHERE id = ?")) {
                for (int i = 1; i <= 10; i++) {
                    ps.setString(1, "upd-" + i);
                    ps.setInt(2, i * 3);
                    ps.addBatch();
                }
                out("batch update counts: " + Arrays.toString(ps.executeBatch()));
            }
            try (Statement s = c.createStatement()) {
                s.addBatch("INSERT INTO jdbc_batch VALUES (1000, 's1')");
                s.addBatch("UPDATE jdbc_batch SET v = 's1b' WHERE id = 1000");
                s.addBatch("DELETE FROM jdbc_batch WHERE id IN (99, 98)");
                s.addBatch("UPDATE jdbc_batch SET v = 'none' WHERE id = -1");
                out("batch statement counts: " + Arrays.toString(s.executeBatch()));
            }
            try (Statement s = c.createStatement()) {
                s.addBatch("INSERT INTO jdbc_batch VALUES (2000, 'x')");
                s.addBatch("INSERT INTO jdbc_batch VALUES (2000, 'duplicate')");
                s.addBatch("INSERT INTO jdbc_batch VALUES (2001, 'after')");
                try {
                    out("batch with duplicate counts: " + Arrays.toString(s.executeBatch()));
                } catch (BatchUpdateException e) {
                    out("batch with duplicate: " + err(e) + " counts=" + Arrays.toString(e.getUpdateCounts()));
                }
            }
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT COUNT(*), SUM(id), MD5(GROUP_CONCAT(id, ':', v ORDER BY id SEPARATOR ',')) FROM jdbc_batch")) {
                rs.next();
                out("batch verify count=" + rs.getLong(1) + " sum=" + rs.getLong(2) + " md5=" + rs.getString(3));
            }
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT id, v FROM jdbc_batch WHERE id % 10 = 0 OR id % 3 = 0 OR id > 100 ORDER BY id")) {
                while (rs.next()) {
                    out("batch row " + rs.getInt(1) + " " + rs.getString(2));
                }
            }
        }
    }

    static void transactions() throws SQLException {
        try (Connection a = open(""); Connection b = open("")) {
            a.setAutoCommit(false);
            exec(a, "INSERT INTO jdbc_tx VALUES (1, 'committed')");
            out("tx before commit: other session sees " + count(b, "SELECT COUNT(*) FROM jdbc_tx") + ", own session sees " + count(a, "SELECT COUNT(*) FROM jdbc_tx"));
            a.commit();
            out("tx after commit: other session sees " + count(b, "SELECT COUNT(*) FROM jdbc_tx"));
            exec(a, "INSERT INTO jdbc_tx VALUES (2, 'rolled back')");
            out("tx before rollback: own session sees " + count(a, "SELECT COUNT(*) FROM jdbc_tx"));
            a.rollback();
            out("tx after rollback: own session sees " + count(a, "SELECT COUNT(*) FROM jdbc_tx") + ", other session sees " + count(b, "SELECT COUNT(*) FROM jdbc_tx"));
            exec(a, "INSERT INTO jdbc_tx VALUES (3, 'kept')");
            Savepoint sp = a.setSavepoint("sp1");
            exec(a, "INSERT INTO jdbc_tx VALUES (4, 'after savepoint')");
            a.rollback(sp);
            a.commit();
            a.setAutoCommit(true);
            try (Statement s = b.createStatement(); ResultSet rs = s.executeQuery("SELECT id, v FROM jdbc_tx ORDER BY id")) {
                while (rs.next()) {
                    out("tx row " + rs.getInt(1) + " " + rs.getString(2));
                }
            }
            out("tx autocommit=" + a.getAutoCommit() + " isolation=" + a.getTransactionIsolation());
        }
    }

    static void generatedKeys() throws SQLException {
        try (Connection c = open("rewriteBatchedStatements=true")) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_keys (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                ps.setString(1, "one");
                out("keys single insert count: " + ps.executeUpdate());
                keys("keys single", ps);
            }
            try (Statement s = c.createStatement()) {
                out("keys multi insert count: " + s.executeUpdate("INSERT INTO jdbc_keys (v) VALUES ('a'), ('b'), ('c')", Statement.RETURN_GENERATED_KEYS));
                keys("keys multi", s);
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_keys (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                for (String v : new String[] {"x", "y", "z"}) {
                    ps.setString(1, v);
                    ps.addBatch();
                }
                out("keys batch counts: " + Arrays.toString(ps.executeBatch()));
                keys("keys batch", ps);
            }
            out("keys LAST_INSERT_ID()=" + count(c, "SELECT LAST_INSERT_ID()"));
        }
        try (Connection c = open("useServerPrepStmts=true")) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_keys (v) VALUES (?), (?)", Statement.RETURN_GENERATED_KEYS)) {
                ps.setString(1, "sp1");
                ps.setString(2, "sp2");
                out("keys server-prep insert count: " + ps.executeUpdate());
                keys("keys server-prep", ps);
            }
            out("keys server-prep LAST_INSERT_ID()=" + count(c, "SELECT LAST_INSERT_ID()"));
        }
    }

    static void types() throws SQLException {
        try (Connection c = open("")) {
            exec(c, "INSERT INTO jdbc_types (ti, tiu, si, mi, i, iu, bi, biu, dcm, f, d, bit1, bit8, dt, tm, dtm, ts, yr, ch, vc, bin, vb, tx, bl, en, st, js, bo) VALUES ("
                    + "-128, 255, -32768, -8388608, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, "
                    + "-12345678901234.123456, 1.5, 3.141592653589793, b'1', b'10100101', '2024-02-29', '12:34:56.789', "
                    + "'2024-02-29 23:59:59.123456', '2024-01-01 00:00:00', 2024, 'abc', 'héllo 🦀 世界', x'00ff0102', x'deadbeef', "
                    + "'text 🦀', x'000102', 'b', 'x,y', '{\"a\": [1, 2]}', 1)");
            exec(c, "INSERT INTO jdbc_types (id) VALUES (NULL)");
            exec(c, "INSERT INTO jdbc_types (ti, tiu, si, mi, i, iu, bi, biu, dcm, f, d, bit1, bit8, dt, tm, dtm, yr, ch, vc, bin, vb, tx, bl, en, st, js, bo) VALUES ("
                    + "127, 0, 32767, 8388607, 2147483647, 0, 9223372036854775807, 0, 99999999999999.999999, -0.25, -1e300, b'0', b'0', "
                    + "'1000-01-01', '-838:59:59.000', '9999-12-31 23:59:59.999999', 1901, '', '', x'00000000', x'', '', x'', 'a', '', '[]', 0)");
            DatabaseMetaData dm = c.getMetaData();
            try (ResultSet rs = dm.getColumns(database, null, "jdbc_types", "%")) {
                while (rs.next()) {
                    out("metadata column " + rs.getString("COLUMN_NAME")
                            + " DATA_TYPE=" + rs.getInt("DATA_TYPE")
                            + " TYPE_NAME=" + rs.getString("TYPE_NAME")
                            + " COLUMN_SIZE=" + rs.getString("COLUMN_SIZE")
                            + " DECIMAL_DIGITS=" + rs.getString("DECIMAL_DIGITS")
                            + " NUM_PREC_RADIX=" + rs.getString("NUM_PREC_RADIX")
                            + " NULLABLE=" + rs.getInt("NULLABLE")
                            + " COLUMN_DEF=" + rs.getString("COLUMN_DEF")
                            + " CHAR_OCTET_LENGTH=" + rs.getString("CHAR_OCTET_LENGTH")
                            + " ORDINAL_POSITION=" + rs.getInt("ORDINAL_POSITION")
                            + " IS_NULLABLE=" + rs.getString("IS_NULLABLE")
                            + " IS_AUTOINCREMENT=" + rs.getString("IS_AUTOINCREMENT")
                            + " IS_GENERATEDCOLUMN=" + rs.getString("IS_GENERATEDCOLUMN"));
                }
            }
            try (ResultSet rs = dm.getPrimaryKeys(database, null, "jdbc_types")) {
                while (rs.next()) {
                    out("metadata primary key " + rs.getString("COLUMN_NAME") + " seq=" + rs.getInt("KEY_SEQ"));
                }
            }
            try (ResultSet rs = dm.getTables(database, null, "jdbc_%", new String[] {"TABLE"})) {
                while (rs.next()) {
                    out("metadata table " + rs.getString("TABLE_NAME") + " type=" + rs.getString("TABLE_TYPE"));
                }
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM jdbc_types ORDER BY id")) {
                dumpMeta("text select", rs.getMetaData());
                dumpRows("text select", rs);
            }
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT 1 AS one, 1.50 AS dec_lit, 'x' AS s, NULL AS n, CAST(1 AS UNSIGNED) AS u, COUNT(*) AS cnt, SUM(dcm) AS total, MAX(dtm) AS latest FROM jdbc_types")) {
                dumpMeta("expression select", rs.getMetaData());
                dumpRows("expression select", rs);
            }
        }
        try (Connection c = open("useServerPrepStmts=true")) {
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM jdbc_types WHERE id >= ? ORDER BY id")) {
                dumpMeta("prepared metadata before execute", ps.getMetaData());
                ps.setInt(1, 1);
                try (ResultSet rs = ps.executeQuery()) {
                    dumpMeta("binary select", rs.getMetaData());
                    dumpRows("binary select", rs);
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT ?, ?, ?, ?, ?, ?, ?")) {
                out("prepared parameter count: " + ps.getParameterMetaData().getParameterCount());
                ps.setLong(1, Long.MIN_VALUE);
                ps.setBigDecimal(2, new BigDecimal("-12345.678900"));
                ps.setDouble(3, 2.5e-10);
                ps.setString(4, "ünï 🦀");
                ps.setNull(5, java.sql.Types.VARCHAR);
                ps.setTimestamp(6, java.sql.Timestamp.valueOf("2020-05-06 07:08:09.123456"));
                ps.setBoolean(7, true);
                try (ResultSet rs = ps.executeQuery()) {
                    dumpRows("binary parameters", rs);
                }
            }
        }
    }

    static void errorsAndWarnings() throws SQLException {
        try (Connection c = open("")) {
            try (Statement s = c.createStatement()) {
                try (ResultSet rs = s.executeQuery("SELECT CAST('12abc' AS INTEGER) AS v")) {
                    rs.next();
                    out("warning select value=" + rs.getLong(1));
                }
                warnings("warning select", s.getWarnings());
                s.execute("SELECT 1");
                warnings("plain select", s.getWarnings());
            }
            String[] bad = {
                "INSERT INTO jdbc_batch VALUES (1, 'dup')",
                "SELEC 1",
                "SELECT * FROM jdbc_no_such_table",
                "SELECT no_such_column FROM jdbc_batch",
                "SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 3819, MESSAGE_TEXT = 'custom check failed'",
            };
            for (String sql : bad) {
                try (Statement s = c.createStatement()) {
                    s.execute(sql);
                    out("expected error did not happen: " + sql);
                } catch (SQLException e) {
                    out("statement error: " + err(e) + " class=" + e.getClass().getName());
                }
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_batch VALUES (?, ?)")) {
                ps.setInt(1, 2);
                ps.setString(2, "dup");
                ps.executeUpdate();
                out("expected duplicate error did not happen (client-prep)");
            } catch (SQLException e) {
                out("client-prep error: " + err(e));
            }
            out("connection still usable: " + count(c, "SELECT 42"));
        }
        try (Connection c = open("useServerPrepStmts=true")) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_batch VALUES (?, ?)")) {
                ps.setInt(1, 2);
                ps.setString(2, "dup");
                ps.executeUpdate();
                out("expected duplicate error did not happen (server-prep)");
            } catch (SQLException e) {
                out("server-prep error: " + err(e));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM jdbc_no_such_table WHERE id = ?")) {
                ps.setInt(1, 1);
                ps.executeQuery();
                out("expected prepare error did not happen");
            } catch (SQLException e) {
                out("server-prep prepare error: " + err(e));
            }
            out("server-prep connection still usable: " + count(c, "SELECT 43"));
        }
    }
}
