//! Finding a backup's files: each data node wrote its part under its own data directory
//! (`backup/BACKUP-<id>/`), so a restore is given every participant's directory (or a
//! directory above them, such as `kista up --dir`), and checks that every file the
//! manifest names is there before it loads anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kista_datanode::backup_files::{self, Manifest};
use kista_signal::NodeId;

use crate::Failure;

/// How deep under each given directory backup directories are looked for (a cluster's
/// directory, then a node's, then `backup/`, then `BACKUP-<id>`).
const SEARCH_DEPTH_MAX: usize = 4;
/// Directories looked at in all: a path given by mistake (`/`) ends the search with an
/// error instead of walking the whole disk.
const DIRECTORIES_MAX: usize = 10_000;

/// The files of one backup, found.
pub(super) struct BackupFiles {
    pub id: u32,
    pub manifest: Manifest,
    /// (node, ldm instance) → its data and log files.
    pub ldm_files: Vec<((NodeId, u16), PathBuf, PathBuf)>,
}

impl BackupFiles {
    pub fn total_bytes(&self) -> u64 {
        (self.ldm_files.iter())
            .flat_map(|(_, data, log)| [data, log])
            .filter_map(|path| path.metadata().ok())
            .map(|metadata| metadata.len())
            .sum()
    }
}

/// Finds backup `id` (the newest found when `None`) under `paths`, with every file its
/// manifest names.
pub(super) fn find(paths: &[PathBuf], id: Option<u32>) -> Result<BackupFiles, Failure> {
    let mut directories: BTreeMap<u32, Vec<PathBuf>> = BTreeMap::new();
    let mut seen = 0;
    for path in paths {
        if !path.is_dir() {
            return Err(Failure::usage(format!(
                "{}: no such directory",
                path.display()
            )));
        }
        search(path, 0, &mut seen, &mut directories)?;
    }
    let id = match id {
        Some(id) => id,
        None => *directories.keys().next_back().ok_or_else(|| {
            Failure::usage("no backup directory (BACKUP-<id>) under the paths given")
        })?,
    };
    let found = directories.get(&id).ok_or_else(|| {
        Failure::usage(format!("no directory of backup {id} under the paths given"))
    })?;
    let file = |name: &str| found.iter().map(|dir| dir.join(name)).find(|p| p.is_file());
    let manifest_path = (1..=u8::MAX)
        .find_map(|node| file(&manifest_name(id, NodeId(node))))
        .ok_or_else(|| Failure::usage(format!("backup {id} has no manifest in {found:?}")))?;
    let bytes = std::fs::read(&manifest_path)
        .map_err(|e| Failure::runtime(format!("{}: {e}", manifest_path.display())))?;
    let manifest = Manifest::decode(&bytes)
        .map_err(|e| Failure::runtime(format!("{}: {e}", manifest_path.display())))?;
    if manifest.backup_id != id {
        return Err(Failure::runtime(format!(
            "{} is the manifest of backup {}, not {id}",
            manifest_path.display(),
            manifest.backup_id
        )));
    }
    let mut ldm_files = Vec::new();
    let mut missing = Vec::new();
    for &(node, ldms) in &manifest.participants {
        for ldm in 0..ldms {
            let [data, log] = [backup_files::data_path, backup_files::log_path]
                .map(|path_of| file_name(&path_of(id, node, ldm)));
            match (file(&data), file(&log)) {
                (Some(data), Some(log)) => ldm_files.push(((node, ldm), data, log)),
                _ => missing.push(format!("{data}, {log}")),
            }
        }
    }
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "backup {id} needs the files of every data node that took part; missing: {}. \
             Give the backup directory of each data node (or a directory above them all)",
            missing.join("; ")
        )));
    }
    Ok(BackupFiles {
        id,
        manifest,
        ldm_files,
    })
}

/// Records every `BACKUP-<id>` directory under `dir`.
fn search(
    dir: &Path,
    depth: usize,
    seen: &mut usize,
    found: &mut BTreeMap<u32, Vec<PathBuf>>,
) -> Result<(), Failure> {
    *seen += 1;
    if *seen > DIRECTORIES_MAX {
        return Err(Failure::usage(format!(
            "more than {DIRECTORIES_MAX} directories under the paths given: give the \
             backup directories themselves"
        )));
    }
    let id = dir
        .file_name()
        .and_then(|name| name.to_str()?.strip_prefix("BACKUP-")?.parse::<u32>().ok());
    if let Some(id) = id {
        found.entry(id).or_default().push(dir.to_path_buf());
        return Ok(());
    }
    if depth == SEARCH_DEPTH_MAX {
        return Ok(());
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| Failure::runtime(format!("{}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            search(&entry.path(), depth + 1, seen, found)?;
        }
    }
    Ok(())
}

fn manifest_name(id: u32, node: NodeId) -> String {
    file_name(&backup_files::manifest_path(id, node))
}

/// The file's name in a backup directory (the paths the data nodes write are relative to
/// their data directories).
fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_without_every_participants_files_is_refused_by_name() {
        let root = std::env::temp_dir().join(format!("kista-restore-files-{}", std::process::id()));
        let dir = root.join("node-1/backup/BACKUP-4");
        std::fs::create_dir_all(&dir).unwrap();
        let schema = kista_datanode::dict::schema_file::encode(4, 1, std::iter::empty());
        let manifest = Manifest::encode(4, &[(NodeId(1), 1), (NodeId(2), 1)], 4, &schema);
        std::fs::write(dir.join("node-1.manifest"), manifest).unwrap();
        std::fs::write(dir.join("node-1.ldm-0.data"), b"").unwrap();
        std::fs::write(dir.join("node-1.ldm-0.log"), b"").unwrap();
        let refused = find(std::slice::from_ref(&root), None)
            .err()
            .expect("node 2's files are missing");
        assert!(
            refused.message.contains("node-2.ldm-0.data"),
            "{}",
            refused.message
        );
        assert!(find(std::slice::from_ref(&root), Some(5)).is_err());
        let node_2 = root.join("node-2/backup/BACKUP-4");
        std::fs::create_dir_all(&node_2).unwrap();
        std::fs::write(node_2.join("node-2.ldm-0.data"), b"").unwrap();
        std::fs::write(node_2.join("node-2.ldm-0.log"), b"").unwrap();
        let found =
            find(std::slice::from_ref(&root), None).unwrap_or_else(|f| panic!("{}", f.message));
        assert_eq!((found.id, found.ldm_files.len()), (4, 2));
        std::fs::remove_dir_all(root).unwrap();
    }
}
