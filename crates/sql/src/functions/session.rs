//! Functions about the session and the server: DATABASE(), VERSION(), USER(),
//! CONNECTION_ID(), LAST_INSERT_ID().

use kista_client::types::Value;

use super::{text, Eval, FunctionDef, Returns, BIGINT_UNSIGNED, TEXT};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    FunctionDef {
        names: &["database", "schema"],
        arity: 0..=0,
        returns: Returns::Type(TEXT),
        volatile: false,
        eval: Eval::Strict(|_, ctx| Ok(ctx.database.map_or(Value::Null, text))),
    },
    FunctionDef {
        names: &["version"],
        arity: 0..=0,
        returns: Returns::Type(TEXT),
        volatile: false,
        eval: Eval::Strict(|_, ctx| Ok((ctx.variable)("version").unwrap_or(Value::Null))),
    },
    FunctionDef {
        names: &["user", "current_user", "session_user", "system_user"],
        arity: 0..=0,
        returns: Returns::Type(TEXT),
        volatile: false,
        eval: Eval::Strict(|_, ctx| Ok(text(format!("{}@%", ctx.user)))),
    },
    FunctionDef {
        names: &["connection_id"],
        arity: 0..=0,
        returns: Returns::Type(BIGINT_UNSIGNED),
        volatile: false,
        eval: Eval::Strict(|_, ctx| Ok(Value::UInt(u64::from(ctx.connection_id)))),
    },
    FunctionDef {
        names: &["last_insert_id"],
        arity: 0..=0,
        returns: Returns::Type(BIGINT_UNSIGNED),
        volatile: true,
        eval: Eval::Strict(|_, ctx| Ok(Value::UInt(ctx.last_insert_id))),
    },
];
