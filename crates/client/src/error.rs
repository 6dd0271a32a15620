//! What can go wrong, with the node's stable codes and categories.

use kista_datanode::protocol::{ErrorCategory, ErrorCode};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The node refused or aborted the request. `code` is stable (docs/datanode.md).
    #[error("error {code} ({category:?}): {message}")]
    Node {
        code: u32,
        category: ErrorCategory,
        message: String,
    },
    /// The connection closed. For a commit in flight the outcome is unknown.
    #[error("the connection to the node is lost: {0}")]
    ConnectionLost(String),
    /// The request cannot be built (wrong value count, unknown column, value too long).
    #[error("{0}")]
    Usage(String),
}

impl ClientError {
    pub(crate) fn node(code: u32, message: String) -> Self {
        let category =
            ErrorCode::from_u32(code).map_or(ErrorCategory::Permanent, ErrorCode::category);
        ClientError::Node {
            code,
            category,
            message,
        }
    }

    /// The stable numeric code: the node's, or 4009 (NDB: cluster failure) for a lost
    /// connection, or 4257 (bad request) for a request that could not be built.
    pub fn code(&self) -> u32 {
        match self {
            ClientError::Node { code, .. } => *code,
            ClientError::ConnectionLost(_) => 4009,
            ClientError::Usage(_) => ErrorCode::BadRequest as u32,
        }
    }

    pub fn category(&self) -> ErrorCategory {
        match self {
            ClientError::Node { category, .. } => *category,
            ClientError::ConnectionLost(_) => ErrorCategory::UnknownOutcome,
            ClientError::Usage(_) => ErrorCategory::Permanent,
        }
    }

    /// Whether the same request may succeed if retried.
    pub fn is_temporary(&self) -> bool {
        self.category() == ErrorCategory::Temporary
    }
}
