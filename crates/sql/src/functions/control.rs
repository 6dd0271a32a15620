//! Functions that choose among their arguments: IF, IFNULL, COALESCE, NULLIF, GREATEST,
//! LEAST. All but GREATEST and LEAST evaluate only the arguments they need.

use std::cmp::Ordering;

use kista_client::types::Value;

use super::{lazy, strict, Args, FunctionDef, Returns};
use crate::error::SqlResult;
use crate::value::{compare, truth};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    lazy(&["if"], 3..=3, Returns::ArgumentFrom(1), if_),
    lazy(&["ifnull"], 2..=2, Returns::ArgumentFrom(0), coalesce),
    lazy(
        &["coalesce"],
        1..=usize::MAX,
        Returns::ArgumentFrom(0),
        coalesce,
    ),
    lazy(&["nullif"], 2..=2, Returns::ArgumentFrom(0), nullif),
    strict(
        &["greatest"],
        2..=usize::MAX,
        Returns::ArgumentFrom(0),
        |values, _| Ok(extreme(values, Ordering::Greater)),
    ),
    strict(
        &["least"],
        2..=usize::MAX,
        Returns::ArgumentFrom(0),
        |values, _| Ok(extreme(values, Ordering::Less)),
    ),
];

fn if_(args: &Args) -> SqlResult<Value> {
    if truth(&args.get(0)?) == Some(true) {
        args.get(1)
    } else {
        args.get(2)
    }
}

fn coalesce(args: &Args) -> SqlResult<Value> {
    for n in 0..args.len() {
        let value = args.get(n)?;
        if !value.is_null() {
            return Ok(value);
        }
    }
    Ok(Value::Null)
}

fn nullif(args: &Args) -> SqlResult<Value> {
    let a = args.get(0)?;
    Ok(match compare(&a, &args.get(1)?) {
        Some(Ordering::Equal) => Value::Null,
        _ => a,
    })
}

/// The greatest (or least) of values none of which is NULL.
fn extreme(values: &[Value], wanted: Ordering) -> Value {
    let mut best = &values[0];
    for value in &values[1..] {
        if compare(value, best) == Some(wanted) {
            best = value;
        }
    }
    best.clone()
}
