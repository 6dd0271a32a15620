// What an application on MySQL Connector/J does, with the driver's default settings and
// an empty password: connect (the driver's own connect-time queries), DDL, prepared
// inserts and queries, a transaction with a savepoint, metadata, COM_CHANGE_USER. Exits non-zero on any
// difference from what MySQL answers. Run by scripts/connector-j-check.
import java.sql.*;

public class ConnectorJCheck {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:mysql://127.0.0.1:" + args[0] + "/?user=root&password=";
        try (Connection c = DriverManager.getConnection(url)) {
            Statement s = c.createStatement();
            s.execute("DROP DATABASE IF EXISTS cj");
            s.execute("CREATE DATABASE cj");
            c.setCatalog("cj");
            s = c.createStatement(); // a statement runs in the database current when it was made
            s.execute("CREATE TABLE item (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40) NOT NULL, "
                    + "price DECIMAL(8,2), added DATETIME)");
            PreparedStatement insert = c.prepareStatement(
                    "INSERT INTO item (name, price, added) VALUES (?, ?, NOW())",
                    Statement.RETURN_GENERATED_KEYS);
            for (int i = 1; i <= 3; i++) {
                insert.setString(1, "item " + i);
                insert.setBigDecimal(2, new java.math.BigDecimal(i + ".50"));
                insert.executeUpdate();
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    check(keys.next() && keys.getLong(1) == i, "generated key " + i);
                }
            }
            PreparedStatement query = c.prepareStatement("SELECT name, price FROM item WHERE id = ?");
            query.setLong(1, 2);
            try (ResultSet rs = query.executeQuery()) {
                check(rs.next(), "row 2");
                check(rs.getString(1).equals("item 2"), "name of row 2");
                check(rs.getBigDecimal(2).compareTo(new java.math.BigDecimal("2.50")) == 0, "price of row 2");
            }
            c.setAutoCommit(false);
            s.executeUpdate("UPDATE item SET price = 0 WHERE id = 1");
            Savepoint before = c.setSavepoint("before_delete");
            s.executeUpdate("DELETE FROM item");
            c.rollback(before);
            c.commit();
            c.setAutoCommit(true);
            try (ResultSet rs = s.executeQuery("SELECT COUNT(*), SUM(price) FROM item")) {
                check(rs.next() && rs.getInt(1) == 3, "three rows after the savepoint's rollback");
                check(rs.getBigDecimal(2).compareTo(new java.math.BigDecimal("6.00")) == 0, "sum");
            }
            DatabaseMetaData meta = c.getMetaData();
            try (ResultSet tables = meta.getTables("cj", null, "%", new String[] {"TABLE"})) {
                check(tables.next() && tables.getString("TABLE_NAME").equals("item"), "metadata: table");
            }
            try (ResultSet columns = meta.getColumns("cj", null, "item", "%")) {
                int count = 0;
                while (columns.next()) {
                    count++;
                }
                check(count == 4, "metadata: 4 columns, got " + count);
            }
            try (ResultSet keys = meta.getPrimaryKeys("cj", null, "item")) {
                check(keys.next() && keys.getString("COLUMN_NAME").equals("id"), "metadata: primary key");
            }
            // COM_CHANGE_USER: the session starts again, in no database, after a fresh check.
            s.execute("SET @marker = 1");
            ((com.mysql.cj.jdbc.JdbcConnection) c).changeUser("root", "");
            s = c.createStatement();
            try (ResultSet rs = s.executeQuery("SELECT USER(), @marker")) {
                check(rs.next() && rs.getString(1).equals("root@%"), "user after change_user");
                check(rs.getObject(2) == null, "variables gone after change_user");
            }
            s.execute("DROP DATABASE cj");
        }
        try (Connection c = DriverManager.getConnection(url)) {
            ((com.mysql.cj.jdbc.JdbcConnection) c).changeUser("nobody", "secret");
            throw new AssertionError("change_user to an unknown account was accepted");
        } catch (SQLException refused) {
            check(refused.getErrorCode() == 1045, "change_user refused with 1045, got " + refused.getErrorCode());
        }
        System.out.println("connector/j ok");
    }
}
