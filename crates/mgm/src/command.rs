//! The management commands, as `kista mgm` sends them and `kista mgmd` reads them. Words are
//! matched without regard to case; a node is named by its id.

use std::fmt;

use kista_transport::faults::LINK_DELAY_MS_MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Every node: role, state, node group, version, address.
    Show,
    /// Every data node's state.
    Status,
    /// One node's state.
    NodeStatus(u8),
    /// Stop one data node; the others take over its work.
    Stop(u8),
    /// Stop one data node and have its process start it again: it restarts into the
    /// cluster, its data copied from the others. With `-n`, the process waits for
    /// `N start` first.
    Restart {
        node: u8,
        wait_for_start: bool,
    },
    /// Start a data node whose process waits after `N restart -n`.
    Start(u8),
    /// A data node's process waiting after `N restart -n` asks whether to start (answers
    /// `start` or, after a second, `waiting`).
    AwaitStart(u8),
    /// Stop every data node, then the management server.
    Shutdown,
    /// The configuration file's text (what data nodes read at start).
    Config,
    /// Lease a client node id for as long as this admin connection lasts, and learn where
    /// the data nodes are (what the client library asks when it connects).
    RegisterClient,
    /// Data memory used and available on every data node.
    ReportMemory,
    /// Drop every signal between two data nodes (both ways), for tests of a split cluster.
    Cut(u8, u8),
    /// Hold every signal between two data nodes this many milliseconds each way.
    Delay(u8, u8, u32),
    /// Undo a `Cut` or `Delay`.
    Heal(u8, u8),
    /// Take an online backup; answered once it is complete.
    StartBackup,
    /// The backups the cluster took, complete or not.
    ShowBackups,
    Help,
}

impl Command {
    /// Whether the answer may take long (a backup of a large database takes minutes):
    /// the client then waits without a time limit.
    pub fn answers_slowly(&self) -> bool {
        matches!(self, Command::StartBackup)
    }
}

pub const HELP: &str = "\
commands:
  show              every node: role, state, node group, version, address
  status            every data node's state (also: all status)
  N status          node N's state
  N stop            stop data node N; its node group's other replicas take over
  N restart [-n]    stop data node N and have its process start it again (it rejoins
                    and gets its data copied back while the cluster runs); with -n the
                    process waits for `N start`
  N start           start data node N, whose process waits after `N restart -n`
  report memory     data memory used and available on every data node (as each
                    reported it within the last heartbeat interval)
  start backup      take an online backup while the cluster serves; answers once it
                    is complete with its id, the GCI it restores, rows and bytes
                    (each data node writes backup/BACKUP-<id>/ in its data directory)
  show backups      the backups taken: id, complete or not, GCI, rows, bytes, nodes
  shutdown          save a last global checkpoint, stop every data node, then
                    the management server
  config            the cluster configuration file
  register client   lease a client node id while this connection lasts (the client
                    library's first request)
  cut N M           drop every signal between data nodes N and M, both ways (a network
                    split for tests; the connections stay open)
  delay N M MS      hold every signal between N and M for MS milliseconds (at most
                    60000) each way
  heal N M          let signals between N and M pass again, undelayed
  help              this list";

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub struct UnknownCommand(String);

impl fmt::Display for UnknownCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown command `{}`\n{HELP}", self.0)
    }
}

impl std::str::FromStr for Command {
    type Err = UnknownCommand;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let command = match words.as_slice() {
            ["show"] => Command::Show,
            ["status"] | ["all", "status"] => Command::Status,
            ["shutdown"] => Command::Shutdown,
            ["config"] => Command::Config,
            ["register", "client"] => Command::RegisterClient,
            ["report", "memory"] | ["all", "report", "memory"] => Command::ReportMemory,
            ["help"] => Command::Help,
            ["start", "backup"] => Command::StartBackup,
            ["show", "backups"] | ["list", "backups"] => Command::ShowBackups,
            ["delay", first, second, ms] => {
                match (first.parse::<u8>(), second.parse::<u8>(), ms.parse::<u32>()) {
                    (Ok(first), Ok(second), Ok(ms)) if ms <= LINK_DELAY_MS_MAX => {
                        Command::Delay(first, second, ms)
                    }
                    _ => return Err(UnknownCommand(text.trim().to_string())),
                }
            }
            [verb @ ("cut" | "heal"), first, second] => {
                let (Ok(first), Ok(second)) = (first.parse::<u8>(), second.parse::<u8>()) else {
                    return Err(UnknownCommand(text.trim().to_string()));
                };
                if *verb == "cut" {
                    Command::Cut(first, second)
                } else {
                    Command::Heal(first, second)
                }
            }
            [node, verb] => match (node.parse::<u8>(), *verb) {
                (Ok(node), "status") => Command::NodeStatus(node),
                (Ok(node), "stop") => Command::Stop(node),
                (Ok(node), "restart") => Command::Restart {
                    node,
                    wait_for_start: false,
                },
                (Ok(node), "start") => Command::Start(node),
                _ => return Err(UnknownCommand(text.trim().to_string())),
            },
            [node, "restart", "-n"] => match node.parse::<u8>() {
                Ok(node) => Command::Restart {
                    node,
                    wait_for_start: true,
                },
                Err(_) => return Err(UnknownCommand(text.trim().to_string())),
            },
            [node, "await", "start"] => match node.parse::<u8>() {
                Ok(node) => Command::AwaitStart(node),
                Err(_) => return Err(UnknownCommand(text.trim().to_string())),
            },
            _ => return Err(UnknownCommand(text.trim().to_string())),
        };
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_without_regard_to_case() {
        assert_eq!("SHOW".parse(), Ok(Command::Show));
        assert_eq!(" all Status ".parse(), Ok(Command::Status));
        assert_eq!("2 stop".parse(), Ok(Command::Stop(2)));
        let restart = |wait_for_start| Command::Restart {
            node: 2,
            wait_for_start,
        };
        assert_eq!("2 Restart".parse(), Ok(restart(false)));
        assert_eq!("2 restart -n".parse(), Ok(restart(true)));
        assert_eq!("2 start".parse(), Ok(Command::Start(2)));
        assert_eq!("3 STATUS".parse(), Ok(Command::NodeStatus(3)));
        assert_eq!("cut 1 2".parse(), Ok(Command::Cut(1, 2)));
        assert_eq!("Heal 2 1".parse(), Ok(Command::Heal(2, 1)));
        assert!("cut 1".parse::<Command>().is_err());
        assert_eq!("delay 1 2 50".parse(), Ok(Command::Delay(1, 2, 50)));
        assert_eq!("Start Backup".parse(), Ok(Command::StartBackup));
        assert_eq!("show backups".parse(), Ok(Command::ShowBackups));
        assert!("start backup now".parse::<Command>().is_err());
        assert!("delay 1 2 60001".parse::<Command>().is_err());
    }

    #[test]
    fn an_unknown_command_is_named_and_the_help_follows() {
        let error = "2 explode".parse::<Command>().unwrap_err().to_string();
        assert!(error.starts_with("unknown command `2 explode`"), "{error}");
        assert!(error.contains("N stop"), "{error}");
        assert!("300 stop".parse::<Command>().is_err());
    }
}
