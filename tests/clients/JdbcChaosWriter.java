// Insert load for fault tests through MariaDB Connector/J: THREADS clients insert 1 to 4 rows at a
// time (ids from getGeneratedKeys) into the given tables until STOP_FILE exists, reconnecting
// whenever the connection goes away. Each attempt is one JSON line on stdout, in the format of
// tests/clients/py_chaos_writer.py (clients numbered from FIRST_CLIENT).
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcChaosWriter HOST PORT USER PASSWORD
//        DATABASE THREADS FIRST_CLIENT STOP_FILE TABLE...

import java.io.File;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

public class JdbcChaosWriter {
    static String url, user, password;
    static File stop;
    static String[] tables;

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\x00-\\x1f]", " ") + "\"";
    }

    static Connection connect() {
        while (!stop.exists()) {
            try {
                return DriverManager.getConnection(url, user, password);
            } catch (SQLException e) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ie) {
                    return null;
                }
            }
        }
        return null;
    }

    static void client(int n) {
        Random rng = new Random(n);
        Connection c = connect();
        int seq = 0;
        while (c != null && !stop.exists()) {
            String table = tables[rng.nextInt(tables.length)];
            int rows = new int[] {1, 1, 2, 3, 4}[rng.nextInt(5)];
            List<String> notes = new ArrayList<>();
            StringBuilder values = new StringBuilder();
            for (int i = 0; i < rows; i++) {
                String note = "j" + n + "-" + seq + "-" + i;
                notes.add(quote(note));
                values.append(i == 0 ? "" : ", ").append("(").append(1 + rng.nextInt(999)).append(", '").append(note).append("')");
            }
            seq++;
            String head = "{\"c\": " + n + ", \"t\": " + quote(table) + ", \"notes\": " + notes;
            long id;
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO " + table + " (user_id, note) VALUES " + values, Statement.RETURN_GENERATED_KEYS);
                try (ResultSet k = s.getGeneratedKeys()) {
                    k.next();
                    id = k.getLong(1);
                }
            } catch (SQLException e) {
                emit(head + ", \"ok\": false, \"err\": " + quote(String.valueOf(e.getMessage())) + ", \"ts\": " + now() + "}");
                close(c);
                c = connect();
                continue;
            }
            String lid = "null";
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT LAST_INSERT_ID()")) {
                r.next();
                lid = Long.toUnsignedString(r.getLong(1));
            } catch (SQLException e) {
                emit(head + ", \"ok\": true, \"id\": " + Long.toUnsignedString(id) + ", \"lid\": null, \"ts\": " + now() + "}");
                close(c);
                c = connect();
                continue;
            }
            emit(head + ", \"ok\": true, \"id\": " + Long.toUnsignedString(id) + ", \"lid\": " + lid + ", \"ts\": " + now() + "}");
        }
        close(c);
    }

    static double now() {
        return System.nanoTime() / 1e9;
    }

    static void close(Connection c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (SQLException e) {
            // already gone
        }
    }

    public static void main(String[] a) throws Exception {
        url = "jdbc:mariadb://" + a[0] + ":" + a[1] + "/" + a[4] + "?connectTimeout=5000&socketTimeout=30000";
        user = a[2];
        password = a[3];
        int threads = Integer.parseInt(a[5]);
        int first = Integer.parseInt(a[6]);
        stop = new File(a[7]);
        tables = java.util.Arrays.copyOfRange(a, 8, a.length);
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            int n = first + i;
            Thread t = new Thread(() -> client(n));
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join();
        }
    }
}
