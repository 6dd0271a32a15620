//! CREATE TABLE and CREATE INDEX, translated to the cluster's table and index schemas.
//!
//! Every table gets an ordered index on its primary key, named `PRIMARY` (NDB does the
//! same unless `USING HASH`), so primary-key ranges scan in order. `ENGINE=...`, character
//! sets, comments and other table options are accepted and ignored.
//!
//! A table declared without a primary key gets a hidden one, as NDB does: a last column
//! [`HIDDEN_KEY_COLUMN`] (BIGINT UNSIGNED) numbered from the table's own counter in the
//! catalog. SQL never sees it: no name binds to it, `*` and every listing of columns and
//! indexes leave it out, and INSERT fills it.

pub mod alter;
mod checks;
mod defaults;
pub mod foreign_keys;
mod key_parts;

pub use checks::{BoundChecks, CheckDef};
pub use defaults::ComputedDefaults;
pub use key_parts::PrefixColumn;

use sqlparser::ast::{self, ColumnOption, DataType, TableConstraint};

use kista_client::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_client::types::{Collation, ColumnType, Value};

use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{self, collation_named, Binder};
use crate::sql_type::SqlType;
use crate::table_metadata::{
    ColumnExtras, TableExtras, COLUMN_COMMENT_CHARS_MAX, TABLE_COMMENT_CHARS_MAX,
};
use crate::value::coerce;

/// The name of the ordered index every table has on its primary key.
pub const PRIMARY_INDEX: &str = "PRIMARY";

/// The hidden primary-key column of a table declared without a primary key (NDB's `$PK`).
pub const HIDDEN_KEY_COLUMN: &str = "#hidden_key";

/// Whether a column of that name is a hidden key.
pub fn is_hidden_key(column_name: &str) -> bool {
    column_name == HIDDEN_KEY_COLUMN
}

/// Whether a column of that name is one SQL never sees: the hidden key, or a prefix's
/// column (`key_parts.rs`). SQL's own column names may not start with `#`.
pub fn is_hidden_column(column_name: &str) -> bool {
    column_name.starts_with('#')
}

/// The hidden key's column of a table, if the table was declared without a primary key.
pub fn hidden_key_column(schema: &TableSchema) -> Option<usize> {
    match schema.primary_key.as_slice() {
        [key] if is_hidden_key(&schema.columns[*key].name) => Some(*key),
        _ => None,
    }
}

/// A table definition ready for the catalog (what SQL keeps beyond storage is in the
/// schema's extra metadata).
pub struct TableDefinition {
    pub schema: TableSchema,
    pub indexes: Vec<IndexSchema>,
    /// The AUTO_INCREMENT column and its first value.
    pub auto_increment: Option<(usize, u64)>,
    /// Foreign keys, added once the table exists (`indexes` holds the index each needs).
    pub foreign_keys: Vec<foreign_keys::DeclaredForeignKey>,
}

