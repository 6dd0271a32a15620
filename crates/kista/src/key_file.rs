//! `--key-file`: where a process finds the cluster's key, the one option every process that
//! joins a cluster or talks to its management server shares.

use std::path::{Path, PathBuf};

use clap::Args;
use kista_transport::cluster_key::ClusterKey;

use crate::Failure;

/// The name of the key file `kista up` keeps in its directory.
pub const KEY_FILE_NAME: &str = "cluster.key";

/// Where the client tools look when given no key file: `kista up`'s default directory, so
/// that `kista mgm -e show` works where `kista up` was started.
pub const DEFAULT_KEY_FILE: &str = "kista-data/cluster.key";

#[derive(Args, Debug, Clone, Default)]
pub struct KeyFileArg {
    /// The cluster's key file (kista up keeps it in DIR/cluster.key; readable by its owner
    /// only): this process proves it holds the key before the cluster admits it. Client
    /// tools given none use ./kista-data/cluster.key if it exists; without a key, only a
    /// cluster started without one admits the process.
    #[arg(long = "key-file", value_name = "FILE", env = "KISTA_KEY_FILE")]
    pub key_file: Option<PathBuf>,
}

impl KeyFileArg {
    /// The key a client tool proves: the file given, else [`DEFAULT_KEY_FILE`] if there is
    /// one. A file that cannot serve is a usage error.
    pub fn load(&self) -> Result<Option<ClusterKey>, Failure> {
        let default = Path::new(DEFAULT_KEY_FILE);
        match &self.key_file {
            Some(path) => load(path).map(Some),
            None if default.exists() => load(default).map(Some),
            None => Ok(None),
        }
    }

    /// The key a server (`kista mgmd`, `kista datad`) holds: only the file given, so that a
    /// server never picks a key up from where it happens to be started.
    pub fn load_given(&self) -> Result<Option<ClusterKey>, Failure> {
        self.key_file.as_deref().map(load).transpose()
    }
}

fn load(path: &Path) -> Result<ClusterKey, Failure> {
    ClusterKey::load(path).map_err(Failure::usage)
}
