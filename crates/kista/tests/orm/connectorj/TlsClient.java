// Connector/J over TLS to the Kista SQL front end with sslMode=VERIFY_IDENTITY: the
// certificate checked against the cluster's authority (in a PKCS12 trust store) and its
// name against the host. Reports the session's cipher; a trust store holding another
// authority must be refused. Run by crates/kista/tests/sql.rs (java TlsClient.java):
//
//   TlsClient PORT TRUST_STORE OTHER_TRUST_STORE PASSWORD
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

public class TlsClient {
    static String url(String port, String trustStore, String password) {
        return "jdbc:mysql://127.0.0.1:" + port + "/?user=root&password="
            + "&sslMode=VERIFY_IDENTITY&trustCertificateKeyStoreUrl=file:" + trustStore
            + "&trustCertificateKeyStoreType=PKCS12&trustCertificateKeyStorePassword=" + password;
    }

    public static void main(String[] args) throws Exception {
        String port = args[0], trusted = args[1], other = args[2], password = args[3];
        String cipher;
        try (Connection connection = DriverManager.getConnection(url(port, trusted, password))) {
            try (ResultSet status = connection.createStatement()
                    .executeQuery("SHOW STATUS LIKE 'Ssl_cipher'")) {
                status.next();
                cipher = status.getString(2);
            }
            if (!cipher.startsWith("TLS_")) {
                throw new AssertionError("no TLS cipher: " + cipher);
            }
            try (PreparedStatement select = connection.prepareStatement("SELECT ?")) {
                select.setInt(1, 7);
                try (ResultSet row = select.executeQuery()) {
                    row.next();
                    if (row.getInt(1) != 7) {
                        throw new AssertionError("SELECT ? over TLS: " + row.getInt(1));
                    }
                }
            }
        }
        try (Connection refused = DriverManager.getConnection(url(port, other, password))) {
            throw new AssertionError("a client trusting another authority connected");
        } catch (SQLException expected) {
            // The certificate did not verify: what a client must do with a stranger's.
        }
        System.out.println("connectorj tls ok " + cipher);
    }
}