/// The storage type for a MySQL column type.
pub fn column_type(data_type: &DataType) -> SqlResult<ColumnType> {
    use DataType as D;
    let int = |bytes, signed| ColumnType::Int { bytes, signed };
    let length = |l: &Option<ast::CharacterLength>, default: u64| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => *length,
        Some(ast::CharacterLength::Max) => 65_535,
        None => default,
    };
    Ok(match data_type {
        D::TinyInt(_) | D::Bool | D::Boolean => int(1, true),
        D::TinyIntUnsigned(_) => int(1, false),
        D::SmallInt(_) => int(2, true),
        D::SmallIntUnsigned(_) => int(2, false),
        D::MediumInt(_) | D::Int(_) | D::Integer(_) => int(4, true),
        D::MediumIntUnsigned(_) | D::IntUnsigned(_) | D::IntegerUnsigned(_) => int(4, false),
        D::BigInt(_) => int(8, true),
        D::BigIntUnsigned(_) => int(8, false),
        D::Float(_) | D::Real => ColumnType::Float,
        D::Double(_) | D::DoublePrecision => ColumnType::Double,
        D::Decimal(info) | D::Numeric(info) | D::Dec(info) => {
            let (precision, scale) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                    (*p, u64::try_from(*s).unwrap_or(99))
                }
            };
            decimal(precision, scale)?
        }
        D::Char(l) | D::Character(l) => char_length(length(l, 1), false)?,
        D::Binary(l) => char_length(l.unwrap_or(1), true)?,
        D::Varchar(l) | D::CharacterVarying(l) | D::Nvarchar(l) => {
            ColumnType::varchar(var_length(length(l, 0))?)
        }
        D::Varbinary(l) => ColumnType::VarBinary {
            max_length: var_length(match l {
                Some(ast::BinaryLength::IntegerLength { length }) => *length,
                _ => 65_535,
            })?,
        },
        D::Text | D::TinyText | D::MediumText | D::LongText => ColumnType::TEXT,
        D::Blob(_) | D::TinyBlob | D::MediumBlob | D::LongBlob | D::Bytea => ColumnType::Blob,
        D::Date => ColumnType::Date,
        D::Time(_, _) => ColumnType::Time,
        D::Datetime(_) => ColumnType::DateTime,
        D::Timestamp(_, _) => ColumnType::Timestamp,
        D::Custom(name, modifiers) => synonym_type(&name.to_string(), modifiers)
            .ok_or_else(|| SqlError::not_supported(format!("column type {data_type}")))??,
        other => return Err(SqlError::not_supported(format!("column type {other}"))),
    })
}

/// MySQL's other names for types Kista has (`None`: not one of them): `SERIAL` (whose
/// NOT NULL AUTO_INCREMENT UNIQUE [`create_table`] adds), `LONG` (MEDIUMTEXT), `NCHAR`
/// (CHAR) and `FIXED` (DECIMAL).
fn synonym_type(name: &str, modifiers: &[String]) -> Option<SqlResult<ColumnType>> {
    let number = |position: usize, default: u64| {
        modifiers
            .get(position)
            .map_or(Some(default), |m| m.parse().ok())
    };
    Some(match name.to_ascii_uppercase().as_str() {
        SERIAL => Ok(ColumnType::Int {
            bytes: 8,
            signed: false,
        }),
        "LONG" if modifiers.is_empty() => Ok(ColumnType::TEXT),
        "NCHAR" => match number(0, 1) {
            Some(length) => char_length(length, false),
            None => return None,
        },
        "FIXED" => match (number(0, 10), number(1, 0)) {
            (Some(precision), Some(scale)) => decimal(precision, scale),
            _ => return None,
        },
        _ => return None,
    })
}

/// `SERIAL`: BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE.
const SERIAL: &str = "SERIAL";

fn is_serial(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Custom(name, modifiers)
        if modifiers.is_empty() && name.to_string().eq_ignore_ascii_case(SERIAL))
}

fn decimal(precision: u64, scale: u64) -> SqlResult<ColumnType> {
    if precision > 38 || scale > precision {
        return Err(SqlError::new(
            1426,
            "42000",
            format!("Too-big precision {precision} specified; maximum is 38"),
        ));
    }
    Ok(ColumnType::Decimal {
        precision: precision as u8,
        scale: scale as u8,
    })
}

fn char_length(length: u64, binary: bool) -> SqlResult<ColumnType> {
    if length == 0 || length > 255 {
        return Err(SqlError::new(
            1074,
            "42000",
            format!("Column length too big (max = 255); use BLOB or TEXT instead ({length})"),
        ));
    }
    let length = length as u16;
    Ok(if binary {
        ColumnType::Binary { length }
    } else {
        ColumnType::char(length)
    })
}

fn var_length(length: u64) -> SqlResult<u32> {
    if length == 0 || length > 65_535 {
        return Err(SqlError::new(
            1074,
            "42000",
            format!("Column length too big (max = 65535); use BLOB or TEXT instead ({length})"),
        ));
    }
    Ok(length as u32)
}

