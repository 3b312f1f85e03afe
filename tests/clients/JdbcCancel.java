// Statement.cancel() from MariaDB Connector/J against idgate (or MariaDB directly): the driver
// sends KILL QUERY with the connection id of the handshake over a second connection. Prints one
// line per observation so that the transcript through idgate can be compared with the direct one.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcCancel HOST PORT USER PASSWORD DATABASE

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class JdbcCancel {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://" + args[0] + ":" + args[1] + "/" + args[4];
        try (Connection c = DriverManager.getConnection(url, args[2], args[3]);
             Statement st = c.createStatement()) {
            Thread canceller = new Thread(() -> {
                try {
                    Thread.sleep(1000);
                    st.cancel();
                } catch (Exception e) {
                    System.out.println("cancel failed: " + e);
                }
            });
            long t0 = System.nanoTime();
            canceller.start();
            String outcome;
            try (ResultSet rs = st.executeQuery("SELECT SLEEP(40) AS slept")) {
                rs.next();
                outcome = "returned " + rs.getInt(1);
            } catch (SQLException e) {
                outcome = "error code=" + e.getErrorCode() + " sqlstate=" + e.getSQLState();
            }
            canceller.join();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("cancelled statement: " + outcome);
            System.out.println("cancelled within 20 s: " + (ms < 20_000));
            try (Statement again = c.createStatement();
                 ResultSet rs = again.executeQuery("SELECT 40 + 2")) {
                rs.next();
                System.out.println("connection still usable: " + rs.getInt(1));
            }
        }
        System.out.println("done");
    }
}
