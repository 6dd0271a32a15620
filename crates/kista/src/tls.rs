//! `kista tls`: the cluster's certificate authority and the certificate it signs for the
//! SQL front end, so that MySQL clients reach it over TLS and can verify whom they reach.
//! The authority is made once and kept (`ca.pem`, its key `ca.key` readable by its owner
//! only); the front end's certificate is made anew each run, which is how it is renewed
//! (a running front end reads the new files at its next handshake).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

use crate::Failure;

/// How long the authority's certificate is valid.
const CA_VALID_DAYS: i64 = 3650;
/// The longest a front end's certificate may be made valid for.
const CERTIFICATE_DAYS_MAX: u32 = 3650;
/// The authority's name: a certificate it signed names it as its issuer.
const CA_NAME: &str = "Kista cluster CA";

#[derive(Args, Debug)]
pub struct TlsArgs {
    /// Directory for the files (made if missing): ca.pem and ca.key (the authority, made
    /// once and kept), sql.pem and sql.key (the front end's certificate, made anew).
    #[arg(long, default_value = "kista-data/tls", value_name = "DIR")]
    dir: PathBuf,

    /// A host name or address the front end's certificate is valid for, besides
    /// localhost, 127.0.0.1 and ::1 (repeatable).
    #[arg(long = "host", value_name = "NAME")]
    hosts: Vec<String>,

    /// Days the front end's certificate is valid.
    #[arg(long, default_value_t = 365)]
    days: u32,
}

/// The files a front end serves TLS with, and the authority clients verify it by.
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn run(args: &TlsArgs) -> Result<(), Failure> {
    let files = make(&args.dir, &args.hosts, args.days)?;
    println!("certificate authority: {}", files.ca.display());
    println!(
        "SQL front end: --tls-cert {} --tls-key {}",
        files.cert.display(),
        files.key.display()
    );
    println!(
        "clients verify it with the authority, e.g. mysql --ssl-ca={} --ssl-verify-server-cert",
        files.ca.display()
    );
    Ok(())
}

/// Makes the authority in `dir` unless it is there, then a front end certificate signed by
/// it for `hosts` (and the local names), valid `days`.
pub fn make(dir: &Path, hosts: &[String], days: u32) -> Result<TlsFiles, Failure> {
    if !(1..=CERTIFICATE_DAYS_MAX).contains(&days) {
        return Err(Failure::usage(format!(
            "--days must be 1 to {CERTIFICATE_DAYS_MAX}"
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let files = TlsFiles {
        ca: dir.join("ca.pem"),
        cert: dir.join("sql.pem"),
        key: dir.join("sql.key"),
    };
    let issuer = authority(&files.ca, &dir.join("ca.key"))?;
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    names.extend(hosts.iter().cloned());
    let mut params = CertificateParams::new(names).map_err(|e| Failure::usage(e.to_string()))?;
    params
        .distinguished_name
        .push(DnType::CommonName, "Kista SQL front end");
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    (params.not_before, params.not_after) = validity(i64::from(days));
    let key = KeyPair::generate().map_err(failed)?;
    let certificate = params.signed_by(&key, &issuer).map_err(failed)?;
    write_private(&files.key, &key.serialize_pem())?;
    write_file(&files.cert, &certificate.pem(), false)?;
    Ok(files)
}

/// The authority whose certificate is `ca` and key `ca_key`: read, or made if absent.
fn authority(ca: &Path, ca_key: &Path) -> Result<Issuer<'static, KeyPair>, Failure> {
    let mut params = CertificateParams::new(Vec::new()).map_err(failed)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, CA_NAME);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    if ca.exists() && ca_key.exists() {
        // The issuer a certificate names is the authority's name, key usages and key: all
        // fixed here or read from its key file.
        let pem = std::fs::read_to_string(ca_key)
            .map_err(|e| Failure::runtime(format!("{}: {e}", ca_key.display())))?;
        let key = KeyPair::from_pem(&pem)
            .map_err(|e| Failure::usage(format!("{}: {e}", ca_key.display())))?;
        return Ok(Issuer::new(params, key));
    }
    (params.not_before, params.not_after) = validity(CA_VALID_DAYS);
    let key = KeyPair::generate().map_err(failed)?;
    let certificate = params.self_signed(&key).map_err(failed)?;
    write_private(ca_key, &key.serialize_pem())?;
    write_file(ca, &certificate.pem(), false)?;
    Ok(Issuer::new(params, key))
}

/// From an hour ago (clocks differ a little between machines) for `days`.
fn validity(days: i64) -> (OffsetDateTime, OffsetDateTime) {
    let now = OffsetDateTime::now_utc();
    (now - Duration::hours(1), now + Duration::days(days))
}

fn failed(error: rcgen::Error) -> Failure {
    Failure::runtime(format!("cannot make a certificate: {error}"))
}

/// Writes a private key readable by its owner only (replacing what was there).
fn write_private(path: &Path, text: &str) -> Result<(), Failure> {
    write_file(path, text, true)
}

fn write_file(path: &Path, text: &str, private: bool) -> Result<(), Failure> {
    let failure = |e: std::io::Error| Failure::runtime(format!("{}: {e}", path.display()));
    // Written beside and renamed over: a front end reading the pair never sees half a file.
    let partial = path.with_extension("partial");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    let mut file = options.open(&partial).map_err(failure)?;
    file.write_all(text.as_bytes()).map_err(failure)?;
    file.sync_all().map_err(failure)?;
    std::fs::rename(&partial, path).map_err(failure)
}