/// Translates `CREATE TABLE`; `cluster_name` is the table's name in the cluster.
/// `database_collation` is the default of the table's text where it names none.
pub fn create_table(
    create: &ast::CreateTable,
    cluster_name: String,
    database_collation: Collation,
) -> SqlResult<TableDefinition> {
    if create.query.is_some() || create.like.is_some() || create.clone.is_some() {
        // LIKE is made into the source's own CREATE TABLE before (`admin/schema.rs`).
        return Err(SqlError::not_supported(
            "CREATE TABLE ... AS SELECT / CLONE",
        ));
    }
    if create.columns.is_empty() {
        return Err(SqlError::new(
            1113,
            "42000",
            "A table must have at least 1 column",
        ));
    }
    let mut schema = TableSchema {
        extra_metadata: Vec::new(),
        name: cluster_name,
        columns: Vec::new(),
        primary_key: Vec::new(),
    };
    let mut unique_columns = Vec::new();
    let mut auto_increment = None;
    let mut extras = TableExtras {
        comment: table_comment(&create.table_options)?,
        ..TableExtras::default()
    };
    let table_collation = table_collation(&create.table_options, database_collation)?;
    extras.collation = table_collation;
    let mut checks = Vec::new();
    for (position, definition) in create.columns.iter().enumerate() {
        let declared = declared_column(definition, table_collation)?;
        checks.extend(
            declared
                .checks
                .iter()
                .map(|expr| (None, expr.clone(), None)),
        );
        extras.columns.push(declared.extras);
        if declared.primary || declared.unique {
            key_parts::refuse_lob(&declared.column)?;
        }
        if declared.primary {
            schema.primary_key = vec![position];
        }
        if declared.unique {
            unique_columns.push(position);
        }
        if declared.auto_increment {
            auto_increment = Some(position);
        }
        schema.columns.push(declared.column);
    }
    for constraint in &create.constraints {
        if let TableConstraint::Check {
            name,
            expr,
            enforced,
        } = constraint
        {
            checks.push((name.clone(), (**expr).clone(), *enforced));
        }
    }
    let mut indexes = constraint_indexes(&create.constraints, &mut schema, &mut extras)?;
    for column in unique_columns {
        let named = (&schema, &extras);
        let index = named_index(None, IndexKind::Unique, vec![column], named, &indexes);
        indexes.push(index);
    }
    complete_primary_key(&mut schema, &mut indexes, auto_increment)?;
    let declared_keys = foreign_keys::declared_in_create(create)?;
    for key in &declared_keys {
        let columns = foreign_keys::child_columns(key, &schema)?;
        if let Some((name, columns)) = foreign_keys::needed_child_index(key, &columns, &indexes) {
            let named = (&schema, &extras);
            let index = named_index(name, IndexKind::Ordered, columns, named, &indexes);
            extras.key_indexes.push(index.name.clone());
            indexes.push(index);
        }
    }
    defaults::check_computed(&schema, &extras)?;
    let table_name = schema
        .name
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    for (name, expr, enforced) in checks {
        let named = (&schema, table_name.as_str());
        let check = checks::declared(name.as_ref(), &expr, enforced, named, &extras.checks)?;
        extras.checks.push(check);
    }
    schema.extra_metadata = extras.encode(&schema);
    let start = create_table_auto_increment_start(create);
    Ok(TableDefinition {
        schema,
        indexes,
        auto_increment: auto_increment.map(|c| (c, start)),
        foreign_keys: declared_keys,
    })
}

/// A column as its definition declares it, and what its options make of it.
struct DeclaredColumn {
    column: Column,
    /// Its SQL type where storage has none, its comment.
    extras: ColumnExtras,
    /// `PRIMARY KEY` (or `KEY`) on the column.
    primary: bool,
    /// `UNIQUE` on the column (or SERIAL).
    unique: bool,
    auto_increment: bool,
    /// `CHECK (expr)` on the column: table constraints once the table's columns are known.
    checks: Vec<ast::Expr>,
}

