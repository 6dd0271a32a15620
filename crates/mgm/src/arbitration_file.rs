//! The management server's record of the arbitrator's decisions: `arbitration` in its data
//! directory, so a restart of `kista mgmd` does not forget which side of a split won (see
//! `kista_datanode::arbitration`). Each save writes the whole file beside the last
//! (`arbitration.new`), syncs it, renames it over the last and syncs the directory: a crash
//! leaves the one or the other, never a mix.

use std::fs::{self, File};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use kista_datanode::arbitration::{ArbitrationRecord, ArbitrationState, ARBITRATION_FILE};

/// Largest file read back: the state is a few dozen bytes, anything much longer is not it.
const FILE_BYTES_MAX: u64 = 4096;

/// The file, once its directory exists.
pub struct ArbitrationFile {
    path: PathBuf,
    directory: PathBuf,
}

/// What a start found in the file.
pub enum Found {
    /// No file: a new cluster, or a data directory emptied.
    Nothing,
    Saved(ArbitrationState),
    /// A file that cannot be used (why): the arbitrator starts knowing nothing.
    Unusable(String),
}

impl ArbitrationFile {
    /// The record in `data_dir` (created if missing) and what it holds.
    pub fn open(data_dir: &Path) -> Result<(Self, Found), String> {
        fs::create_dir_all(data_dir).map_err(|e| {
            format!(
                "cannot create the management server's data directory {}: {e}",
                data_dir.display()
            )
        })?;
        let file = Self {
            path: data_dir.join(ARBITRATION_FILE.path),
            directory: data_dir.to_path_buf(),
        };
        let found = file.read();
        Ok((file, found))
    }

    fn read(&self) -> Found {
        let mut bytes = Vec::new();
        let read = File::open(&self.path)
            .and_then(|file| file.take(FILE_BYTES_MAX).read_to_end(&mut bytes));
        match read {
            Err(error) if error.kind() == ErrorKind::NotFound => Found::Nothing,
            Err(error) => Found::Unusable(format!("{}: {error}", self.path.display())),
            Ok(_) => match ArbitrationState::decode(&bytes) {
                Ok(state) => Found::Saved(state),
                Err(error) => Found::Unusable(format!("{}: {error}", self.path.display())),
            },
        }
    }
}

impl ArbitrationRecord for ArbitrationFile {
    fn save(&mut self, state: &ArbitrationState) -> Result<(), String> {
        let next = self.path.with_extension("new");
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&next)?;
            file.write_all(&state.encode())?;
            file.sync_all()?;
            fs::rename(&next, &self.path)?;
            File::open(&self.directory)?.sync_all()
        };
        write().map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_datanode::cluster::NodeSet;
    use kista_signal::NodeId;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kista-arbitration-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_saved_state_is_found_again_and_a_damaged_file_is_said() {
        let dir = scratch("saved");
        let (mut file, found) = ArbitrationFile::open(&dir).unwrap();
        assert!(matches!(found, Found::Nothing));
        let state = ArbitrationState {
            winner: Some(NodeSet::of([NodeId(1)])),
            cluster_life: 3,
            stopping: NodeSet::EMPTY,
            members: Some(NodeSet::of([NodeId(1)])),
        };
        file.save(&state).unwrap();
        let (_, found) = ArbitrationFile::open(&dir).unwrap();
        assert!(matches!(found, Found::Saved(saved) if saved == state));

        let mut bytes = fs::read(dir.join("arbitration")).unwrap();
        bytes[20] ^= 0x10;
        fs::write(dir.join("arbitration"), bytes).unwrap();
        let (_, found) = ArbitrationFile::open(&dir).unwrap();
        assert!(matches!(found, Found::Unusable(why) if why.contains("checksum")));
        fs::write(dir.join("arbitration"), vec![0; 10_000]).unwrap();
        let (_, found) = ArbitrationFile::open(&dir).unwrap();
        assert!(
            matches!(found, Found::Unusable(_)),
            "a long file is cut short and refused"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
