use proptest::prelude::*;

use super::*;

fn a_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(Value::UInt),
        any::<f32>().prop_map(Value::Float),
        any::<f64>().prop_map(Value::Double),
        (any::<i64>(), 0..39u8).prop_map(|(n, scale)| Value::Decimal(Decimal {
            unscaled: i128::from(n) * 1_000,
            scale
        })),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
        (-719_162..2_932_896i32).prop_map(|d| Value::Date(Date::from_days(d).unwrap())),
        any::<i64>().prop_map(Value::Time),
        (-62_135_596_800_000_000..253_402_300_799_999_999i64)
            .prop_map(|us| Value::DateTime(DateTime::from_micros(us).unwrap())),
        any::<i64>().prop_map(Value::Timestamp),
    ]
}

/// Values compare bitwise for floats, so NaN round-trips too.
fn same(a: &[Value], b: &[Value]) -> bool {
    let mut x = Vec::new();
    let mut y = Vec::new();
    write_values(&mut Writer(&mut x), a);
    write_values(&mut Writer(&mut y), b);
    x == y && a.len() == b.len()
}

proptest! {
    #[test]
    fn values_round_trip(values in proptest::collection::vec(a_value(), 0..20)) {
        let mut bytes = Vec::new();
        write_values(&mut Writer(&mut bytes), &values);
        let mut input = Reader::new(&bytes);
        let decoded = read_values(&mut input).unwrap();
        input.finish().unwrap();
        prop_assert!(same(&values, &decoded));
        prop_assert_eq!(bytes.len(), 4 + values.iter().map(value_bytes).sum::<usize>());
    }

    // A data manager decodes operation after operation into the same values: whatever
    // the previous list held (more, fewer, other types), the next decodes as it was written.
    #[test]
    fn values_decoded_into_a_used_list_are_the_values_written(
        lists in proptest::collection::vec(proptest::collection::vec(a_value(), 0..8), 1..6),
    ) {
        let mut decoded = Vec::new();
        for values in lists {
            let mut bytes = Vec::new();
            write_values(&mut Writer(&mut bytes), &values);
            let mut input = Reader::new(&bytes);
            read_values_into(&mut input, &mut decoded).unwrap();
            input.finish().unwrap();
            prop_assert!(same(&values, &decoded));
        }
    }

    #[test]
    fn arbitrary_bytes_decode_to_an_error_or_a_value_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = read_values(&mut Reader::new(&bytes));
        let _ = read_table_schema(&mut Reader::new(&bytes));
        let _ = read_index_schema(&mut Reader::new(&bytes));
        let _ = read_filter(&mut Reader::new(&bytes));
    }
}

#[test]
fn schemas_round_trip() {
    let schema = TableSchema {
        extra_metadata: br#"{"comment": "kept as it is"}"#.to_vec(),
        name: "orders".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 8,
                    signed: false,
                },
            ),
            Column::new("note", ColumnType::varchar(300))
                .nullable()
                .with_default(Value::Bytes(b"none".to_vec())),
            Column::new(
                "price",
                ColumnType::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
            Column::new("at", ColumnType::Timestamp),
            Column::new("code", ColumnType::char(3)),
            Column::new(
                "title",
                ColumnType::TEXT.with_collation(crate::types::Collation::utf8mb4_general_ci),
            )
            .nullable(),
        ],
        primary_key: vec![0, 4],
    };
    let index = IndexSchema {
        name: "by_at".into(),
        kind: IndexKind::Ordered,
        columns: vec![3, 0],
    };
    let mut bytes = Vec::new();
    write_table_schema(&mut Writer(&mut bytes), &schema);
    write_index_schema(&mut Writer(&mut bytes), &index);
    let mut input = Reader::new(&bytes);
    assert_eq!(read_table_schema(&mut input).unwrap(), schema);
    assert_eq!(read_index_schema(&mut input).unwrap(), index);
    input.finish().unwrap();
}

#[test]
fn filters_round_trip() {
    let filter = Filter::Or(vec![
        Filter::And(vec![
            Filter::Compare {
                column: 1,
                op: CompareOp::Ge,
                value: Value::Int(-3),
            },
            Filter::Not(Box::new(Filter::IsNull(2))),
        ]),
        Filter::Like {
            column: 2,
            pattern: b"a%_".to_vec(),
        },
        Filter::CompareColumns {
            left: 0,
            op: CompareOp::Ne,
            right: 1,
        },
    ]);
    let mut bytes = Vec::new();
    write_filter(&mut Writer(&mut bytes), &filter);
    assert_eq!(read_filter(&mut Reader::new(&bytes)).unwrap(), filter);
}

#[test]
fn hostile_counts_and_nesting_are_refused_without_allocating() {
    let mut bytes = Vec::new();
    Writer(&mut bytes).u32(u32::MAX);
    assert!(matches!(
        read_values(&mut Reader::new(&bytes)),
        Err(CodecError::Invalid { what: "count", .. })
    ));
    let deep = vec![7u8; 10_000];
    assert!(matches!(
        read_filter(&mut Reader::new(&deep)),
        Err(CodecError::Invalid {
            what: "filter nesting",
            ..
        })
    ));
    assert_eq!(
        read_values(&mut Reader::new(&[1, 0, 0, 0, 1, 2])),
        Err(CodecError::Truncated {
            offset: 5,
            needed: 7
        })
    );
    assert!(matches!(
        read_values(&mut Reader::new(&[1, 0, 0, 0, 99])),
        Err(CodecError::UnknownTag { tag: 99, .. })
    ));
}

#[test]
fn a_schema_without_added_columns_keeps_the_first_format_and_one_with_them_the_second() {
    let first = TableSchema {
        extra_metadata: b"sql".to_vec(),
        name: "db/t".into(),
        columns: vec![Column::new(
            "id",
            ColumnType::Int {
                bytes: 4,
                signed: false,
            },
        )],
        primary_key: vec![0],
    };
    let mut bytes = Vec::new();
    write_table_schema(&mut Writer(&mut bytes), &first);
    assert_eq!(
        bytes[..4],
        4u32.to_le_bytes(),
        "format 1 opens with the name's length"
    );
    let mut second = first.clone();
    second.columns.push(
        Column::new("added", ColumnType::varchar(8))
            .nullable()
            .added_with(Value::Bytes(b"x".to_vec())),
    );
    let mut bytes = Vec::new();
    write_table_schema(&mut Writer(&mut bytes), &second);
    assert_eq!(bytes[..6], [0xFF, 0xFF, 0xFF, 0xFF, 2, 0]);
    let mut input = Reader::new(&bytes);
    assert_eq!(read_table_schema(&mut input).unwrap(), second);
    input.finish().unwrap();
    // A format from a newer build is refused by name, never misread.
    bytes[4] = 3;
    assert_eq!(
        read_table_schema(&mut Reader::new(&bytes)),
        Err(CodecError::NewerFormat {
            what: "table definition",
            found: 3,
            newest: SCHEMA_FORMAT_NEWEST
        })
    );
}