fn declared_column(
    definition: &ast::ColumnDef,
    table_collation: Collation,
) -> SqlResult<DeclaredColumn> {
    let name = definition.name.value.clone();
    if is_hidden_column(&name) {
        return Err(SqlError::new(
            1166,
            "42000",
            format!("Incorrect column name '{name}'"),
        ));
    }
    let (sql_type, column_type) = declared_type(definition, table_collation)?;
    let fraction_digits = fraction_digits(&definition.data_type, &name)?;
    let serial = is_serial(&definition.data_type);
    let mut declared = DeclaredColumn {
        column: Column::new(&name, column_type),
        extras: ColumnExtras {
            sql_type,
            fraction_digits,
            ..ColumnExtras::default()
        },
        primary: false,
        unique: serial,
        auto_increment: serial,
        checks: Vec::new(),
    };
    declared.column.nullable = !serial;
    let mut default = None;
    for option in &definition.options {
        match &option.option {
            ColumnOption::Null => declared.column.nullable = true,
            ColumnOption::NotNull => declared.column.nullable = false,
            ColumnOption::Default(expr) => default = Some(expr),
            ColumnOption::Unique {
                is_primary: true, ..
            } => {
                declared.column.nullable = false;
                declared.primary = true;
            }
            ColumnOption::Unique {
                is_primary: false, ..
            } => declared.unique = true,
            ColumnOption::DialectSpecific(tokens)
                if tokens
                    .iter()
                    .any(|t| t.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")) =>
            {
                check_auto_increment(&declared)?;
                declared.auto_increment = true;
            }
            ColumnOption::OnUpdate(expr) => {
                declared.extras.on_update_sql =
                    defaults::on_update(expr, &name, (column_type, fraction_digits))?
            }
            ColumnOption::Check(expr) => declared.checks.push(expr.clone()),
            ColumnOption::Comment(comment) => {
                declared.extras.comment = checked_comment(comment, COLUMN_COMMENT_CHARS_MAX, &name)?
            }
            ColumnOption::CharacterSet(_)
            | ColumnOption::Collation(_)
            | ColumnOption::DialectSpecific(_)
            // Added once the table exists (`foreign_keys.rs`).
            | ColumnOption::ForeignKey { .. } => {}
            other => return Err(SqlError::not_supported(format!("column option {other}"))),
        }
    }
    let typed = (column_type, fraction_digits);
    let computed = (default.map(|e| defaults::computed_default(e, &name, typed)))
        .transpose()?
        .flatten();
    match computed {
        Some(sql) => declared.extras.default_sql = sql,
        None => declared.column.default = column_default(&declared, default)?,
    }
    Ok(declared)
}

/// The digits of a second a TIME, DATETIME or TIMESTAMP column keeps (`DATETIME(3)`): 0
/// to 6, else 1426; 0 for other types.
fn fraction_digits(data_type: &DataType, column: &str) -> SqlResult<u8> {
    let digits = match data_type {
        DataType::Time(digits, _) | DataType::Datetime(digits) | DataType::Timestamp(digits, _) => {
            digits.unwrap_or(0)
        }
        _ => 0,
    };
    if digits > 6 {
        return Err(SqlError::new(
            1426,
            "42000",
            format!("Too big precision {digits} specified for '{column}'. Maximum is 6."),
        ));
    }
    Ok(digits as u8)
}

/// Error 1063 unless the column may be AUTO_INCREMENT (an integer of storage's own).
fn check_auto_increment(declared: &DeclaredColumn) -> SqlResult<()> {
    if declared.extras.sql_type.is_some()
        || !matches!(declared.column.column_type, ColumnType::Int { .. })
    {
        let name = &declared.column.name;
        return Err(SqlError::new(
            1063,
            "42000",
            format!("Incorrect column specifier for column '{name}'"),
        ));
    }
    Ok(())
}

/// A declared column's default: its DEFAULT fitted to its type, or MySQL's implicit one
/// for a NOT NULL ENUM (its first member), else none.
fn column_default(
    declared: &DeclaredColumn,
    default: Option<&ast::Expr>,
) -> SqlResult<Option<Value>> {
    let column = &declared.column;
    let Some(expr) = default else {
        return Ok(match (&declared.extras.sql_type, column.nullable) {
            (Some(SqlType::Enum(members)), false) => {
                Some(Value::Bytes(members[0].as_bytes().to_vec()))
            }
            _ => None,
        });
    };
    fitted_default(column, declared.extras.sql_type.as_ref(), expr)
}

/// A constant DEFAULT fitted to its column (of SQL type `sql_type` where storage has none),
/// else 1067. An explicit DEFAULT NULL is no default, as in MySQL (and SHOW CREATE TABLE
/// prints it as it prints a nullable column without one): `None`.
fn fitted_default(
    column: &Column,
    sql_type: Option<&SqlType>,
    expr: &ast::Expr,
) -> SqlResult<Option<Value>> {
    let value = default_value(expr, &column.name, column.nullable)?;
    let fitted = match sql_type {
        Some(sql_type) => sql_type.coerce(&value, &column.name),
        None => coerce(&value, column.column_type, &column.name),
    };
    let fitted = fitted.map_err(|_| invalid_default(&column.name))?;
    Ok(Some(fitted).filter(|value| !value.is_null()))
}

/// A column's SQL type where storage has none of its own, and the storage type that holds
/// it: text under the column's collation (its own, else the table's), JSON byte-wise.
fn declared_type(
    definition: &ast::ColumnDef,
    table_collation: Collation,
) -> SqlResult<(Option<SqlType>, ColumnType)> {
    let sql_type = SqlType::declared(&definition.data_type, &definition.name.value)?;
    let collation = column_collation(&definition.options)?.unwrap_or(table_collation);
    let column_type = match &sql_type {
        Some(SqlType::Enum(_) | SqlType::Set(_)) | None => {
            let storage_type = match &sql_type {
                Some(sql_type) => sql_type.storage_type(),
                None => column_type(&definition.data_type)?,
            };
            storage_type.with_collation(collation)
        }
        Some(sql_type) => sql_type.storage_type(),
    };
    Ok((sql_type, column_type))
}

/// The collation a column's own `CHARACTER SET` and `COLLATE` give it (`None`: it names
/// neither, and takes the table's).
fn column_collation(options: &[ast::ColumnOptionDef]) -> SqlResult<Option<Collation>> {
    let mut collation = None;
    for option in options {
        match &option.option {
            ColumnOption::CharacterSet(charset) if collation.is_none() => {
                collation = Some(charset_default(&charset.to_string())?);
            }
            ColumnOption::Collation(name) => {
                collation = Some(collation_named(&name.to_string())?);
            }
            _ => {}
        }
    }
    Ok(collation)
}

/// The default collation of a character set: error 1115 for one Kista lacks.
/// The default collation of character set `charset` (1115 for one Kista does not know).
pub(crate) fn charset_default(charset: &str) -> SqlResult<Collation> {
    let charset = charset.trim_matches(['`', '\'', '"']);
    Collation::default_of_charset(charset)
        .ok_or_else(|| SqlError::new(1115, "42000", format!("Unknown character set: '{charset}'")))
}

/// The table's default collation: its `COLLATE`, else its character set's default, else
/// its database's.
fn table_collation(
    options: &ast::CreateTableOptions,
    database_collation: Collation,
) -> SqlResult<Collation> {
    let (mut charset, mut collation) = (None, None);
    for option in table_options(options) {
        if let ast::SqlOption::KeyValue { key, value } = option {
            let value = value.to_string();
            match key.value.to_ascii_uppercase().as_str() {
                "COLLATE" | "DEFAULT COLLATE" => collation = Some(collation_named(&value)?),
                "CHARSET" | "DEFAULT CHARSET" | "CHARACTER SET" | "DEFAULT CHARACTER SET" => {
                    charset = Some(charset_default(&value)?)
                }
                _ => {}
            }
        }
    }
    Ok(collation.or(charset).unwrap_or(database_collation))
}

fn table_options(options: &ast::CreateTableOptions) -> &[ast::SqlOption] {
    match options {
        ast::CreateTableOptions::Plain(options)
        | ast::CreateTableOptions::With(options)
        | ast::CreateTableOptions::Options(options)
        | ast::CreateTableOptions::TableProperties(options) => options.as_slice(),
        ast::CreateTableOptions::None => &[],
    }
}

/// A comment, refused when longer than `chars_max` characters (MySQL's 1628/1629).
fn checked_comment(comment: &str, chars_max: usize, name: &str) -> SqlResult<String> {
    if comment.chars().count() > chars_max {
        let (code, what) = if chars_max == TABLE_COMMENT_CHARS_MAX {
            (1628, "table")
        } else {
            (1629, "field")
        };
        return Err(SqlError::new(
            code,
            "HY000",
            format!("Comment for {what} '{name}' is too long (max = {chars_max})"),
        ));
    }
    Ok(comment.to_string())
}

/// The table's `COMMENT` option ('' without one).
fn table_comment(options: &ast::CreateTableOptions) -> SqlResult<String> {
    let comment = table_options(options)
        .iter()
        .rev()
        .find_map(|option| match option {
            ast::SqlOption::Comment(comment) => Some(comment.to_string()),
            _ => None,
        });
    checked_comment(&comment.unwrap_or_default(), TABLE_COMMENT_CHARS_MAX, "")
}

/// The table's PRIMARY KEY (set in `schema`) and its UNIQUE and KEY/INDEX indexes.
fn constraint_indexes(
    constraints: &[TableConstraint],
    schema: &mut TableSchema,
    extras: &mut TableExtras,
) -> SqlResult<Vec<IndexSchema>> {
    let mut indexes = Vec::new();
    for constraint in constraints {
        let (name, kind, columns) = match constraint {
            TableConstraint::PrimaryKey { columns, .. } => {
                if !schema.primary_key.is_empty() {
                    return Err(SqlError::new(1068, "42000", "Multiple primary key defined"));
                }
                schema.primary_key = key_parts::columns(columns, schema, extras, true)?;
                continue;
            }
            // Checks are bound once the table's columns are all known, and foreign keys
            // added once the table exists (`create_table`).
            TableConstraint::Check { .. } | TableConstraint::ForeignKey { .. } => continue,
            other => index_constraint(other)?,
        };
        let columns = key_parts::columns(columns, schema, extras, true)?;
        let name = name.map(|n| n.value.clone());
        let index = named_index(name, kind, columns, (schema, extras), &indexes);
        indexes.push(index);
    }
    Ok(indexes)
}

/// A UNIQUE or KEY/INDEX constraint's name, kind and key parts; the rest are refused
/// (1235).
fn index_constraint(
    constraint: &TableConstraint,
) -> SqlResult<(Option<&ast::Ident>, IndexKind, &[ast::IndexColumn])> {
    match constraint {
        TableConstraint::Unique {
            name,
            index_name,
            columns,
            ..
        } => Ok((
            index_name.as_ref().or(name.as_ref()),
            IndexKind::Unique,
            columns,
        )),
        TableConstraint::Index { name, columns, .. } => {
            Ok((name.as_ref(), IndexKind::Ordered, columns))
        }
        other => Err(SqlError::not_supported(other)),
    }
}

/// The primary key made whole: a hidden one where none is declared, its columns NOT
/// NULL, its ordered index `PRIMARY` first; the AUTO_INCREMENT column must lead a key.
fn complete_primary_key(
    schema: &mut TableSchema,
    indexes: &mut Vec<IndexSchema>,
    auto_increment: Option<usize>,
) -> SqlResult<()> {
    if schema.primary_key.is_empty() {
        schema.primary_key = vec![schema.columns.len()];
        schema.columns.push(Column::new(
            HIDDEN_KEY_COLUMN,
            ColumnType::Int {
                bytes: 8,
                signed: false,
            },
        ));
    }
    for &key in &schema.primary_key {
        schema.columns[key].nullable = false;
    }
    if let Some(column) = auto_increment {
        let is_key = schema.primary_key.first() == Some(&column)
            || indexes.iter().any(|i| i.columns.first() == Some(&column));
        if !is_key {
            return Err(SqlError::new(1075, "42000", "Incorrect table definition; there can be only one auto column and it must be defined as a key"));
        }
    }
    indexes.insert(
        0,
        IndexSchema {
            name: PRIMARY_INDEX.into(),
            kind: IndexKind::Ordered,
            columns: schema.primary_key.clone(),
        },
    );
    Ok(())
}

fn create_table_auto_increment_start(create: &ast::CreateTable) -> u64 {
    let options = create.table_options.to_string().to_uppercase();
    options
        .split_once("AUTO_INCREMENT")
        .and_then(|(_, rest)| {
            rest.trim_start_matches([' ', '='])
                .split(|c: char| !c.is_ascii_digit())
                .next()
        })
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(1)
}

/// An index named as given, or after its first column (`col`, `col_2`, ... as MySQL; a
/// prefix's column is named after the column it holds the prefix of).
fn named_index(
    name: Option<String>,
    kind: IndexKind,
    columns: Vec<usize>,
    (schema, extras): (&TableSchema, &TableExtras),
    existing: &[IndexSchema],
) -> IndexSchema {
    let name = name.unwrap_or_else(|| {
        let prefixes = PrefixColumn::of(schema, extras);
        let first = (prefixes.iter())
            .find(|prefix| prefix.column == columns[0])
            .map_or(columns[0], |prefix| prefix.source);
        let base = schema.columns[first].name.clone();
        let mut candidate = base.clone();
        let mut n = 2;
        while existing
            .iter()
            .any(|i| i.name.eq_ignore_ascii_case(&candidate))
        {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        candidate
    });
    IndexSchema {
        name,
        kind,
        columns,
    }
}

/// A column's DEFAULT: a constant, not NULL for a NOT NULL column.
fn default_value(expr: &ast::Expr, column: &str, nullable: bool) -> SqlResult<Value> {
    let mut binder = Binder::without_columns(&[], "DEFAULT");
    let bound = expr::bind(&mut binder, expr)?;
    let expr::Expr::Literal(value) = bound else {
        return Err(SqlError::not_supported(format!("DEFAULT {expr}")));
    };
    if value.is_null() && !nullable {
        return Err(invalid_default(column));
    }
    Ok(value)
}

fn invalid_default(column: &str) -> SqlError {
    SqlError::new(
        1067,
        "42000",
        format!("Invalid default value for '{column}'"),
    )
}

/// Translates `CREATE [UNIQUE] INDEX name ON table (columns)` (a prefix only where the
/// table has its column already: adding one to a table is ALTER TABLE's work).
pub fn create_index(create: &ast::CreateIndex, table: &SqlTable) -> SqlResult<IndexSchema> {
    let mut schema = table.schema().clone();
    let mut extras = table.extras.clone();
    let columns = key_parts::columns(&create.columns, &mut schema, &mut extras, false)?;
    let schema = &schema;
    let kind = if create.unique {
        IndexKind::Unique
    } else {
        IndexKind::Ordered
    };
    let name = create
        .name
        .as_ref()
        .map(|n| n.to_string().trim_matches('`').to_string());
    let existing: Vec<IndexSchema> = table.table.indexes().map(|(_, i)| i.clone()).collect();
    let taken = |n: &&String| existing.iter().any(|i| i.name.eq_ignore_ascii_case(n));
    if let Some(taken) = name.as_ref().filter(taken) {
        return Err(SqlError::new(
            1061,
            "42000",
            format!("Duplicate key name '{taken}'"),
        ));
    }
    Ok(named_index(
        name,
        kind,
        columns,
        (schema, &extras),
        &existing,
    ))
}

/// The MySQL type name of a storage type, as SHOW CREATE TABLE and DESCRIBE print it.
pub fn type_name(column_type: ColumnType) -> String {
    match column_type {
        ColumnType::Int { bytes, signed } => {
            let name = match bytes {
                1 => "tinyint",
                2 => "smallint",
                4 => "int",
                _ => "bigint",
            };
            if signed {
                name.to_string()
            } else {
                format!("{name} unsigned")
            }
        }
        ColumnType::Float => "float".into(),
        ColumnType::Double => "double".into(),
        ColumnType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        ColumnType::Char { length, .. } => format!("char({length})"),
        ColumnType::Binary { length } => format!("binary({length})"),
        ColumnType::VarChar { max_length, .. } => format!("varchar({max_length})"),
        ColumnType::VarBinary { max_length } => format!("varbinary({max_length})"),
        ColumnType::Text { .. } => "text".into(),
        ColumnType::Blob => "blob".into(),
        ColumnType::Date => "date".into(),
        ColumnType::Time => "time".into(),
        ColumnType::DateTime => "datetime".into(),
        ColumnType::Timestamp => "timestamp".into(),
    }
}
