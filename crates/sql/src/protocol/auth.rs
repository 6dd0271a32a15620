//! Users and the two password plugins MySQL clients speak.
//!
//! The server never keeps a password, only what each plugin needs to check a client's
//! proof of it against a fresh 20-byte nonce (the *scramble*): `mysql_native_password`
//! keeps SHA1(SHA1(password)), `caching_sha2_password` SHA256(SHA256(password)). With the
//! latter a server that "has the password cached" checks the proof at once ("fast auth");
//! this server always has, so it never needs TLS or an RSA key exchange to see a password.

use sha1::Sha1;
use sha2::{Digest, Sha256};

pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2_PASSWORD: &str = "caching_sha2_password";
/// Bytes of a scramble (MySQL's `SCRAMBLE_LENGTH`).
pub const SCRAMBLE_BYTES: usize = 20;

/// Whether a client's proof stands for an empty password: clients send nothing, or one
/// NUL (Connector/J). A real proof may end in a zero byte (one in 256 does): that is no
/// empty one.
pub fn is_empty_proof(proof: &[u8]) -> bool {
    proof.is_empty() || proof == [0]
}

/// One account: the name clients log in with and the hashes of its password.
#[derive(Clone)]
pub struct User {
    pub name: String,
    /// Whether the password is empty: any client's empty proof is accepted.
    empty_password: bool,
    native_stage2: [u8; 20],
    sha2_stage2: [u8; 32],
}

impl User {
    pub fn new(name: &str, password: &str) -> Self {
        let native_stage2: [u8; 20] = Sha1::digest(Sha1::digest(password.as_bytes())).into();
        let sha2_stage2: [u8; 32] = Sha256::digest(Sha256::digest(password.as_bytes())).into();
        Self {
            name: name.to_string(),
            empty_password: password.is_empty(),
            native_stage2,
            sha2_stage2,
        }
    }

    /// An account kept as its hashes (`hashes`), as the accounts table holds it.
    pub fn from_hashes(
        name: &str,
        empty_password: bool,
        native_stage2: [u8; 20],
        sha2_stage2: [u8; 32],
    ) -> Self {
        Self {
            name: name.to_string(),
            empty_password,
            native_stage2,
            sha2_stage2,
        }
    }

    /// What [`User::from_hashes`] takes: whether the password is empty, and each
    /// plugin's hash of it.
    pub fn hashes(&self) -> (bool, [u8; 20], [u8; 32]) {
        (self.empty_password, self.native_stage2, self.sha2_stage2)
    }

    /// Whether `proof`, made by the client with `plugin` from `scramble`, shows the password.
    pub fn accepts(&self, plugin: &str, scramble: &[u8; SCRAMBLE_BYTES], proof: &[u8]) -> bool {
        if is_empty_proof(proof) {
            return self.empty_password;
        }
        match plugin {
            NATIVE_PASSWORD => self.accepts_native(scramble, proof),
            CACHING_SHA2_PASSWORD => self.accepts_sha2(scramble, proof),
            _ => false,
        }
    }

    /// proof = SHA1(pw) XOR SHA1(scramble ++ SHA1(SHA1(pw))).
    fn accepts_native(&self, scramble: &[u8; SCRAMBLE_BYTES], proof: &[u8]) -> bool {
        if proof.len() != 20 {
            return false;
        }
        let mask = Sha1::new()
            .chain_update(scramble)
            .chain_update(self.native_stage2)
            .finalize();
        let stage1: Vec<u8> = proof.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
        constant_time_eq(&Sha1::digest(&stage1), &self.native_stage2)
    }

    /// proof = SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) ++ scramble).
    fn accepts_sha2(&self, scramble: &[u8; SCRAMBLE_BYTES], proof: &[u8]) -> bool {
        if proof.len() != 32 {
            return false;
        }
        let mask = Sha256::new()
            .chain_update(self.sha2_stage2)
            .chain_update(scramble)
            .finalize();
        let stage1: Vec<u8> = proof.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
        constant_time_eq(&Sha256::digest(&stage1), &self.sha2_stage2)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// A fresh nonce: printable bytes, as clients read part of it as a NUL-terminated string.
pub fn new_scramble() -> [u8; SCRAMBLE_BYTES] {
    std::array::from_fn(|_| fastrand::u8(b'!'..=b'~'))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What a client computes from the password (the clients' side of both plugins).
    pub fn native_proof(password: &str, scramble: &[u8]) -> Vec<u8> {
        let stage1 = Sha1::digest(password.as_bytes());
        let stage2 = Sha1::digest(stage1);
        let mask = Sha1::new()
            .chain_update(scramble)
            .chain_update(stage2)
            .finalize();
        stage1.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
    }

    pub fn sha2_proof(password: &str, scramble: &[u8]) -> Vec<u8> {
        let stage1 = Sha256::digest(password.as_bytes());
        let stage2 = Sha256::digest(stage1);
        let mask = Sha256::new()
            .chain_update(stage2)
            .chain_update(scramble)
            .finalize();
        stage1.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
    }

    #[test]
    fn both_plugins_accept_the_right_password_and_refuse_a_wrong_one() {
        let user = User::new("app", "s3cret");
        let scramble = new_scramble();
        assert!(user.accepts(
            NATIVE_PASSWORD,
            &scramble,
            &native_proof("s3cret", &scramble)
        ));
        assert!(!user.accepts(
            NATIVE_PASSWORD,
            &scramble,
            &native_proof("secret", &scramble)
        ));
        assert!(user.accepts(
            CACHING_SHA2_PASSWORD,
            &scramble,
            &sha2_proof("s3cret", &scramble)
        ));
        assert!(!user.accepts(
            CACHING_SHA2_PASSWORD,
            &scramble,
            &sha2_proof("x", &scramble)
        ));
        assert!(
            !user.accepts(NATIVE_PASSWORD, &scramble, b""),
            "an empty proof"
        );
        let other = new_scramble();
        assert!(!user.accepts(NATIVE_PASSWORD, &other, &native_proof("s3cret", &scramble)));
    }

    #[test]
    fn an_empty_password_accepts_only_an_empty_proof() {
        let root = User::new("root", "");
        let scramble = new_scramble();
        assert!(root.accepts(NATIVE_PASSWORD, &scramble, b""));
        assert!(root.accepts(CACHING_SHA2_PASSWORD, &scramble, b"\0"));
        assert!(!root.accepts(NATIVE_PASSWORD, &scramble, &native_proof("x", &scramble)));
    }

    /// One proof in 256 ends in a zero byte; such logins failed with 1045 when the byte
    /// was taken for an empty password's NUL.
    #[test]
    fn a_proof_ending_in_a_zero_byte_is_accepted() {
        let app = User::new("app", "s3cret");
        for (plugin, proof_of) in [
            (
                CACHING_SHA2_PASSWORD,
                sha2_proof as fn(&str, &[u8]) -> Vec<u8>,
            ),
            (NATIVE_PASSWORD, native_proof),
        ] {
            let (scramble, proof) = (0u32..)
                .map(|n| {
                    let scramble: [u8; SCRAMBLE_BYTES] =
                        std::array::from_fn(|i| b'!' + ((n >> (i % 4 * 8)) as u8 + i as u8) % 90);
                    (scramble, proof_of("s3cret", &scramble))
                })
                .find(|(_, proof)| proof.last() == Some(&0))
                .expect("some scramble gives a proof ending in 0");
            assert!(app.accepts(plugin, &scramble, &proof), "{plugin}");
        }
    }
}
