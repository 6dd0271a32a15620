//! The connection phase: the server's greeting, the client's answer, the password check.
//!
//! Every account can log in with either plugin (the server keeps the hashes both need), so
//! a client answering the greeting with `mysql_native_password` or `caching_sha2_password`
//! is checked at once; any other plugin is asked to switch to `mysql_native_password`.

use std::io::{Read, Write};

use super::auth::{self, User, CACHING_SHA2_PASSWORD, NATIVE_PASSWORD, SCRAMBLE_BYTES};
use super::packet::{PacketError, PacketStream};
use super::wire::{put_nul_string, put_u16, put_u32, Input, Malformed};
use super::{capability, status, COLLATION_UTF8MB4};

/// The plugin the greeting names (MySQL 8's default); clients may answer with the other.
pub const GREETING_PLUGIN: &str = CACHING_SHA2_PASSWORD;

/// `caching_sha2_password`'s "more data" byte and its "fast auth succeeded" status.
const AUTH_MORE_DATA: u8 = 0x01;
const FAST_AUTH_SUCCESS: u8 = 0x03;
/// The auth switch request's first byte.
const AUTH_SWITCH: u8 = 0xFE;

/// A client that logged in.
#[derive(Debug, Clone)]
pub struct Login {
    pub user: String,
    /// The database named in the handshake (checked by the session, not here).
    pub database: Option<String>,
    /// The capabilities both sides have.
    pub capabilities: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error(transparent)]
    Packet(#[from] PacketError),
    #[error(transparent)]
    Malformed(#[from] Malformed),
    #[error("the client does not speak protocol 4.1")]
    OldProtocol,
    #[error("the client asked for TLS, which this front end does not offer (no --tls-cert)")]
    TlsNotOffered,
    #[error("Access denied for user '{user}' (using password: {})", if *.with_password { "YES" } else { "NO" })]
    AccessDenied { user: String, with_password: bool },
}

/// A lookup of accounts kept elsewhere (the cluster's accounts table).
pub type StoredUsers = std::sync::Arc<dyn Fn(&str) -> Option<User> + Send + Sync>;

/// The users the server accepts: those it was configured with, unless the stored ones
/// hold an account of the same name, which wins.
#[derive(Clone, Default)]
pub struct Users {
    configured: Vec<User>,
    stored: Option<StoredUsers>,
}

impl Users {
    pub fn new(users: Vec<User>) -> Self {
        Self {
            configured: users,
            stored: None,
        }
    }

    /// These users, and before them the accounts `stored` finds.
    pub fn with_stored(self, stored: StoredUsers) -> Self {
        Self {
            stored: Some(stored),
            ..self
        }
    }

    pub fn configured(&self) -> &[User] {
        &self.configured
    }

    fn find(&self, name: &str) -> Option<User> {
        if let Some(user) = self.stored.as_ref().and_then(|stored| stored(name)) {
            return Some(user);
        }
        self.configured
            .iter()
            .find(|user| user.name == name)
            .cloned()
    }
}

/// What the client's first answer said.
struct HandshakeResponse {
    capabilities: u32,
    user: String,
    proof: Vec<u8>,
    database: Option<String>,
    plugin: String,
}

/// Greets the client, reads its answer and checks its password; on success the OK packet
/// is queued (not flushed) and the login returned. Denials are returned for the caller to
/// answer with error 1045. (A plain connection's whole connection phase: `greet`, `read_answer`
/// and `authenticate` in turn, which the server runs with TLS between them.)
pub fn handshake<S: Read + Write>(
    stream: &mut PacketStream<S>,
    users: &Users,
    connection_id: u32,
    server_version: &str,
) -> Result<Login, HandshakeError> {
    let scramble = greet(stream, connection_id, server_version, false)?;
    let mut payload = Vec::new();
    read_answer(stream, &mut payload)?;
    authenticate(stream, users, &scramble, &payload)
}

/// Sends the greeting (offering TLS if `offer_tls`) and returns its scramble.
pub fn greet<S: Read + Write>(
    stream: &mut PacketStream<S>,
    connection_id: u32,
    server_version: &str,
    offer_tls: bool,
) -> Result<[u8; SCRAMBLE_BYTES], HandshakeError> {
    let scramble = auth::new_scramble();
    let capabilities = capability::SERVER | if offer_tls { capability::SSL } else { 0 };
    stream.write_payload(&greeting(
        connection_id,
        server_version,
        &scramble,
        capabilities,
    ));
    stream.flush().map_err(PacketError::from)?;
    Ok(scramble)
}

/// Reads the client's next answer in the connection phase; the stream ending is an error.
pub fn read_answer<S: Read + Write>(
    stream: &mut PacketStream<S>,
    payload: &mut Vec<u8>,
) -> Result<(), HandshakeError> {
    if !stream.read_payload(payload)? {
        return Err(PacketError::Io(std::io::ErrorKind::UnexpectedEof.into()).into());
    }
    Ok(())
}

/// Whether the client's first answer is an `SSLRequest`: it asks for TLS before it says
/// who it is (its handshake response follows, encrypted).
pub fn asks_for_tls(answer: &[u8]) -> Result<bool, HandshakeError> {
    let capabilities = Input::new(answer).u32("capabilities")?;
    Ok(capabilities & capability::SSL != 0)
}

/// Checks the client's handshake response `payload` against the greeting's `scramble`:
/// the login, with the OK queued, or a denial.
pub fn authenticate<S: Read + Write>(
    stream: &mut PacketStream<S>,
    users: &Users,
    scramble: &[u8; SCRAMBLE_BYTES],
    payload: &[u8],
) -> Result<Login, HandshakeError> {
    let mut response = parse_response(payload)?;
    let capabilities = response.capabilities & capability::SERVER;
    let known_plugin = [NATIVE_PASSWORD, CACHING_SHA2_PASSWORD].contains(&response.plugin.as_str());
    if !known_plugin {
        let mut switch = vec![AUTH_SWITCH];
        put_nul_string(&mut switch, NATIVE_PASSWORD);
        switch.extend_from_slice(scramble);
        switch.push(0);
        stream.write_payload(&switch);
        stream.flush().map_err(PacketError::from)?;
        let mut proof = Vec::new();
        read_answer(stream, &mut proof)?;
        response.proof = proof;
        response.plugin = NATIVE_PASSWORD.into();
    }
    let accepted = users
        .find(&response.user)
        .is_some_and(|user| user.accepts(&response.plugin, scramble, &response.proof));
    let empty_proof = auth::is_empty_proof(&response.proof);
    if !accepted {
        return Err(HandshakeError::AccessDenied {
            user: response.user,
            with_password: !empty_proof,
        });
    }
    // An empty password has no fast-auth exchange: the OK follows at once, as MySQL's.
    // (Connector/J answers a fast-auth status after an empty proof with one more packet.)
    if response.plugin == CACHING_SHA2_PASSWORD && !empty_proof {
        stream.write_payload(&[AUTH_MORE_DATA, FAST_AUTH_SUCCESS]);
    }
    Ok(Login {
        user: response.user,
        database: response.database.filter(|d| !d.is_empty()),
        capabilities,
    })
}

/// `COM_CHANGE_USER` (its `body` after the command byte): the client names another account
/// and database, its proof made with the connection's first scramble. The server asks
/// for a new proof with `scramble`, fresh (an auth switch to `mysql_native_password`, as
/// MySQL may answer), and checks it; on success the OK is queued and the login returned.
pub fn change_user<S: Read + Write>(
    stream: &mut PacketStream<S>,
    users: &Users,
    body: &[u8],
    scramble: &[u8; SCRAMBLE_BYTES],
    capabilities: u32,
) -> Result<Login, HandshakeError> {
    let mut input = Input::new(body);
    let user = String::from_utf8_lossy(input.nul_terminated()).into_owned();
    // The proof made with the first scramble: a fresh one is asked for instead.
    if capabilities & capability::SECURE_CONNECTION != 0 {
        let length = input.u8("change user proof length")?;
        input.take(usize::from(length), "change user proof")?;
    } else {
        input.nul_terminated();
    }
    // The character set, plugin name and attributes may follow; nothing needs them.
    let database = String::from_utf8_lossy(input.nul_terminated()).into_owned();
    let mut switch = vec![AUTH_SWITCH];
    put_nul_string(&mut switch, NATIVE_PASSWORD);
    switch.extend_from_slice(scramble);
    switch.push(0);
    stream.write_payload(&switch);
    stream.flush().map_err(PacketError::from)?;
    let mut proof = Vec::new();
    if !stream.read_payload(&mut proof)? {
        return Err(PacketError::Io(std::io::ErrorKind::UnexpectedEof.into()).into());
    }
    let accepted = users
        .find(&user)
        .is_some_and(|account| account.accepts(NATIVE_PASSWORD, scramble, &proof));
    if !accepted {
        return Err(HandshakeError::AccessDenied {
            user,
            with_password: !auth::is_empty_proof(&proof),
        });
    }
    Ok(Login {
        user,
        database: Some(database).filter(|d| !d.is_empty()),
        capabilities,
    })
}

/// The initial handshake packet, protocol version 10, offering `capabilities`.
fn greeting(
    connection_id: u32,
    server_version: &str,
    scramble: &[u8; SCRAMBLE_BYTES],
    capabilities: u32,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.push(10);
    put_nul_string(&mut out, server_version);
    put_u32(&mut out, connection_id);
    out.extend_from_slice(&scramble[..8]);
    out.push(0);
    put_u16(&mut out, capabilities as u16);
    out.push(COLLATION_UTF8MB4 as u8);
    put_u16(&mut out, status::AUTOCOMMIT);
    put_u16(&mut out, (capabilities >> 16) as u16);
    out.push(SCRAMBLE_BYTES as u8 + 1);
    out.extend_from_slice(&[0; 10]);
    out.extend_from_slice(&scramble[8..]);
    out.push(0);
    put_nul_string(&mut out, GREETING_PLUGIN);
    out
}

/// `HandshakeResponse41`.
fn parse_response(payload: &[u8]) -> Result<HandshakeResponse, HandshakeError> {
    let mut input = Input::new(payload);
    let capabilities = input.u32("capabilities")?;
    if capabilities & capability::PROTOCOL_41 == 0 {
        return Err(HandshakeError::OldProtocol);
    }
    input.take(4 + 1 + 23, "handshake response header")?;
    let user = String::from_utf8_lossy(input.nul_terminated()).into_owned();
    let proof = if capabilities & capability::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        input.lenenc_bytes("auth response")?.to_vec()
    } else if capabilities & capability::SECURE_CONNECTION != 0 {
        let length = input.u8("auth response length")?;
        input.take(usize::from(length), "auth response")?.to_vec()
    } else {
        input.nul_terminated().to_vec()
    };
    let database = (capabilities & capability::CONNECT_WITH_DB != 0)
        .then(|| String::from_utf8_lossy(input.nul_terminated()).into_owned());
    let plugin = if capabilities & capability::PLUGIN_AUTH != 0 {
        String::from_utf8_lossy(input.nul_terminated()).into_owned()
    } else {
        NATIVE_PASSWORD.to_string()
    };
    // Connection attributes follow; nothing here needs them.
    Ok(HandshakeResponse {
        capabilities,
        user,
        proof,
        database,
        plugin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::auth::tests::{native_proof, sha2_proof};
    use crate::protocol::wire::put_lenenc_bytes;

    fn response(user: &str, proof: &[u8], database: Option<&str>, plugin: &str) -> Vec<u8> {
        let mut capabilities = capability::PROTOCOL_41
            | capability::PLUGIN_AUTH
            | capability::PLUGIN_AUTH_LENENC_CLIENT_DATA
            | capability::SECURE_CONNECTION;
        if database.is_some() {
            capabilities |= capability::CONNECT_WITH_DB;
        }
        let mut out = Vec::new();
        put_u32(&mut out, capabilities);
        put_u32(&mut out, 1 << 24);
        out.push(45);
        out.extend_from_slice(&[0; 23]);
        put_nul_string(&mut out, user);
        put_lenenc_bytes(&mut out, proof);
        if let Some(database) = database {
            put_nul_string(&mut out, database);
        }
        put_nul_string(&mut out, plugin);
        out
    }

    /// A client whose packets are written in advance; what the server writes is kept.
    struct ScriptedClient {
        input: std::io::Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for ScriptedClient {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for ScriptedClient {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The payloads of the packets in `written`.
    fn payloads_of(mut written: &[u8]) -> Vec<Vec<u8>> {
        let mut payloads = Vec::new();
        while written.len() >= 4 {
            let length = u32::from_le_bytes([written[0], written[1], written[2], 0]) as usize;
            payloads.push(written[4..4 + length].to_vec());
            written = &written[4 + length..];
        }
        payloads
    }

    /// The payloads the server wrote after its greeting, for a client answering with
    /// `proof` under caching_sha2_password.
    fn server_answers(users: &Users, proof: &[u8]) -> Vec<Vec<u8>> {
        let answer = response("app", proof, None, CACHING_SHA2_PASSWORD);
        let mut input = (answer.len() as u32).to_le_bytes()[..3].to_vec();
        input.push(1);
        input.extend_from_slice(&answer);
        let client = ScriptedClient {
            input: std::io::Cursor::new(input),
            output: Vec::new(),
        };
        let mut stream = PacketStream::new(client);
        handshake(&mut stream, users, 1, "8.0.36-kista").unwrap();
        stream.flush().unwrap();
        let mut payloads = payloads_of(&stream.get_ref().output);
        payloads.remove(0); // the greeting
        payloads
    }

    #[test]
    fn an_empty_password_has_no_fast_auth_exchange_whatever_the_client_sends() {
        let users = Users::new(vec![User::new("app", "")]);
        // Connector/J sends one NUL for an empty password, and would answer a fast-auth
        // status with one more packet the server does not expect.
        assert!(server_answers(&users, &[0]).is_empty());
        assert!(server_answers(&users, &[]).is_empty());
    }

    /// A COM_CHANGE_USER body: user, proof (with its length), database.
    fn change_user_body(user: &str, database: &str) -> Vec<u8> {
        let mut body = Vec::new();
        put_nul_string(&mut body, user);
        body.push(3);
        body.extend_from_slice(b"old");
        put_nul_string(&mut body, database);
        body.extend_from_slice(&[45, 0]);
        put_nul_string(&mut body, NATIVE_PASSWORD);
        body
    }

    /// Runs COM_CHANGE_USER (`body`) with the client's answer to the auth switch
    /// (`proof`) scripted; returns the result and the payloads the server wrote.
    fn change_user_with(
        users: &Users,
        body: &[u8],
        proof: &[u8],
        scramble: &[u8; SCRAMBLE_BYTES],
    ) -> (Result<Login, HandshakeError>, Vec<Vec<u8>>) {
        let packet = |sequence: u8, payload: &[u8]| {
            let mut packet = (payload.len() as u32).to_le_bytes()[..3].to_vec();
            packet.push(sequence);
            packet.extend_from_slice(payload);
            packet
        };
        // The command is packet 0, the server's switch 1, the client's proof 2.
        let mut input = packet(0, &[[command_byte()].as_slice(), body].concat());
        input.extend(packet(2, proof));
        let client = ScriptedClient {
            input: std::io::Cursor::new(input),
            output: Vec::new(),
        };
        let mut stream = PacketStream::new(client);
        let mut command = Vec::new();
        assert!(stream.read_payload(&mut command).unwrap());
        let result = change_user(
            &mut stream,
            users,
            &command[1..],
            scramble,
            capability::SERVER,
        );
        stream.flush().unwrap();
        (result, payloads_of(&stream.get_ref().output))
    }

    fn command_byte() -> u8 {
        crate::protocol::command::CHANGE_USER
    }

    #[test]
    fn change_user_asks_for_a_fresh_proof_and_checks_it() {
        let users = Users::new(vec![User::new("app", "pw"), User::new("root", "")]);
        let scramble = [b's'; SCRAMBLE_BYTES];
        let body = change_user_body("app", "shop");
        let (login, written) =
            change_user_with(&users, &body, &native_proof("pw", &scramble), &scramble);
        let login = login.unwrap();
        assert_eq!(
            (login.user.as_str(), login.database.as_deref()),
            ("app", Some("shop"))
        );
        assert_eq!(written.len(), 1, "the auth switch");
        assert_eq!(written[0][0], AUTH_SWITCH);
        assert!(written[0].windows(SCRAMBLE_BYTES).any(|w| w == scramble));
        // A proof made with another scramble (the connection's first) is refused.
        let stale = native_proof("pw", &[b'o'; SCRAMBLE_BYTES]);
        let (refused, _) = change_user_with(&users, &body, &stale, &scramble);
        assert!(matches!(refused, Err(HandshakeError::AccessDenied { .. })));
        // No database named; an empty password.
        let (root, _) = change_user_with(&users, &change_user_body("root", ""), &[], &scramble);
        assert_eq!(root.unwrap().database, None);
        // A body cut short is malformed, never a panic.
        let (cut, _) = change_user_with(&users, &body[..4], &[], &scramble);
        assert!(cut.is_err());
    }

    #[test]
    fn the_greeting_carries_the_whole_scramble_and_names_the_plugin() {
        let scramble = [b'Z'; SCRAMBLE_BYTES];
        let greeting = greeting(7, "8.0.36-kista", &scramble, capability::SERVER);
        assert_eq!(greeting[0], 10);
        assert!(greeting.ends_with(b"caching_sha2_password\0"));
        let text = String::from_utf8_lossy(&greeting);
        assert!(text.contains("8.0.36-kista"));
        assert_eq!(
            greeting.iter().filter(|&&b| b == b'Z').count(),
            SCRAMBLE_BYTES
        );
    }

    #[test]
    fn tls_is_offered_only_with_a_certificate_and_an_ssl_request_is_told_apart() {
        let mut client = PacketStream::new(ScriptedClient {
            input: std::io::Cursor::new(Vec::new()),
            output: Vec::new(),
        });
        greet(&mut client, 1, "8.0.36-kista", true).unwrap();
        greet(&mut client, 2, "8.0.36-kista", false).unwrap();
        let sent = &client.get_ref().output;
        // The lower capability bytes follow the version, the id and 9 bytes of scramble.
        let capabilities_at = |packet: &[u8]| {
            let at = 4 + 1 + "8.0.36-kista".len() + 1 + 4 + 9;
            u16::from_le_bytes([packet[at], packet[at + 1]]) as u32
        };
        let first_length = usize::from(sent[0]) + 4;
        assert_ne!(capabilities_at(sent) & capability::SSL, 0, "offered");
        assert_eq!(capabilities_at(&sent[first_length..]) & capability::SSL, 0);

        let mut ssl_request = Vec::new();
        put_u32(&mut ssl_request, capability::PROTOCOL_41 | capability::SSL);
        ssl_request.extend_from_slice(&[0; 28]);
        assert!(asks_for_tls(&ssl_request).unwrap());
        let login = response("app", b"proof", None, NATIVE_PASSWORD);
        assert!(!asks_for_tls(&login).unwrap());
        assert!(asks_for_tls(&[1, 2]).is_err(), "short");
    }

    #[test]
    fn a_response_names_user_proof_database_and_plugin() {
        let parsed =
            parse_response(&response("app", b"proof", Some("shop"), NATIVE_PASSWORD)).unwrap();
        assert_eq!(parsed.user, "app");
        assert_eq!(parsed.proof, b"proof");
        assert_eq!(parsed.database.as_deref(), Some("shop"));
        assert_eq!(parsed.plugin, NATIVE_PASSWORD);
        assert!(parse_response(&[1, 2, 3]).is_err(), "short");
    }

    #[test]
    fn random_bytes_as_a_handshake_answer_are_refused_never_a_panic() {
        let mut rng = fastrand::Rng::with_seed(5);
        let valid = response("app", b"proof", Some("shop"), NATIVE_PASSWORD);
        for _ in 0..20_000 {
            let mut bytes: Vec<u8> = if rng.bool() {
                (0..rng.usize(0..64)).map(|_| rng.u8(..)).collect()
            } else {
                // A valid answer cut or with bytes changed.
                let mut bytes = valid[..rng.usize(0..=valid.len())].to_vec();
                for _ in 0..rng.usize(0..4) {
                    if !bytes.is_empty() {
                        let at = rng.usize(0..bytes.len());
                        bytes[at] = rng.u8(..);
                    }
                }
                bytes
            };
            bytes.truncate(256);
            let _ = parse_response(&bytes);
        }
    }

    #[test]
    fn proofs_of_either_plugin_check_against_the_same_account() {
        let users = Users::new(vec![User::new("app", "pw")]);
        let scramble = [b'x'; SCRAMBLE_BYTES];
        let user = users.find("app").unwrap();
        assert!(user.accepts(NATIVE_PASSWORD, &scramble, &native_proof("pw", &scramble)));
        assert!(user.accepts(
            CACHING_SHA2_PASSWORD,
            &scramble,
            &sha2_proof("pw", &scramble)
        ));
        assert!(users.find("nobody").is_none());
    }
}
