use super::*;

/// The shape and values `sql` is cut into, or `None` when it is parsed whole.
fn cut(sql: &str) -> Option<(String, Vec<Value>)> {
    let mut shape = String::new();
    let mut values = Vec::new();
    cut_literals(sql, &mut shape, &mut values).then_some((shape, values))
}

fn text(value: &str) -> Value {
    Value::Bytes(value.as_bytes().to_vec())
}

#[test]
fn a_sysbench_insert_is_cut_into_its_shape_and_values() {
    let sql = "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 5012, '683-291', '7-é?#\"--')";
    let (shape, values) = cut(sql).unwrap();
    assert_eq!(
        shape,
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)"
    );
    let expected = [
        Value::Int(0),
        Value::Int(5012),
        text("683-291"),
        text("7-é?#\"--"),
    ];
    assert_eq!(values, expected);
}

#[test]
fn integers_take_the_type_a_literal_gets_and_digits_inside_words_stay() {
    let sql = "replace into `t2` (c1, `c 2`, c3) values (18446744073709551615, 99999999999999999999, 7), (1,2,3)";
    let (shape, values) = cut(sql).unwrap();
    assert_eq!(
        shape,
        "replace into `t2` (c1, `c 2`, c3) values (?, ?, ?), (?,?,?)"
    );
    assert_eq!(values[0], Value::UInt(u64::MAX));
    assert_eq!(values[1], number("99999999999999999999").unwrap());
    assert!(matches!(values[1], Value::Decimal(_)));
    assert_eq!(values[2], Value::Int(7));
}

#[test]
fn what_the_cut_does_not_handle_is_parsed_whole() {
    for sql in [
        "SELECT 1",
        "UPDATE t SET a = 1",
        "/* c */ INSERT INTO t VALUES (1)",
        "INSERT INTO t VALUES (1) -- c",
        "INSERT INTO t VALUES (1) # c",
        "INSERT INTO t VALUES ('it''s')",
        "INSERT INTO t VALUES ('a\\'b')",
        "INSERT INTO t VALUES ('a\\\\')",
        "INSERT INTO t VALUES ('a\\n', 'b')",
        "INSERT INTO t VALUES (\"double\")",
        "INSERT INTO t VALUES (N'national')",
        "INSERT INTO t VALUES (_utf8mb4'x')",
        "INSERT INTO t VALUES (X'0A')",
        "INSERT INTO t VALUES (0x0A)",
        "INSERT INTO t VALUES (1.5)",
        "INSERT INTO t VALUES (1e5)",
        "INSERT INTO t VALUES ('open",
        "INSERT INTO t VALUES (?)",
        "INSERT INTO t VALUES (NULL)",
    ] {
        assert_eq!(cut(sql), None, "{sql}");
    }
}

#[test]
fn a_shape_is_kept_only_when_every_parameter_is_a_row_value() {
    let mut statements = TextStatements::default();
    for (sql, kept) in [
        ("INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y')", true),
        ("INSERT INTO t VALUES (1, DEFAULT, NULL, NOW())", true),
        ("INSERT INTO t VALUES (-1)", false),
        ("INSERT INTO t VALUES (1 + 2)", false),
        ("INSERT INTO t VALUES (CAST('1' AS DECIMAL(10,2)))", false),
        (
            "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
            false,
        ),
        ("INSERT INTO t SELECT 1", false),
        ("INSERT INTO t SELECT a FROM u ORDER BY 1", false),
    ] {
        let (parsed, values) = statements.parse(sql).unwrap();
        assert_eq!(!values.is_empty(), kept, "{sql}");
        assert_eq!(parsed.placeholders.len(), values.len(), "{sql}");
    }
}

#[test]
fn statements_of_one_shape_share_one_parse_and_keep_their_own_values() {
    let mut statements = TextStatements::default();
    let (first, first_values) = statements.parse("INSERT INTO t VALUES (1, 'a')").unwrap();
    let (second, second_values) = statements.parse("INSERT INTO t VALUES (2, 'b')").unwrap();
    assert!(Rc::ptr_eq(&first, &second));
    assert_eq!(first_values, [Value::Int(1), text("a")]);
    assert_eq!(second_values, [Value::Int(2), text("b")]);
}

#[test]
fn a_shape_that_does_not_parse_gives_the_statements_own_error() {
    let mut statements = TextStatements::default();
    let whole = parse("INSERT INTO t VALUES (1,, 'x')").err().unwrap();
    for _ in 0..2 {
        let error = statements
            .parse("INSERT INTO t VALUES (1,, 'x')")
            .err()
            .unwrap();
        assert_eq!(error.message, whole.message);
    }
}

#[test]
fn the_cache_holds_at_most_its_limit_of_shapes() {
    let mut statements = TextStatements::default();
    for table in 0..SHAPES_MAX * 2 + 1 {
        statements
            .parse(&format!("INSERT INTO t{table} VALUES (1)"))
            .unwrap();
        assert!(statements.shapes.len() <= SHAPES_MAX);
    }
    let long = format!("INSERT INTO t VALUES ('{}')", "x".repeat(SHAPE_BYTES_MAX));
    let (_, values) = statements.parse(&long).unwrap();
    assert!(values.is_empty(), "a statement too long is parsed whole");
}
