//! Client node ids. Every data node answers a client at the node id the client connected
//! with, so a client connected to several data nodes must be the same node to all of them:
//! a read's row from one node's `ldm` and its commit from another node's coordinator must
//! reach the same application. The management server leases each client one id from
//! [`CLIENT_NODE_IDS`] for as long as the admin connection that asked for it stays open,
//! and tells it where the data nodes are ([`Registration`]).

use kista_signal::NodeId;
use kista_transport::CLIENT_NODE_IDS;

/// Which client node ids are leased, and to whom (the holder's address, for `show`).
pub struct ClientLeases {
    /// `[id]` → the holder of the lease.
    holders: Vec<Option<String>>,
    /// Where the search for a free id starts: ids are handed out in turn, so an id just
    /// released (whose old connections a data node may not have closed yet) is the last
    /// to be leased again.
    next: u8,
}

impl Default for ClientLeases {
    fn default() -> Self {
        Self {
            holders: vec![None; 256],
            next: *CLIENT_NODE_IDS.start(),
        }
    }
}

impl ClientLeases {
    /// Leases a free id to `holder`.
    pub fn lease(&mut self, holder: String) -> Result<NodeId, String> {
        let (first, last) = (*CLIENT_NODE_IDS.start(), *CLIENT_NODE_IDS.end());
        let free = (self.next..=last)
            .chain(first..self.next)
            .find(|&id| self.holders[usize::from(id)].is_none())
            .ok_or_else(|| {
                format!(
                    "every client node id ({first}-{last}) is leased; close clients that are \
                     no longer used"
                )
            })?;
        self.holders[usize::from(free)] = Some(holder);
        self.next = if free == last { first } else { free + 1 };
        Ok(NodeId(free))
    }

    pub fn release(&mut self, id: NodeId) {
        self.holders[usize::from(id.0)] = None;
    }

    /// Leased ids with their holders, lowest id first.
    pub fn held(&self) -> impl Iterator<Item = (NodeId, &str)> {
        CLIENT_NODE_IDS.filter_map(|id| {
            let holder = self.holders[usize::from(id)].as_deref()?;
            Some((NodeId(id), holder))
        })
    }
}

/// The answer to `register client`: the client's node id and every data node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    pub client_node: NodeId,
    pub data_nodes: Vec<RegisteredDataNode>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredDataNode {
    pub node: NodeId,
    /// `host:port` clients connect to.
    pub address: String,
    /// Whether the management server sees it connected now.
    pub started: bool,
}

impl Registration {
    /// The text form: `client ID`, then one `data_node ID HOST:PORT STATE` line per node.
    pub fn to_text(&self) -> String {
        let mut text = format!("client {}\n", self.client_node.0);
        for node in &self.data_nodes {
            let state = if node.started {
                "started"
            } else {
                "not_connected"
            };
            text.push_str(&format!(
                "data_node {} {} {state}\n",
                node.node.0, node.address
            ));
        }
        text
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let bad =
            |line: &str| format!("the management server's registration has a bad line `{line}`");
        let mut client_node = None;
        let mut data_nodes = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["client", id] => {
                    let id = id.parse::<u8>().map_err(|_| bad(line))?;
                    if !CLIENT_NODE_IDS.contains(&id) {
                        return Err(bad(line));
                    }
                    client_node = Some(NodeId(id));
                }
                ["data_node", id, address, state] => data_nodes.push(RegisteredDataNode {
                    node: NodeId(id.parse().map_err(|_| bad(line))?),
                    address: (*address).to_string(),
                    started: *state == "started",
                }),
                _ => return Err(bad(line)),
            }
        }
        let client_node = client_node
            .ok_or_else(|| "the management server's registration names no client id".to_string())?;
        if data_nodes.is_empty() {
            return Err("the management server's registration names no data node".into());
        }
        Ok(Self {
            client_node,
            data_nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_leased_in_turn_and_a_released_one_comes_back_last() {
        let mut leases = ClientLeases::default();
        let first = leases.lease("a".into()).unwrap();
        let second = leases.lease("b".into()).unwrap();
        assert_eq!((first, second), (NodeId(64), NodeId(65)));
        leases.release(first);
        assert_eq!(leases.lease("c".into()).unwrap(), NodeId(66));
        let held: Vec<_> = leases.held().map(|(id, holder)| (id.0, holder)).collect();
        assert_eq!(held, vec![(65, "b"), (66, "c")]);
    }

    #[test]
    fn leasing_fails_with_a_reason_once_every_id_is_held() {
        let mut leases = ClientLeases::default();
        for _ in CLIENT_NODE_IDS {
            leases.lease("x".into()).unwrap();
        }
        let error = leases.lease("y".into()).unwrap_err();
        assert!(
            error.contains("every client node id (64-255) is leased"),
            "{error}"
        );
        leases.release(NodeId(200));
        assert_eq!(leases.lease("y".into()).unwrap(), NodeId(200));
    }

    #[test]
    fn a_registration_reads_back_what_was_written() {
        let registration = Registration {
            client_node: NodeId(70),
            data_nodes: vec![
                RegisteredDataNode {
                    node: NodeId(1),
                    address: "127.0.0.1:11861".into(),
                    started: true,
                },
                RegisteredDataNode {
                    node: NodeId(2),
                    address: "10.0.0.2:11860".into(),
                    started: false,
                },
            ],
        };
        assert_eq!(
            Registration::parse(&registration.to_text()),
            Ok(registration)
        );
        assert!(Registration::parse("client 3\ndata_node 1 a:1 started").is_err());
        assert!(Registration::parse("client 70\n").is_err());
        assert!(Registration::parse("client 70\nnonsense").is_err());
    }
}
