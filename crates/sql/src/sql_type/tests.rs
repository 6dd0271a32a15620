use super::*;

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

fn declared(sql: &str) -> SqlResult<Option<SqlType>> {
    let statement = format!("CREATE TABLE t (c {sql})");
    let parsed =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::MySqlDialect {}, &statement)
            .expect("parses");
    let sqlparser::ast::Statement::CreateTable(create) = &parsed[0] else {
        panic!("not a CREATE TABLE");
    };
    SqlType::declared(&create.columns[0].data_type, "c")
}

fn code_of<T>(result: SqlResult<T>) -> u16 {
    result.err().map_or(0, |e| e.code)
}

#[test]
fn the_types_storage_lacks_are_recognised_and_others_left_to_storage() {
    assert_eq!(declared("YEAR").unwrap(), Some(SqlType::Year));
    assert_eq!(declared("YEAR(4)").unwrap(), Some(SqlType::Year));
    assert_eq!(declared("BIT").unwrap(), Some(SqlType::Bit(1)));
    assert_eq!(declared("BIT(12)").unwrap(), Some(SqlType::Bit(12)));
    assert_eq!(declared("JSON").unwrap(), Some(SqlType::Json));
    assert_eq!(
        declared("ENUM('a ', 'b')").unwrap(),
        Some(SqlType::Enum(vec!["a".into(), "b".into()].into()))
    );
    assert_eq!(declared("INT").unwrap(), None);
    assert_eq!(declared("VARCHAR(3)").unwrap(), None);
}

#[test]
fn impossible_declarations_get_mysqls_errors() {
    assert_eq!(code_of(declared("YEAR(2)")), 1818);
    assert_eq!(code_of(declared("BIT(0)")), 1439);
    assert_eq!(code_of(declared("BIT(65)")), 1439);
    assert_eq!(code_of(declared("ENUM('a', 'A')")), 1291);
    assert_eq!(code_of(declared("SET('a', 'b', 'a')")), 1291);
    assert_eq!(code_of(declared("SET('a,b')")), 1367);
    let many = (0..65)
        .map(|i| format!("'m{i}'"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(code_of(declared(&format!("SET({many})"))), 1097);
}

#[test]
fn years_follow_mysqls_two_digit_rules() {
    let year = |v: Value| SqlType::Year.coerce(&v, "y");
    assert_eq!(year(Value::Int(2024)).unwrap(), Value::UInt(2024));
    assert_eq!(year(Value::Int(24)).unwrap(), Value::UInt(2024));
    assert_eq!(year(Value::Int(70)).unwrap(), Value::UInt(1970));
    assert_eq!(year(Value::Int(0)).unwrap(), Value::UInt(0));
    assert_eq!(year(text("0")).unwrap(), Value::UInt(2000));
    assert_eq!(year(text("0000")).unwrap(), Value::UInt(0));
    assert_eq!(year(text("99")).unwrap(), Value::UInt(1999));
    assert_eq!(year(text(" 2155 ")).unwrap(), Value::UInt(2155));
    assert_eq!(code_of(year(Value::Int(1900))), 1264);
    assert_eq!(code_of(year(Value::Int(2156))), 1264);
    assert_eq!(code_of(year(text("soon"))), 1366);
    assert_eq!(year(Value::Null).unwrap(), Value::Null);
}

#[test]
fn enum_values_are_members_named_in_any_case_or_numbered_from_one() {
    let states = SqlType::Enum(vec!["new".into(), "Done".into()].into());
    assert_eq!(states.coerce(&text("DONE"), "s").unwrap(), text("Done"));
    assert_eq!(states.coerce(&text("new  "), "s").unwrap(), text("new"));
    assert_eq!(states.coerce(&Value::Int(2), "s").unwrap(), text("Done"));
    assert_eq!(code_of(states.coerce(&text("lost"), "s")), 1265);
    assert_eq!(code_of(states.coerce(&text(""), "s")), 1265);
    assert_eq!(code_of(states.coerce(&Value::Int(0), "s")), 1265);
    assert_eq!(code_of(states.coerce(&Value::Int(3), "s")), 1265);
    assert_eq!(states.storage_type(), ColumnType::varchar(4));
}

#[test]
fn set_values_keep_the_declared_order_and_drop_repeats() {
    let flags = SqlType::Set(vec!["a".into(), "b".into(), "c".into()].into());
    assert_eq!(flags.coerce(&text("c,A,c"), "f").unwrap(), text("a,c"));
    assert_eq!(flags.coerce(&text(""), "f").unwrap(), text(""));
    assert_eq!(flags.coerce(&Value::Int(6), "f").unwrap(), text("b,c"));
    assert_eq!(code_of(flags.coerce(&text("a,d"), "f")), 1265);
    assert_eq!(code_of(flags.coerce(&Value::Int(8), "f")), 1265);
    assert_eq!(flags.storage_type(), ColumnType::varchar(6));
}

#[test]
fn bit_values_are_numbers_or_big_endian_bytes_that_fit_the_width() {
    let bits = SqlType::Bit(10);
    assert_eq!(
        bits.coerce(&Value::Int(1023), "b").unwrap(),
        Value::UInt(1023)
    );
    assert_eq!(
        bits.coerce(&Value::Bytes(vec![0x02, 0x01]), "b").unwrap(),
        Value::UInt(513)
    );
    assert_eq!(code_of(bits.coerce(&Value::Int(1024), "b")), 1406);
    assert_eq!(code_of(bits.coerce(&Value::Int(-1), "b")), 1406);
    assert_eq!(
        SqlType::Bit(64).coerce(&Value::Int(-1), "b").unwrap(),
        Value::UInt(u64::MAX)
    );
    assert_eq!(bit_bytes(&Value::UInt(513), 10), vec![0x02, 0x01]);
    assert_eq!(bit_bytes(&Value::UInt(1), 1), vec![0x01]);
    assert_eq!(bit_bytes(&Value::UInt(1), 64).len(), 8);
}

#[test]
fn json_values_are_documents_in_normal_form() {
    assert_eq!(
        SqlType::Json
            .coerce(&text(r#"{"b":1,"a":[]}"#), "j")
            .unwrap(),
        text(r#"{"a": [], "b": 1}"#)
    );
    assert_eq!(code_of(SqlType::Json.coerce(&text("{"), "j")), 3140);
    assert_eq!(code_of(SqlType::Json.coerce(&Value::Int(1), "j")), 3140);
}

#[test]
fn types_print_as_show_create_table_prints_them() {
    let quoted = SqlType::Enum(vec!["it's".into(), "b".into()].into());
    assert_eq!(quoted.type_name(), "enum('it''s','b')");
    assert_eq!(SqlType::Bit(3).type_name(), "bit(3)");
    assert_eq!(SqlType::Year.data_type(), "year");
}
