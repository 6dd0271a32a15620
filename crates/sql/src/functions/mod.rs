//! The registry of native functions: one [`FunctionDef`] per function says its names, how
//! many arguments it takes, what type it returns and how it runs. Binding looks a name up
//! here ([`lookup`]), evaluation runs the definition ([`call`]), result typing reads it
//! ([`Returns`]): adding a function is adding one definition to its family's list.
//!
//! Families, one module each: `control` (IF, COALESCE, GREATEST, ...), `session`
//! (DATABASE(), USER(), ...), `string`, `numeric`, `time` (with `time_format` for
//! DATE_FORMAT and STR_TO_DATE), `json`.

mod control;
mod json;
mod numeric;
mod session;
mod string;
mod time;
mod time_format;

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::sync::OnceLock;

use kista_client::types::{ColumnType, Value};

use crate::error::{SqlError, SqlResult};
use crate::expr::{eval, EvalContext, Expr};

pub use string::{TRIM_LEADING, TRIM_TRAILING};
pub use time::{interval_unit, DATE_ADD, DATE_SUB};

/// One native function.
pub struct FunctionDef {
    /// Its names: the first is the one errors and EXPLAIN show, the others are synonyms.
    pub names: &'static [&'static str],
    pub arity: RangeInclusive<usize>,
    pub returns: Returns,
    /// Whether its value changes between calls with the same arguments (the clock, the
    /// session's last insert id): such a call is never taken for a constant.
    pub volatile: bool,
    pub on_binary: OnBinary,
    pub eval: Eval,
}

/// What a string function does where an argument is a binary string (it derives the
/// binary collation: a BINARY, VARBINARY or BLOB column, `_binary'...'`), as MySQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnBinary {
    /// The same as on text (it reads bytes, or no string).
    AsOnText,
    /// Positions and lengths count bytes: it runs on the string read one byte per
    /// character, and its text result is written back one byte per character.
    CountsBytes,
    /// Gives its first argument as it is (UPPER, LOWER: bytes have no letter case).
    Unchanged,
}

/// How a function runs.
#[derive(Clone, Copy)]
pub enum Eval {
    /// NULL in, NULL out: runs on its arguments' values when none is NULL.
    Strict(StrictFn),
    /// Sees its arguments unevaluated and evaluates those it needs (IF, COALESCE, ...).
    Lazy(fn(&Args) -> SqlResult<Value>),
}

/// The type of a function's result column where no value shows it.
#[derive(Clone, Copy)]
pub enum Returns {
    Type(ColumnType),
    /// The first argument from this one on whose type is known (IF: from the second).
    ArgumentFrom(usize),
}

/// A function as a bound expression holds it: a handle on its definition, and whether
/// it runs on a binary string ([`OnBinary`]).
#[derive(Clone, Copy)]
pub struct Function(&'static FunctionDef, bool);

impl Function {
    pub fn def(self) -> &'static FunctionDef {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.names[0]
    }

    /// The function as it runs where an argument is a binary string.
    pub fn on_binary(self) -> Function {
        Function(self.0, self.0.on_binary != OnBinary::AsOnText)
    }
}

impl PartialEq for Function {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0) && self.1 == other.1
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A lazy function's arguments: each evaluated when asked for.
pub struct Args<'a> {
    exprs: &'a [Expr],
    row: &'a [Value],
    pub ctx: &'a EvalContext<'a>,
}

impl Args<'_> {
    pub fn len(&self) -> usize {
        self.exprs.len()
    }

    pub fn get(&self, n: usize) -> SqlResult<Value> {
        eval(&self.exprs[n], self.row, self.ctx)
    }

    /// Argument `n` unevaluated (what made it decides how JSON functions take it).
    pub fn expr(&self, n: usize) -> &Expr {
        &self.exprs[n]
    }
}

/// Arguments a strict function's values are held for without allocating.
const INLINE_ARGUMENTS: usize = 4;

/// Runs `function` on `args` over `row`.
pub fn call(
    function: Function,
    args: &[Expr],
    row: &[Value],
    ctx: &EvalContext,
) -> SqlResult<Value> {
    if function.1 {
        return call_on_binary(function.0, args, row, ctx);
    }
    match function.0.eval {
        Eval::Lazy(run) => run(&Args {
            exprs: args,
            row,
            ctx,
        }),
        Eval::Strict(run) if args.len() <= INLINE_ARGUMENTS => {
            let mut values = [const { Value::Null }; INLINE_ARGUMENTS];
            for (value, arg) in values.iter_mut().zip(args) {
                *value = eval(arg, row, ctx)?;
                if value.is_null() {
                    return Ok(Value::Null);
                }
            }
            run(&values[..args.len()], ctx)
        }
        Eval::Strict(run) => {
            let mut values = Vec::with_capacity(args.len());
            for arg in args {
                let value = eval(arg, row, ctx)?;
                if value.is_null() {
                    return Ok(Value::Null);
                }
                values.push(value);
            }
            run(&values, ctx)
        }
    }
}

