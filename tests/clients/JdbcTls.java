// MariaDB Connector/J over TLS: connects with the URL options given, runs one query and prints
// what it returned, or the error it got.
//
// Usage: java -cp mariadb-java-client.jar:<classes> JdbcTls HOST PORT USER PASSWORD DATABASE OPTIONS
// Prints `ok <value>` or `error <SQLState> <message>`; exits 0 either way (the test judges).

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class JdbcTls {
    public static void main(String[] a) {
        String url = "jdbc:mariadb://" + a[0] + ":" + a[1] + "/" + a[4] + "?" + a[5];
        try (Connection c = DriverManager.getConnection(url, a[2], a[3]);
             Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT CONCAT('tls-', 1 + 1)")) {
            rs.next();
            System.out.println("ok " + rs.getString(1));
        } catch (SQLException e) {
            System.out.println("error " + e.getSQLState() + " " + e.getMessage().replace('\n', ' '));
        }
    }
}
