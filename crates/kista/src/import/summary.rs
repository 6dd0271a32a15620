//! What an import did, printed when it ends.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::progress::Progress;
use crate::Failure;

/// What an import did.
pub(super) struct Summary {
    pub rows: u64,
    pub skipped: u64,
    pub rejected: u64,
    pub seconds: f64,
    pub rejects: PathBuf,
}

impl Summary {
    pub(super) fn of(progress: &Progress, rejects: &Path) -> Self {
        let (rows, skipped, rejected) = progress.counts();
        Summary {
            rows,
            skipped,
            rejected,
            seconds: progress.seconds(),
            rejects: rejects.to_path_buf(),
        }
    }

    /// Fails when more records were rejected than allowed.
    pub(super) fn verdict(&self, max_rejects: u64) -> Result<(), Failure> {
        if self.rejected > max_rejects {
            return Err(Failure::runtime(format!(
                "{} records rejected, more than --max-rejects ({max_rejects}): see {}",
                self.rejected,
                self.rejects.display()
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kista import: {} rows loaded in {:.1} s ({:.0} rows/s), {} skipped as loaded \
             before, {} rejected",
            self.rows,
            self.seconds,
            self.rows as f64 / self.seconds.max(0.001),
            self.skipped,
            self.rejected
        )?;
        if self.rejected > 0 {
            write!(f, " (see {})", self.rejects.display())?;
        }
        Ok(())
    }
}
