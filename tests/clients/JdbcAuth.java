import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Logs in with Connector/J and runs one query; prints `ok 42` or `error CODE MESSAGE`.
 * Usage: JdbcAuth HOST PORT USER PASSWORD [EXTRA_URL_OPTIONS]
 */
public class JdbcAuth {
    public static void main(String[] args) throws Exception {
        String extra = args.length > 4 ? "&" + args[4] : "";
        String url = "jdbc:mariadb://" + args[0] + ":" + args[1] + "/?user=" + args[2]
                + "&password=" + args[3] + extra;
        try (Connection c = DriverManager.getConnection(url);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT 41 + 1")) {
            rs.next();
            System.out.println("ok " + rs.getLong(1));
        } catch (SQLException e) {
            System.out.println("error " + e.getErrorCode() + " " + e.getMessage());
        }
    }
}
