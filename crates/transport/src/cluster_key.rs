//! The cluster key: a secret every member of a cluster (management server, data nodes, SQL
//! front ends, clients, `kista mgm`) holds, so that a process proves it belongs before it
//! gets a node id, sends a signal or runs a management command.
//!
//! The key is 32 random bytes, kept as 64 hexadecimal digits in a file only its owner may
//! read (`kista up` writes `DIR/cluster.key`). It never travels: each side of a handshake
//! proves it holds the key with an HMAC-SHA-256 over both sides' fresh nonces
//! ([`crate::handshake`]), so a recorded handshake cannot be replayed and a process that
//! answers without the key learns nothing from the exchange.

use std::io::Write;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of key material.
pub const KEY_BYTES: usize = 32;
/// Bytes of a proof (an HMAC-SHA-256).
pub const PROOF_BYTES: usize = 32;
/// Largest key file read: the key's digits and some white space.
const KEY_FILE_BYTES_MAX: u64 = 1024;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cluster key file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cluster key file {path} may be read by other users (mode {mode:o}): \
         run `chmod 600 {path}`"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error(
        "cluster key file {path} does not hold a key: expected {} hexadecimal digits",
        2 * KEY_BYTES
    )]
    Malformed { path: PathBuf },
    #[error("no random bytes for a new cluster key: {0}")]
    Random(String),
}

/// The cluster's shared secret. Its `Debug` form hides the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterKey([u8; KEY_BYTES]);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    /// A new random key.
    pub fn generate() -> Result<Self, KeyError> {
        let mut key = [0u8; KEY_BYTES];
        getrandom::fill(&mut key).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Self(key))
    }

    /// Reads the key at `path`, refusing a file other users may read.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        refuse_exposed(path, &file)?;
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(file, KEY_FILE_BYTES_MAX),
            &mut text,
        )
        .map_err(io)?;
        Self::from_hex(text.trim()).ok_or_else(|| KeyError::Malformed {
            path: path.to_path_buf(),
        })
    }

    /// The key at `path`, or a new one written there (readable by its owner only) if there
    /// is no file yet.
    pub fn load_or_create(path: &Path) -> Result<Self, KeyError> {
        if path.exists() {
            return Self::load(path);
        }
        let key = Self::generate()?;
        key.write_new(path)?;
        Ok(key)
    }

    fn write_new(&self, path: &Path) -> Result<(), KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(io)?;
        writeln!(file, "{}", self.to_hex()).map_err(io)?;
        file.sync_all().map_err(io)
    }

    fn from_hex(text: &str) -> Option<Self> {
        if text.len() != 2 * KEY_BYTES || !text.is_ascii() {
            return None;
        }
        let mut key = [0u8; KEY_BYTES];
        for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let digits = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(digits, 16).ok()?;
        }
        Some(Self(key))
    }

    fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// The proof of holding this key over `parts` (a label and the handshake's bytes).
    pub fn prove(&self, parts: &[&[u8]]) -> [u8; PROOF_BYTES] {
        self.mac(parts).finalize().into_bytes().into()
    }

    /// Whether `proof` is [`ClusterKey::prove`] of `parts`, compared in constant time.
    pub fn verify(&self, parts: &[&[u8]], proof: &[u8]) -> bool {
        self.mac(parts).verify_slice(proof).is_ok()
    }

    fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        for part in parts {
            mac.update(part);
        }
        mac
    }
}

#[cfg(unix)]
fn refuse_exposed(path: &Path, file: &std::fs::File) -> Result<(), KeyError> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = file.metadata().map_err(|source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn refuse_exposed(_: &Path, _: &std::fs::File) -> Result<(), KeyError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kista-key-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir.join("cluster.key")
    }

    #[test]
    fn a_created_key_is_owner_only_and_reads_back_the_same() {
        let path = scratch("created");
        let key = ClusterKey::load_or_create(&path).expect("created");
        assert_eq!(ClusterKey::load_or_create(&path).expect("read"), key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .expect("there")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_ne!(ClusterKey::generate().expect("random"), key);
        assert_eq!(
            format!("{key:?}"),
            "ClusterKey(..)",
            "the bytes never print"
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_key_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let path = scratch("exposed");
        ClusterKey::load_or_create(&path).expect("created");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = ClusterKey::load(&path).expect_err("world-readable");
        assert!(matches!(refused, KeyError::Exposed { mode: 0o644, .. }));
        assert!(refused.to_string().contains("chmod 600"), "{refused}");
    }

    #[test]
    fn a_file_without_a_key_is_refused() {
        let path = scratch("malformed");
        for text in ["", "abc", &"g".repeat(64), &"a".repeat(65), &"é".repeat(32)] {
            let _ = std::fs::remove_file(&path);
            let key = ClusterKey::generate().expect("random");
            key.write_new(&path).expect("written");
            std::fs::write(&path, text).expect("overwritten");
            assert!(
                matches!(ClusterKey::load(&path), Err(KeyError::Malformed { .. })),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_proof_verifies_only_with_the_same_key_and_parts() {
        let key = ClusterKey::generate().expect("random");
        let other = ClusterKey::generate().expect("random");
        let proof = key.prove(&[b"label", b"nonce"]);
        assert!(key.verify(&[b"label", b"nonce"], &proof));
        assert!(!key.verify(&[b"label", b"nonce2"], &proof));
        assert!(!key.verify(&[b"other", b"nonce"], &proof));
        assert!(!other.verify(&[b"label", b"nonce"], &proof));
        assert!(!key.verify(&[b"label", b"nonce"], &proof[..31]));
    }
}
