//! Functions about the session and the server: DATABASE(), VERSION(), USER(),
//! CONNECTION_ID(), LAST_INSERT_ID(), FOUND_ROWS(), SLEEP().

use kista_client::types::Value;

use super::{strict, text, volatile, FunctionDef, Returns, BIGINT, BIGINT_UNSIGNED, TEXT};
use crate::error::SqlResult;
use crate::expr::EvalContext;
use crate::value::to_f64;

/// How often SLEEP looks for a KILL QUERY.
const SLEEP_SLICE_MS: u64 = 10;

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    strict(
        &["database", "schema"],
        0..=0,
        Returns::Type(TEXT),
        |_, ctx| Ok(ctx.database.map_or(Value::Null, text)),
    ),
    strict(&["version"], 0..=0, Returns::Type(TEXT), |_, ctx| {
        Ok((ctx.variable)("version").unwrap_or(Value::Null))
    }),
    strict(
        &["user", "current_user", "session_user", "system_user"],
        0..=0,
        Returns::Type(TEXT),
        |_, ctx| Ok(text(format!("{}@%", ctx.user))),
    ),
    strict(
        &["connection_id"],
        0..=0,
        Returns::Type(BIGINT_UNSIGNED),
        |_, ctx| Ok(Value::UInt(u64::from(ctx.connection_id))),
    ),
    volatile(
        &["last_insert_id"],
        0..=0,
        Returns::Type(BIGINT_UNSIGNED),
        |_, ctx| Ok(Value::UInt(ctx.last_insert_id)),
    ),
    volatile(
        &["found_rows"],
        0..=0,
        Returns::Type(BIGINT_UNSIGNED),
        |_, ctx| Ok(Value::UInt(ctx.found_rows)),
    ),
    volatile(&["sleep"], 1..=1, Returns::Type(BIGINT), sleep),
];

/// SLEEP(seconds): 0 after the time, 1 at once when a KILL QUERY or the statement's
/// `max_execution_time` interrupts it, as MySQL.
fn sleep(v: &[Value], ctx: &EvalContext) -> SqlResult<Value> {
    let seconds = to_f64(&v[0]).unwrap_or(0.0).max(0.0);
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds.min(1e9));
    loop {
        if ctx.process.is_some_and(|p| p.interrupted()) {
            return Ok(Value::Int(1));
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(Value::Int(0));
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(SLEEP_SLICE_MS)));
    }
}
