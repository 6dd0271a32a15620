//! TLS for MySQL clients: a client that asks for it (an `SSLRequest` in the connection
//! phase, `protocol/handshake.rs`) gets the front end's certificate, and the rest of its
//! connection is encrypted. The certificate and key are PEM files read at start and again
//! whenever either changes (looked at no more than once a second, at a handshake), so a
//! renewed certificate is served without a restart; a pair that no longer loads leaves the
//! last good one in service, with a line in the log.

mod not_after;

pub use not_after::utc_text;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ServerConnection, StreamOwned};

/// How often a handshake looks whether the certificate's files changed.
const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// What `kista sql` was told about TLS.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    /// The certificate chain (PEM), the front end's own first.
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Refuse clients that do not ask for TLS (MySQL's `require_secure_transport`).
    pub require_secure_transport: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The front end's TLS: the configuration every encrypted connection starts from.
pub struct Tls {
    config: Arc<rustls::ServerConfig>,
    certificates: Arc<Certificates>,
    pub require_secure_transport: bool,
}

/// The certificate served now, for those who watch its expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub file: PathBuf,
    /// When it stops being valid, in seconds since 1970-01-01 UTC (`None`: unreadable).
    pub not_after_s: Option<i64>,
}

/// An encrypted connection's stream.
pub type TlsStream<S> = StreamOwned<ServerConnection, S>;

impl Tls {
    pub fn new(options: &TlsOptions) -> Result<Self, TlsError> {
        // ring, not rustls's default aws-lc-rs: it builds in seconds where aws-lc-rs's C
        // takes minutes on a 2-core machine. What it lacks is the post-quantum key exchange
        // (X25519MLKEM768); clients negotiate X25519 instead.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certificates = Arc::new(Certificates::load(&options.cert, &options.key, &provider)?);
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(certificates.clone());
        Ok(Self {
            config: Arc::new(config),
            certificates,
            require_secure_transport: options.require_secure_transport,
        })
    }

    /// The certificate served now (a renewed one once a handshake has read it).
    pub fn served(&self) -> Served {
        Served {
            file: self.certificates.cert_path.clone(),
            not_after_s: self.certificates.current().not_after_s,
        }
    }

    /// Starts TLS on `socket`, whose client asked for it; the TLS handshake runs at the
    /// stream's first read.
    pub(crate) fn accept<S: Read + Write>(&self, socket: S) -> Result<TlsStream<S>, TlsError> {
        let connection = ServerConnection::new(self.config.clone())?;
        Ok(StreamOwned::new(connection, socket))
    }
}

/// A socket whose first bytes were read already (the client's TLS handshake, sent right
/// after its `SSLRequest`): they are read again first.
pub(crate) struct Unread<S> {
    bytes: Vec<u8>,
    at: usize,
    socket: S,
}

impl<S> Unread<S> {
    pub fn new(bytes: Vec<u8>, socket: S) -> Self {
        Self {
            bytes,
            at: 0,
            socket,
        }
    }
}

impl<S: Read> Read for Unread<S> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.at < self.bytes.len() {
            let rest = &self.bytes[self.at..];
            let take = rest.len().min(buffer.len());
            buffer[..take].copy_from_slice(&rest[..take]);
            self.at += take;
            if self.at == self.bytes.len() {
                self.bytes = Vec::new();
                self.at = 0;
            }
            return Ok(take);
        }
        self.socket.read(buffer)
    }
}

impl<S: Write> Write for Unread<S> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.socket.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.socket.flush()
    }
}

/// What an encrypted session runs with (`Ssl_cipher`, `Ssl_version`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    pub cipher: String,
    pub version: String,
}

/// The cipher suite and protocol version `stream` negotiated (its handshake is done: the
/// client's encrypted login has been read).
pub(crate) fn negotiated<S: Read + Write>(stream: &TlsStream<S>) -> Negotiated {
    // TLS 1.3's suites by the names MySQL (OpenSSL) gives them (TLS_AES_256_GCM_SHA384,
    // where rustls says TLS13_AES_256_GCM_SHA384); TLS 1.2's by their IANA names.
    let suite = (stream.conn.negotiated_cipher_suite()).and_then(|suite| suite.suite().as_str());
    let cipher = suite.map_or(String::new(), |name| match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    });
    let version = match stream.conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
        _ => "",
    };
    Negotiated {
        cipher,
        version: version.to_string(),
    }
}

/// The certificate served, and the files it came from.
#[derive(Debug)]
struct Certificates {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Loaded>,
    last_check: Mutex<Instant>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    /// The files' modification times when read.
    stamps: [Option<SystemTime>; 2],
    /// When the front end's certificate expires (`not_after::not_after_s`).
    not_after_s: Option<i64>,
}

impl Certificates {
    fn load(cert: &Path, key: &Path, provider: &Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let loaded = read_pair(cert, key, provider)?;
        Ok(Self {
            cert_path: cert.to_path_buf(),
            key_path: key.to_path_buf(),
            provider: provider.clone(),
            current: RwLock::new(loaded),
            last_check: Mutex::new(Instant::now()),
        })
    }

    /// Reads the pair again if either file changed since it was read.
    fn reload_if_changed(&self) {
        {
            let mut last = self
                .last_check
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.elapsed() < RELOAD_CHECK_INTERVAL {
                return;
            }
            *last = Instant::now();
        }
        let stamps = [modified(&self.cert_path), modified(&self.key_path)];
        if stamps == self.current().stamps {
            return;
        }
        match read_pair(&self.cert_path, &self.key_path, &self.provider) {
            Ok(loaded) => {
                crate::log_line(
                    kista_log::Level::Info,
                    format!("TLS certificate {} read again", self.cert_path.display()),
                );
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = loaded;
            }
            Err(error) => crate::log_line(
                kista_log::Level::Warn,
                format!("TLS certificate not reloaded, the last one serves on: {error}"),
            ),
        }
    }

    fn current(&self) -> std::sync::RwLockReadGuard<'_, Loaded> {
        self.current.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.reload_if_changed();
        Some(self.current().key.clone())
    }
}

fn read_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<Loaded, TlsError> {
    let stamps = [modified(cert), modified(key)];
    let file_error = |path: &Path, reason: String| TlsError::File {
        path: path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|e| file_error(cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(file_error(cert, "holds no certificate".into()));
    }
    let not_after_s = not_after::not_after_s(&chain[0]);
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e.to_string()))?;
    let key = CertifiedKey::from_der(chain, private, provider)
        .map_err(|e| file_error(key, format!("not the certificate's key: {e}")))?;
    Ok(Loaded {
        key: Arc::new(key),
        stamps,
        not_after_s,
    })
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_read_past_a_request_come_first_then_the_socket() {
        let socket = std::io::Cursor::new(b"rest".to_vec());
        let mut unread = Unread::new(b"client hello ".to_vec(), socket);
        let mut first = [0u8; 5];
        assert_eq!(unread.read(&mut first).unwrap(), 5);
        assert_eq!(&first, b"clien");
        let mut all = Vec::new();
        unread.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"t hello rest");
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused_at_start() {
        let dir = std::env::temp_dir().join(format!("kista-sql-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, "not a certificate").unwrap();
        std::fs::write(&key, "not a key").unwrap();
        let options = TlsOptions {
            cert,
            key,
            require_secure_transport: false,
        };
        let refused = Tls::new(&options)
            .err()
            .expect("no certificate in the file");
        assert!(refused.to_string().contains("cert.pem"), "{refused}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
