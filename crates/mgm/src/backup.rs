//! `start backup` and `show backups` in the management server: it asks a started data
//! node's dictionary (which passes the request on to the master's) over that node's
//! connection, and the admin thread waits for the answer, which a block of the server's own
//! runtime ([`BackupClient`]) receives and hands over through [`BackupAnswers`].
//!
//! A wait lasts as long as the data node asked stays connected: a backup of a large
//! database takes minutes, and if that node goes the answer cannot come (`show backups`
//! then tells whether the backup completed).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use kista_datanode::backup_files::BackupEntry;
use kista_datanode::protocol::{BackupConf, BackupListConf, DictRef};
use kista_runtime::{Block, Context};
use kista_signal::{BlockId, Signal, TypedSignal};

/// The block of the management server's runtime that receives backup answers.
pub const BACKUP_CLIENT_BLOCK: BlockId = BlockId(17);
/// Answers kept for requests nobody waits for any more (their data node went): past this
/// the oldest are dropped.
const UNCLAIMED_ANSWERS_MAX: usize = 64;
/// How often a waiting admin thread checks that its data node is still connected.
const CONNECTION_CHECK_INTERVAL: Duration = Duration::from_millis(200);

/// What a data node answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Completed(BackupConf),
    Listed(Vec<BackupEntry>),
    Refused { code: u32, message: String },
}

/// Answers by request id, and the admin threads waiting for them.
#[derive(Default)]
pub(crate) struct BackupAnswers {
    answers: Mutex<HashMap<u64, Answer>>,
    arrived: Condvar,
    next_request: AtomicU64,
}

impl BackupAnswers {
    pub fn next_request_id(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn put(&self, request_id: u64, answer: Answer) {
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        if answers.len() >= UNCLAIMED_ANSWERS_MAX {
            if let Some(&oldest) = answers.keys().min() {
                answers.remove(&oldest);
            }
        }
        answers.insert(request_id, answer);
        self.arrived.notify_all();
    }

    /// Waits for request `request_id`'s answer while `connected()` holds; `None` once it
    /// does not.
    pub fn wait(&self, request_id: u64, connected: impl Fn() -> bool) -> Option<Answer> {
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(answer) = answers.remove(&request_id) {
                return Some(answer);
            }
            if !connected() {
                return None;
            }
            answers = self
                .arrived
                .wait_timeout(answers, CONNECTION_CHECK_INTERVAL)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Receives the data nodes' answers to the management server's backup requests.
pub(crate) struct BackupClient {
    pub answers: std::sync::Arc<BackupAnswers>,
}

impl Block for BackupClient {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let section = || ctx.section().map(|b| b.to_vec()).unwrap_or_default();
        if let Ok(conf) = BackupConf::from_signal(signal) {
            self.answers.put(conf.request_id, Answer::Completed(conf));
        } else if let Ok(list) = BackupListConf::from_signal(signal) {
            let entries = BackupEntry::decode_all(&section());
            let answer = match entries {
                Ok(entries) => Answer::Listed(entries),
                Err(message) => Answer::Refused { code: 0, message },
            };
            self.answers.put(list.request_id, answer);
        } else if let Ok(refusal) = DictRef::from_signal(signal) {
            let message = String::from_utf8_lossy(&section()).into_owned();
            let answer = Answer::Refused {
                code: refusal.code,
                message,
            };
            self.answers.put(refusal.request_id, answer);
        }
    }
}

/// `start backup`'s line once the backup completed.
pub(crate) fn completed_line(conf: &BackupConf, elapsed: Duration) -> String {
    format!(
        "Backup {} completed: restores GCI {}; {} rows, {} bytes, in {:.1} s",
        conf.backup_id,
        conf.stop_gci,
        conf.rows,
        conf.bytes,
        elapsed.as_secs_f64()
    )
}

/// `show backups`' lines, oldest first.
pub(crate) fn list_lines(entries: &[BackupEntry]) -> String {
    if entries.is_empty() {
        return "no backups".to_string();
    }
    let lines: Vec<String> = entries
        .iter()
        .map(|entry| {
            let nodes: Vec<String> = entry.participants.iter().map(|n| n.0.to_string()).collect();
            match entry.complete {
                true => format!(
                    "Backup {}: complete, restores GCI {}; {} rows, {} bytes; data nodes {}",
                    entry.backup_id,
                    entry.stop_gci,
                    entry.rows,
                    entry.bytes,
                    nodes.join(", ")
                ),
                false => format!(
                    "Backup {}: incomplete (it failed or never finished); data nodes {}",
                    entry.backup_id,
                    nodes.join(", ")
                ),
            }
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_datanode::cluster::NodeSet;
    use kista_signal::NodeId;

    #[test]
    fn a_wait_ends_with_the_answer_or_once_the_node_is_gone() {
        let answers = BackupAnswers::default();
        let id = answers.next_request_id();
        let conf = BackupConf {
            request_id: id,
            backup_id: 3,
            stop_gci: 9,
            rows: 5,
            bytes: 100,
        };
        answers.put(id, Answer::Completed(conf));
        assert_eq!(answers.wait(id, || true), Some(Answer::Completed(conf)));
        assert_eq!(answers.wait(id + 1, || false), None);
        for extra in 0..100 {
            answers.put(1000 + extra, Answer::Listed(Vec::new()));
        }
        assert!(answers.answers.lock().unwrap().len() <= UNCLAIMED_ANSWERS_MAX);
    }

    #[test]
    fn backups_are_listed_complete_or_not() {
        assert_eq!(list_lines(&[]), "no backups");
        let entry = BackupEntry {
            backup_id: 2,
            complete: true,
            stop_gci: 40,
            rows: 7,
            bytes: 512,
            participants: NodeSet::of([NodeId(1), NodeId(2)]),
        };
        let failed = BackupEntry {
            backup_id: 1,
            complete: false,
            ..entry
        };
        let text = list_lines(&[failed, entry]);
        assert_eq!(
            text,
            "Backup 1: incomplete (it failed or never finished); data nodes 1, 2\n\
             Backup 2: complete, restores GCI 40; 7 rows, 512 bytes; data nodes 1, 2"
        );
    }
}
