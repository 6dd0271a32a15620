//! The import's state file: which chunks are committed, so that `--resume` passes over
//! them. Chunks are numbered in the order the files cut into them, which the same files
//! cut the same way (format, header lines, `--batch-rows`) repeat: the file records those
//! too, and a resume with others is refused. Written whole to a new file, then renamed
//! over the old, so that a crash leaves one or the other.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::Plan;
use crate::Failure;

const HEADER: &str = "kista import state 1";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ImportState {
    path: PathBuf,
    /// What the chunk numbers mean: the import's table, files and how they are cut.
    identity: String,
    /// Every chunk below it is committed.
    done_below: u64,
    /// Committed chunks from `done_below` on.
    done_above: BTreeSet<u64>,
}

impl ImportState {
    /// The state `plan` resumes (`--resume`), or a new one.
    pub(super) fn open(plan: &Plan) -> Result<Self, Failure> {
        let mut state = ImportState {
            path: plan.state.clone(),
            identity: identity(plan),
            ..ImportState::default()
        };
        if !plan.resume {
            return Ok(state);
        }
        let text = std::fs::read_to_string(&state.path)
            .map_err(|e| Failure::runtime(format!("--resume: {}: {e}", state.path.display())))?;
        let mut lines = text.lines();
        let wrong =
            |why: &str| Failure::runtime(format!("--resume: {}: {why}", state.path.display()));
        if lines.next() != Some(HEADER) {
            return Err(wrong("not a kista import state file"));
        }
        if lines.next() != Some(state.identity.as_str()) {
            return Err(wrong(
                "it was written for another import (table, files, format or --batch-rows)",
            ));
        }
        let numbers = |line: Option<&str>| -> Result<Vec<u64>, Failure> {
            line.unwrap_or_default()
                .split_whitespace()
                .map(|n| {
                    n.parse()
                        .map_err(|_| wrong("a chunk number is not a number"))
                })
                .collect()
        };
        state.done_below = *numbers(lines.next())?.first().unwrap_or(&0);
        state.done_above = numbers(lines.next())?.into_iter().collect();
        Ok(state)
    }

    pub(super) fn is_done(&self, chunk: u64) -> bool {
        chunk < self.done_below || self.done_above.contains(&chunk)
    }

    pub(super) fn done(&mut self, chunk: u64) {
        self.done_above.insert(chunk);
        while self.done_above.remove(&self.done_below) {
            self.done_below += 1;
        }
    }

    pub(super) fn save(&self) -> Result<(), Failure> {
        let above: Vec<String> = self.done_above.iter().map(u64::to_string).collect();
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n",
            self.identity,
            self.done_below,
            above.join(" ")
        );
        let temporary = self.path.with_extension("new");
        std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, &self.path))
            .map_err(|e| Failure::runtime(format!("{}: {e}", self.path.display())))
    }
}

/// One line naming what chunk numbers mean for `plan`.
fn identity(plan: &Plan) -> String {
    let files: Vec<String> = plan.files.iter().map(|f| f.display().to_string()).collect();
    format!(
        "table={}.{} files={} batch_rows={} skip_lines={} columns={:?} format={:?}",
        plan.database,
        plan.table,
        files.join(","),
        plan.batch_rows,
        plan.skip_lines,
        plan.columns,
        plan.format
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_done_out_of_order_fold_into_a_bound() {
        let mut state = ImportState::default();
        for chunk in [2, 0, 4] {
            state.done(chunk);
        }
        assert_eq!((state.done_below, state.done_above.len()), (1, 2));
        state.done(1);
        assert_eq!(state.done_below, 3);
        assert!(state.is_done(0) && state.is_done(2) && state.is_done(4));
        assert!(!state.is_done(3) && !state.is_done(5));
    }
}