/// [`call`] of `def` where an argument is a binary string ([`OnBinary`]).
fn call_on_binary(
    def: &'static FunctionDef,
    args: &[Expr],
    row: &[Value],
    ctx: &EvalContext,
) -> SqlResult<Value> {
    let Eval::Strict(run) = def.eval else {
        unreachable!("the registry holds only strict functions that mind binary strings");
    };
    if def.on_binary == OnBinary::Unchanged {
        return eval(&args[0], row, ctx);
    }
    // Each byte a character of its own (U+0000 to U+00FF): counting characters counts
    // bytes, and no byte is lost to a UTF-8 decoding.
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(match eval(arg, row, ctx)? {
            Value::Null => return Ok(Value::Null),
            Value::Bytes(bytes) => Value::Bytes(
                bytes
                    .iter()
                    .map(|&b| char::from(b))
                    .collect::<String>()
                    .into(),
            ),
            other => other,
        });
    }
    Ok(match run(&values, ctx)? {
        // Every character came from one byte, or from a number's digits.
        Value::Bytes(text) => Value::Bytes(
            String::from_utf8_lossy(&text)
                .chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect(),
        ),
        other => other,
    })
}

/// The function SQL names `name` (any case), with `argument_count` arguments: MySQL's
/// errors for a name it does not know (1305) and a wrong count (1582).
pub fn lookup(name: &str, argument_count: usize) -> SqlResult<Function> {
    let lower = name.to_ascii_lowercase();
    let Some(&def) = registry().get(lower.as_str()) else {
        return Err(SqlError::new(
            1305,
            "42000",
            format!("FUNCTION {lower} does not exist"),
        ));
    };
    if !def.arity.contains(&argument_count) {
        return Err(SqlError::new(
            1582,
            "42000",
            format!("Incorrect parameter count in the call to native function '{name}'"),
        ));
    }
    Ok(Function(def, false))
}

/// The function named `name`, which must exist (for the binder's own uses, as CASE's IF).
pub fn named(name: &str) -> Function {
    let def = registry().get(name);
    Function(
        def.unwrap_or_else(|| panic!("no function {name} in the registry")),
        false,
    )
}

fn registry() -> &'static HashMap<&'static str, &'static FunctionDef> {
    static REGISTRY: OnceLock<HashMap<&'static str, &'static FunctionDef>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let families: [&'static [FunctionDef]; 6] = [
            control::FUNCTIONS,
            json::FUNCTIONS,
            session::FUNCTIONS,
            string::FUNCTIONS,
            numeric::FUNCTIONS,
            time::FUNCTIONS,
        ];
        let mut registry = HashMap::new();
        for def in families.into_iter().flatten() {
            let strict = matches!(def.eval, Eval::Strict(_));
            assert!(
                strict || def.on_binary == OnBinary::AsOnText,
                "{} minds binary strings: only a strict function may (call_on_binary)",
                def.names[0]
            );
            for &name in def.names {
                let earlier = registry.insert(name, def);
                assert!(earlier.is_none(), "function {name} is defined twice");
            }
        }
        registry
    })
}

/// A strict function: NULL in, NULL out, the same result for the same arguments.
const fn strict(
    names: &'static [&'static str],
    arity: RangeInclusive<usize>,
    returns: Returns,
    eval: StrictFn,
) -> FunctionDef {
    FunctionDef {
        names,
        arity,
        returns,
        volatile: false,
        on_binary: OnBinary::AsOnText,
        eval: Eval::Strict(eval),
    }
}

/// `def`, doing `on_binary` where its first argument is a binary string.
const fn binary(on_binary: OnBinary, def: FunctionDef) -> FunctionDef {
    FunctionDef { on_binary, ..def }
}

/// A function that evaluates the arguments it needs itself.
const fn lazy(
    names: &'static [&'static str],
    arity: RangeInclusive<usize>,
    returns: Returns,
    eval: fn(&Args) -> SqlResult<Value>,
) -> FunctionDef {
    FunctionDef {
        names,
        arity,
        returns,
        volatile: false,
        on_binary: OnBinary::AsOnText,
        eval: Eval::Lazy(eval),
    }
}

/// A strict function whose value changes between calls with the same arguments (the
/// clock, the session).
const fn volatile(
    names: &'static [&'static str],
    arity: RangeInclusive<usize>,
    returns: Returns,
    eval: StrictFn,
) -> FunctionDef {
    FunctionDef {
        volatile: true,
        ..strict(names, arity, returns, eval)
    }
}

/// What a strict function runs: its arguments' values, none NULL.
type StrictFn = fn(&[Value], &EvalContext) -> SqlResult<Value>;

/// A text result.
fn text(s: impl Into<Vec<u8>>) -> Value {
    Value::Bytes(s.into())
}

/// A value as text, as string functions read their arguments.
fn string_of(value: &Value) -> String {
    String::from_utf8_lossy(&crate::value::to_text(value)).into_owned()
}

/// Integer results are signed BIGINT where no value says more.
const BIGINT: ColumnType = ColumnType::Int {
    bytes: 8,
    signed: true,
};
const BIGINT_UNSIGNED: ColumnType = ColumnType::Int {
    bytes: 8,
    signed: false,
};
/// Text results where no value says more.
const TEXT: ColumnType = crate::sql_type::default_varchar(16_383);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_lower_case_and_found_in_any_case() {
        for (name, def) in registry() {
            assert_eq!(*name, name.to_ascii_lowercase());
            if name.contains(' ') {
                continue; // bound from syntax only, never named by SQL
            }
            assert!(def.names.contains(name));
            assert!(lookup(&name.to_ascii_uppercase(), *def.arity.start()).is_ok());
        }
    }

    #[test]
    fn unknown_names_and_wrong_counts_get_mysql_errors() {
        assert_eq!(lookup("no_such_function", 0).unwrap_err().code, 1305);
        assert_eq!(lookup("ifnull", 3).unwrap_err().code, 1582);
    }
}
