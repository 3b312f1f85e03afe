// What Hibernate and Spring Data send through MariaDB Connector/J over a sharded schema: a page
// count and the pages themselves (`limit ?,?`), count(distinct …) with a parameter and grouped,
// with the column metadata a JPA provider reads. Run against one MariaDB holding every row and
// through idgate over shards: the transcripts must be identical.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcOrm HOST PORT USER PASSWORD DATABASE
// The tables of tests/orm_corpus.rs exist and hold the same rows both ways. Exits non-zero on any
// unexpected exception.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;

public class JdbcOrm {
    static void out(String s) {
        System.out.println(s);
    }

    /** The columns as a JPA provider sees them, then every row. */
    static int rows(String what, PreparedStatement ps) throws SQLException {
        int count = 0;
        try (ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            int n = md.getColumnCount();
            StringBuilder cols = new StringBuilder(what).append(" columns:");
            for (int i = 1; i <= n; i++) {
                cols.append(' ').append(md.getColumnLabel(i)).append('/').append(md.getColumnTypeName(i))
                        .append('(').append(md.getPrecision(i)).append(',').append(md.getScale(i)).append(')')
                        .append(md.isNullable(i));
            }
            out(cols.toString());
            while (rs.next()) {
                StringBuilder b = new StringBuilder(what).append(':');
                for (int i = 1; i <= n; i++) {
                    b.append(i == 1 ? " " : " | ").append(rs.getString(i));
                }
                out(b.toString());
                count++;
            }
        }
        return count;
    }

    static void run(Connection c, String mode) throws SQLException {
        String page = "select b1_0.id,b1_0.title,b1_0.price from app_book b1_0 where b1_0.price>? "
                + "order by b1_0.price desc,b1_0.id limit ?,?";
        String count = "select count(b1_0.id) from app_book b1_0 where b1_0.price>?";
        for (double floor : new double[] {45.0, 57.5}) {
            try (PreparedStatement ps = c.prepareStatement(count)) {
                ps.setDouble(1, floor);
                rows(mode + " count>" + floor, ps);
            }
            // Pages of 25 until one comes back short, as a paginator walks them.
            try (PreparedStatement ps = c.prepareStatement(page)) {
                for (int first = 0; ; first += 25) {
                    ps.setDouble(1, floor);
                    ps.setInt(2, first);
                    ps.setInt(3, 25);
                    if (rows(mode + " page>" + floor + "@" + first, ps) < 25) {
                        break;
                    }
                }
            }
        }
        String distinct = "select count(distinct b1_0.author_id) from app_book b1_0 where b1_0.price>?";
        try (PreparedStatement ps = c.prepareStatement(distinct)) {
            for (double floor : new double[] {0.0, 30.0, 1000.0}) {
                ps.setDouble(1, floor);
                rows(mode + " authors>" + floor, ps);
            }
        }
        String grouped = "select b1_0.genre,count(distinct b1_0.author_id),count(b1_0.id) from app_book b1_0 "
                + "where b1_0.pages>? group by b1_0.genre order by b1_0.genre";
        try (PreparedStatement ps = c.prepareStatement(grouped)) {
            ps.setInt(1, 200);
            rows(mode + " genres", ps);
        }
    }

    public static void main(String[] a) throws Exception {
        String base = "jdbc:mariadb://" + a[0] + ":" + a[1] + "/" + a[4];
        try (Connection c = DriverManager.getConnection(base, a[2], a[3])) {
            run(c, "client-prep");
        }
        try (Connection c = DriverManager.getConnection(base + "?useServerPrepStmts=true", a[2], a[3])) {
            run(c, "server-prep");
        }
        out("done");
    }
}
