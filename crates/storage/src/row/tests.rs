//! Every column type round-trips through the row format; invalid values are refused with the
//! column named.

use proptest::prelude::*;

use super::*;
use crate::schema::{Column, TableSchema};
use crate::types::{Collation, Date, DateTime, Decimal, LOB_BYTES_MAX};

fn int(bytes: u8, signed: bool) -> ColumnType {
    ColumnType::Int { bytes, signed }
}

fn table(columns: Vec<Column>) -> TableSchema {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "t".into(),
        columns,
        primary_key: vec![0],
    };
    schema.validate().unwrap();
    schema
}

fn round_trip(schema: &TableSchema, values: &[Value]) -> Vec<Value> {
    let layout = RowLayout::new(schema);
    let mut fixed = vec![0xAA; layout.fixed_bytes()];
    let mut var = Vec::new();
    layout.encode(values, &mut fixed, &mut var).unwrap();
    assert_eq!(var.len(), layout.var_bytes(values));
    layout.values(&fixed, &var)
}

/// One column of every type, with a value at the edge of its range.
fn every_type() -> Vec<(ColumnType, Value)> {
    let date = Date::new(9999, 12, 31).unwrap();
    vec![
        (int(1, true), Value::Int(-128)),
        (int(1, false), Value::UInt(255)),
        (int(2, true), Value::Int(i64::from(i16::MIN))),
        (int(2, false), Value::UInt(65_535)),
        (int(4, true), Value::Int(i64::from(i32::MAX))),
        (int(4, false), Value::UInt(u64::from(u32::MAX))),
        (int(8, true), Value::Int(i64::MIN)),
        (int(8, false), Value::UInt(u64::MAX)),
        (ColumnType::Float, Value::Float(-1.5e-7)),
        (ColumnType::Double, Value::Double(std::f64::consts::PI)),
        (
            ColumnType::Decimal {
                precision: 38,
                scale: 10,
            },
            Value::Decimal(Decimal {
                unscaled: -(10i128.pow(38) - 1),
                scale: 10,
            }),
        ),
        (ColumnType::char(10), Value::Bytes(b"  lead".to_vec())),
        (
            ColumnType::Binary { length: 4 },
            Value::Bytes(vec![1, 0, 0, 2]),
        ),
        (ColumnType::varchar(300), Value::Bytes(vec![b'v'; 300])),
        (
            ColumnType::VarBinary { max_length: 8 },
            Value::Bytes(vec![0, 255, 0]),
        ),
        (
            ColumnType::TEXT,
            Value::Bytes("ünïcödé text".as_bytes().to_vec()),
        ),
        (
            ColumnType::Blob,
            Value::Bytes(vec![7; LOB_BYTES_MAX as usize]),
        ),
        (ColumnType::Date, Value::Date(Date::new(1, 1, 1).unwrap())),
        (ColumnType::Time, Value::Time(-TIME_US_MAX)),
        (
            ColumnType::DateTime,
            Value::DateTime(DateTime::new(date, 86_399_999_999).unwrap()),
        ),
        (ColumnType::Timestamp, Value::Timestamp(-1)),
    ]
}

#[test]
fn every_column_type_round_trips_at_the_edges_of_its_range() {
    let mut columns = vec![Column::new("id", int(4, false))];
    let mut values = vec![Value::UInt(1)];
    for (index, (column_type, value)) in every_type().into_iter().enumerate() {
        columns.push(Column::new(&format!("c{index}"), column_type));
        values.push(value);
    }
    let schema = table(columns);
    assert_eq!(round_trip(&schema, &values), values);
}

#[test]
fn every_nullable_column_type_round_trips_null() {
    let mut columns = vec![Column::new("id", int(4, false))];
    for (index, (column_type, _)) in every_type().into_iter().enumerate() {
        columns.push(Column::new(&format!("c{index}"), column_type).nullable());
    }
    let mut values = vec![Value::Null; columns.len()];
    values[0] = Value::UInt(9);
    let schema = table(columns);
    assert_eq!(round_trip(&schema, &values), values);
}

#[test]
fn projected_encoding_from_row_bytes_equals_encoding_the_read_values() {
    let mut columns = vec![Column::new("id", int(4, false))];
    let mut values = vec![Value::UInt(1)];
    for (index, (column_type, value)) in every_type().into_iter().enumerate() {
        columns.push(Column::new(&format!("c{index}"), column_type).nullable());
        columns.push(Column::new(&format!("n{index}"), column_type).nullable());
        values.push(value);
        values.push(Value::Null);
    }
    let schema = table(columns);
    let layout = RowLayout::new(&schema);
    let mut fixed = vec![0; layout.fixed_bytes()];
    let mut var = Vec::new();
    layout.encode(&values, &mut fixed, &mut var).unwrap();
    let count = values.len() as u16;
    for projection in [vec![], vec![3, 0, 2], vec![count - 1, count + 5]] {
        let expected: Vec<Value> = if projection.is_empty() {
            values.clone()
        } else {
            projection
                .iter()
                .map(|&c| values.get(usize::from(c)).cloned().unwrap_or(Value::Null))
                .collect()
        };
        let mut want = Vec::new();
        crate::codec::write_values(&mut Writer(&mut want), &expected);
        let mut got = Vec::new();
        layout.write_projected(
            &fixed,
            &var,
            projection.iter().copied(),
            &mut Writer(&mut got),
        );
        assert_eq!(got, want, "projection {projection:?}");
    }
}

#[test]
fn char_pads_with_spaces_and_binary_keeps_its_full_length() {
    let schema = table(vec![
        Column::new("id", int(4, false)),
        Column::new("c", ColumnType::char(5)),
        Column::new("b", ColumnType::Binary { length: 5 }),
    ]);
    let values = [
        Value::UInt(1),
        Value::Bytes(b"ab  ".to_vec()),
        Value::Bytes(b"ab".to_vec()),
    ];
    let read = round_trip(&schema, &values);
    assert_eq!(read[1], Value::Bytes(b"ab".to_vec()));
    assert_eq!(read[2], Value::Bytes(b"ab\0\0\0".to_vec()));
}

#[test]
fn invalid_values_are_refused_naming_the_column_and_leave_the_row_untouched() {
    let schema = table(vec![
        Column::new("id", int(1, true)),
        Column::new("name", ColumnType::varchar(3)),
        Column::new(
            "price",
            ColumnType::Decimal {
                precision: 5,
                scale: 2,
            },
        ),
        Column::new("at", ColumnType::Time).nullable(),
    ]);
    let layout = RowLayout::new(&schema);
    let mut fixed = vec![0x55; layout.fixed_bytes()];
    let mut var = Vec::new();
    let good = || {
        vec![
            Value::Int(1),
            Value::Bytes(b"abc".to_vec()),
            Value::Decimal(Decimal {
                unscaled: 99_999,
                scale: 2,
            }),
            Value::Null,
        ]
    };
    let cases: Vec<(usize, Value, &str)> = vec![
        (0, Value::Int(128), "`id`: 128 is out of range for TINYINT"),
        (0, Value::Null, "`id` is NOT NULL"),
        (
            1,
            Value::Bytes(b"abcd".to_vec()),
            "`name`: a value of 4 bytes exceeds VARCHAR(3)",
        ),
        (
            1,
            Value::Int(3),
            "`name`: a signed integer value does not fit a VARCHAR(3) column",
        ),
        (
            2,
            Value::Decimal(Decimal {
                unscaled: 100_000,
                scale: 2,
            }),
            "`price`: 1000.00 is out of range",
        ),
        (
            2,
            Value::Decimal(Decimal {
                unscaled: 1,
                scale: 3,
            }),
            "`price`: 0.001 is out of range",
        ),
        (3, Value::Time(TIME_US_MAX + 1), "`at`"),
    ];
    for (column, bad, message) in cases {
        let mut values = good();
        values[column] = bad;
        let error = layout.encode(&values, &mut fixed, &mut var).unwrap_err();
        assert!(error.to_string().contains(message), "{error} / {message}");
        assert!(
            fixed.iter().all(|&b| b == 0x55),
            "fixed part written despite the error"
        );
    }
    let error = layout
        .encode(&good()[..2], &mut fixed, &mut var)
        .unwrap_err();
    assert!(matches!(
        error,
        RowError::ColumnCount {
            expected: 4,
            given: 2,
            ..
        }
    ));
    layout.encode(&good(), &mut fixed, &mut var).unwrap();
}

#[test]
fn schemas_that_cannot_exist_are_refused() {
    let key = || Column::new("id", int(4, false));
    let bad = [
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![],
            primary_key: vec![],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![key(), key()],
            primary_key: vec![0],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![key()],
            primary_key: vec![],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![key()],
            primary_key: vec![1],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![key().nullable()],
            primary_key: vec![0],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![Column::new("id", ColumnType::TEXT)],
            primary_key: vec![0],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![
                key(),
                Column::new("x", int(1, true)).with_default(Value::Int(300)),
            ],
            primary_key: vec![0],
        },
        TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns: vec![key(), Column::new("x", ColumnType::char(0))],
            primary_key: vec![0],
        },
        TableSchema {
            extra_metadata: vec![b' '; crate::schema::EXTRA_METADATA_BYTES_MAX + 1],
            name: "t".into(),
            columns: vec![key()],
            primary_key: vec![0],
        },
    ];
    for schema in bad {
        assert!(schema.validate().is_err(), "{schema:?}");
    }
}

fn a_column_type() -> impl Strategy<Value = ColumnType> {
    prop_oneof![
        (
            prop_oneof![Just(1u8), Just(2), Just(4), Just(8)],
            any::<bool>()
        )
            .prop_map(|(bytes, signed)| int(bytes, signed)),
        Just(ColumnType::Float),
        Just(ColumnType::Double),
        (1..=38u8)
            .prop_flat_map(|p| (Just(p), 0..=p))
            .prop_map(|(precision, scale)| ColumnType::Decimal { precision, scale }),
        (1..=20u16).prop_map(ColumnType::char),
        (1..=20u16).prop_map(|length| ColumnType::Binary { length }),
        (1..=40u32).prop_map(ColumnType::varchar),
        (1..=40u32).prop_map(|max_length| {
            ColumnType::varchar(max_length).with_collation(Collation::utf8mb4_0900_ai_ci)
        }),
        (1..=40u32).prop_map(|max_length| ColumnType::VarBinary { max_length }),
        Just(ColumnType::TEXT),
        Just(ColumnType::Blob),
        Just(ColumnType::Date),
        Just(ColumnType::Time),
        Just(ColumnType::DateTime),
        Just(ColumnType::Timestamp),
    ]
}

fn a_value(column_type: ColumnType) -> BoxedStrategy<Value> {
    match column_type {
        ColumnType::Int { bytes, signed } => {
            let (min, max) = integer_range(bytes, signed);
            if signed {
                (min as i64..=max as i64).prop_map(Value::Int).boxed()
            } else {
                (0..=max as u64).prop_map(Value::UInt).boxed()
            }
        }
        ColumnType::Float => any::<f32>()
            .prop_filter("NaN never equals itself", |x| !x.is_nan())
            .prop_map(Value::Float)
            .boxed(),
        ColumnType::Double => any::<f64>()
            .prop_filter("NaN never equals itself", |x| !x.is_nan())
            .prop_map(Value::Double)
            .boxed(),
        ColumnType::Decimal { precision, scale } => {
            let limit = 10i128.pow(u32::from(precision)) - 1;
            (-limit..=limit)
                .prop_map(move |unscaled| Value::Decimal(Decimal { unscaled, scale }))
                .boxed()
        }
        ColumnType::Char { length, .. } => {
            proptest::collection::vec(b'a'..=b'z', 0..=usize::from(length))
                .prop_map(Value::Bytes)
                .boxed()
        }
        ColumnType::Binary { length } => {
            proptest::collection::vec(any::<u8>(), usize::from(length))
                .prop_map(Value::Bytes)
                .boxed()
        }
        ColumnType::Date => (-719_162..=2_932_896i32)
            .prop_map(|d| Value::Date(Date::from_days(d).unwrap()))
            .boxed(),
        ColumnType::Time => (-TIME_US_MAX..=TIME_US_MAX).prop_map(Value::Time).boxed(),
        ColumnType::DateTime => (-62_135_596_800_000_000i64..253_402_300_800_000_000)
            .prop_map(|us| Value::DateTime(DateTime::from_micros(us).unwrap()))
            .boxed(),
        ColumnType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
        _ => proptest::collection::vec(
            any::<u8>(),
            0..=column_type.max_var_bytes().min(64) as usize,
        )
        .prop_map(Value::Bytes)
        .boxed(),
    }
}

fn a_row() -> impl Strategy<Value = (TableSchema, Vec<Value>)> {
    proptest::collection::vec((a_column_type(), any::<bool>()), 1..24).prop_flat_map(|types| {
        let mut columns = vec![Column::new("id", int(8, false))];
        let mut strategies = vec![Just(Value::UInt(1)).boxed()];
        for (index, (column_type, nullable)) in types.into_iter().enumerate() {
            let mut column = Column::new(&format!("c{index}"), column_type);
            let value = a_value(column_type);
            if nullable {
                column = column.nullable();
                strategies.push(prop_oneof![1 => Just(Value::Null), 3 => value].boxed());
            } else {
                strategies.push(value);
            }
            columns.push(column);
        }
        let schema = TableSchema {
            extra_metadata: Vec::new(),
            name: "t".into(),
            columns,
            primary_key: vec![0],
        };
        (Just(schema), strategies)
    })
}

proptest! {
    #[test]
    fn any_row_of_any_table_round_trips((schema, values) in a_row()) {
        schema.validate().unwrap();
        prop_assert_eq!(round_trip(&schema, &values), values);
    }

    /// The index path reads key parts from the row's bytes; they must be the bytes the
    /// column's value encodes to, or index entries and lookups would disagree.
    #[test]
    fn an_ordered_key_part_read_from_a_row_equals_the_part_of_its_value(
        (schema, values) in a_row(),
    ) {
        let layout = RowLayout::new(&schema);
        let mut fixed = vec![0; layout.fixed_bytes()];
        let mut var = Vec::new();
        layout.encode(&values, &mut fixed, &mut var).unwrap();
        for (column, value) in values.iter().enumerate() {
            let mut from_row = vec![7];
            layout.ordered_key_of_column(&fixed, &var, column, &mut from_row);
            let mut from_value = vec![7];
            let column_type = schema.columns[column].column_type;
            crate::ordered_index::encode_ordered(column_type, value, &mut from_value);
            prop_assert_eq!(from_row, from_value, "column {} ({:?})", column, column_type);
        }
    }

    /// The primary hash index keeps no keys and compares a row's key in place: the row
    /// must have exactly the key built from it, and no key differing in a byte or a length.
    #[test]
    fn a_row_has_exactly_the_primary_key_built_from_it(
        (mut schema, values) in a_row(),
        key_columns in proptest::collection::vec(0..8usize, 1..4),
        flipped in any::<prop::sample::Index>(),
    ) {
        let mut key_columns: Vec<usize> = key_columns
            .into_iter()
            .filter(|&column| values.get(column).is_some_and(|value| !value.is_null()))
            .collect();
        key_columns.dedup();
        prop_assume!(!key_columns.is_empty());
        schema.primary_key = key_columns;
        let layout = RowLayout::new(&schema);
        let mut fixed = vec![0; layout.fixed_bytes()];
        let mut var = Vec::new();
        layout.encode(&values, &mut fixed, &mut var).unwrap();
        let mut key = Vec::new();
        layout.primary_key_of_row(&fixed, &var, &mut key);
        prop_assert!(layout.row_has_primary_key(&fixed, &var, &key));
        let mut other = key.clone();
        other[flipped.index(key.len())] ^= 0x20;
        prop_assert!(!layout.row_has_primary_key(&fixed, &var, &other));
        prop_assert!(!layout.row_has_primary_key(&fixed, &var, &key[..key.len() - 1]));
        other.clone_from(&key);
        other.push(0);
        prop_assert!(!layout.row_has_primary_key(&fixed, &var, &other));
    }

    /// A load's rows go to the cluster as encoded values, their key read from them: it
    /// must be the key of the same values, and refused where they are refused.
    #[test]
    fn the_key_of_an_encoded_row_is_the_key_of_its_values(
        (mut schema, mut values) in a_row(),
        key_columns in proptest::collection::vec(0..8usize, 1..4),
        null_key in any::<bool>(),
    ) {
        let mut key_columns: Vec<usize> =
            key_columns.into_iter().filter(|&column| column < values.len()).collect();
        key_columns.dedup();
        prop_assume!(!key_columns.is_empty());
        if null_key {
            values[key_columns[0]] = Value::Null;
        }
        schema.primary_key = key_columns;
        let layout = RowLayout::new(&schema);
        let mut encoded = Vec::new();
        crate::codec::write_values(&mut Writer(&mut encoded), &values);
        let (mut from_values, mut from_encoded) = (vec![9], vec![9]);
        let expected = layout.primary_key_of_row_values(&values, &mut from_values);
        let got = layout.primary_key_of_encoded_row(&encoded, &mut from_encoded);
        prop_assert_eq!(got.is_ok(), expected.is_ok(), "{:?} {:?}", got, expected);
        prop_assert_eq!(from_encoded, from_values);
        let truncated = layout.primary_key_of_encoded_row(&encoded[..3], &mut Vec::new());
        prop_assert!(matches!(truncated, Err(RowError::Malformed(_))), "{:?}", truncated);
    }
}

#[test]
fn the_primary_key_of_a_row_equals_the_key_built_from_its_values() {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "t".into(),
        columns: vec![
            Column::new("region", ColumnType::varchar(16)),
            Column::new("payload", ColumnType::Blob),
            Column::new("id", int(8, true)),
            Column::new("code", ColumnType::char(4)),
        ],
        primary_key: vec![3, 0, 2],
    };
    schema.validate().unwrap();
    let layout = RowLayout::new(&schema);
    let row = [
        Value::Bytes(b"eu".to_vec()),
        Value::Bytes(vec![1; 40]),
        Value::Int(-7),
        Value::Bytes(b"ab".to_vec()),
    ];
    let mut fixed = vec![0; layout.fixed_bytes()];
    let mut var = Vec::new();
    layout.encode(&row, &mut fixed, &mut var).unwrap();
    let mut from_row = Vec::new();
    layout.primary_key_of_row(&fixed, &var, &mut from_row);
    let mut from_values = Vec::new();
    let key = [
        Value::Bytes(b"ab".to_vec()),
        Value::Bytes(b"eu".to_vec()),
        Value::Int(-7),
    ];
    layout
        .primary_key_of_values(&key, &mut from_values)
        .unwrap();
    assert_eq!(from_row, from_values);
    let mut other = Vec::new();
    let different = [
        Value::Bytes(b"ab".to_vec()),
        Value::Bytes(b"eu".to_vec()),
        Value::Int(7),
    ];
    layout
        .primary_key_of_values(&different, &mut other)
        .unwrap();
    assert_ne!(other, from_values);
    let mut untouched = Vec::new();
    assert!(layout
        .primary_key_of_values(&key[..2], &mut untouched)
        .is_err());
    let bad = [
        Value::Bytes(b"toolong".to_vec()),
        Value::Bytes(b"eu".to_vec()),
        Value::Int(7),
    ];
    assert!(layout.primary_key_of_values(&bad, &mut untouched).is_err());
    assert!(untouched.is_empty());
}

#[test]
fn a_case_insensitive_key_is_one_key_for_every_spelling_and_for_the_stored_row() {
    let ci = Collation::utf8mb4_0900_ai_ci;
    let schema = table(vec![
        Column::new("name", ColumnType::varchar(20).with_collation(ci)),
        Column::new("code", ColumnType::char(4).with_collation(ci)),
        Column::new("exact", ColumnType::varchar(20)),
    ]);
    let layout = RowLayout::new(&schema);
    let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
    let key_of = |columns: &[usize], values: &[Value]| {
        let mut key = Vec::new();
        layout.key_of_values(columns, values, &mut key).unwrap();
        key
    };
    assert_eq!(
        key_of(&[0], &[text("Résumé")]),
        key_of(&[0], &[text("RESUME")])
    );
    assert_eq!(key_of(&[1], &[text("ab  ")]), key_of(&[1], &[text("AB")]));
    assert_ne!(key_of(&[2], &[text("a")]), key_of(&[2], &[text("A")]));
    let mut fixed = vec![0; layout.fixed_bytes()];
    let mut var = Vec::new();
    let stored = [text("Apple"), text("XY"), text("z")];
    layout.encode(&stored, &mut fixed, &mut var).unwrap();
    let mut from_row = Vec::new();
    assert!(layout.key_of_row(&[0, 1], &fixed, &var, &mut from_row));
    assert_eq!(from_row, key_of(&[0, 1], &[text("APPLE"), text("xy")]));
}

/// A table of one column of every type, then (added in place) one more of every type, each
/// added with the value of `every_type` as what older rows read, or NULL for `nulls`.
fn table_with_added_columns(nulls: bool) -> (TableSchema, TableSchema) {
    let mut base = vec![Column::new("id", int(4, false))];
    for (index, (column_type, _)) in every_type().into_iter().enumerate() {
        base.push(Column::new(&format!("c{index}"), column_type).nullable());
    }
    let mut altered = base.clone();
    for (index, (column_type, value)) in every_type().into_iter().enumerate() {
        let absent = if nulls { Value::Null } else { value };
        let column = Column::new(&format!("a{index}"), column_type).nullable();
        altered.push(column.added_with(absent));
    }
    (table(base), table(altered))
}

#[test]
fn a_row_written_before_columns_were_added_reads_their_added_values() {
    for nulls in [false, true] {
        let (before, after) = table_with_added_columns(nulls);
        let old = RowLayout::new(&before);
        let new = RowLayout::new(&after);
        assert_eq!(
            old.fixed_bytes(),
            new.fixed_bytes(),
            "adding moves no column"
        );
        let mut values = vec![Value::UInt(7)];
        values.extend(every_type().into_iter().map(|(_, value)| value));
        let mut fixed = vec![0; old.fixed_bytes()];
        let mut var = Vec::new();
        old.encode(&values, &mut fixed, &mut var).unwrap();
        let read = new.values(&fixed, &var);
        assert_eq!(read[..values.len()], values[..]);
        for (column, value) in after.columns.iter().zip(&read).skip(values.len()) {
            assert_eq!(Some(value), column.added.as_ref(), "{}", column.name);
            let position = after.column_index(&column.name).unwrap();
            assert_eq!(new.is_null(&fixed, &var, position), value.is_null());
        }
    }
}

#[test]
fn added_columns_round_trip_whether_carried_null_or_not_carried() {
    let (_, after) = table_with_added_columns(false);
    let layout = RowLayout::new(&after);
    let base_count = after.base_columns();
    let added: Vec<Value> = every_type().into_iter().map(|(_, value)| value).collect();
    for carried in 0..=added.len() {
        let mut values = vec![Value::UInt(1)];
        values.extend((1..base_count).map(|_| Value::Null));
        // Carried columns alternate between a value and NULL.
        values.extend((0..carried).map(|d| {
            if d % 2 == 0 {
                added[d].clone()
            } else {
                Value::Null
            }
        }));
        let mut fixed = vec![0; layout.fixed_bytes()];
        let mut var = Vec::new();
        layout.encode(&values, &mut fixed, &mut var).unwrap();
        assert_eq!(var.len(), layout.var_bytes(&values));
        let read = layout.values(&fixed, &var);
        assert_eq!(read[..values.len()], values[..], "carrying {carried}");
        assert_eq!(read[values.len()..], added[carried..], "carrying {carried}");
        let mut want = Vec::new();
        crate::codec::write_values(&mut Writer(&mut want), &read);
        let mut got = Vec::new();
        layout.write_projected(&fixed, &var, std::iter::empty(), &mut Writer(&mut got));
        assert_eq!(got, want, "projected, carrying {carried}");
    }
}

#[test]
fn a_row_needs_every_base_column_and_may_leave_out_added_ones() {
    let (_, after) = table_with_added_columns(true);
    let layout = RowLayout::new(&after);
    let mut fixed = vec![0; layout.fixed_bytes()];
    let mut var = Vec::new();
    let too_few = vec![Value::UInt(1); after.base_columns() - 1];
    assert!(matches!(
        layout.encode(&too_few, &mut fixed, &mut var),
        Err(RowError::ColumnCount { .. })
    ));
    let too_many = vec![Value::Null; after.columns.len() + 1];
    assert!(matches!(
        layout.encode(&too_many, &mut fixed, &mut var),
        Err(RowError::ColumnCount { .. })
    ));
}

#[test]
fn the_key_of_an_added_column_read_from_a_row_equals_the_key_of_its_value() {
    let schema = table(vec![
        Column::new("id", int(4, false)),
        Column::new("v", ColumnType::varchar(10)).nullable(),
        Column::new("n", int(8, true))
            .nullable()
            .added_with(Value::Int(-5)),
        Column::new(
            "s",
            ColumnType::varchar(10).with_collation(Collation::utf8mb4_0900_ai_ci),
        )
        .nullable()
        .added_with(Value::Null),
    ]);
    let layout = RowLayout::new(&schema);
    let mut fixed = vec![0; layout.fixed_bytes()];
    let mut var = Vec::new();
    let cases = [
        (
            vec![Value::UInt(1), Value::Null],
            vec![Value::Int(-5)],
            None,
        ),
        (
            vec![Value::UInt(1), Value::Bytes(b"x".to_vec()), Value::Int(3)],
            vec![Value::Int(3)],
            None,
        ),
        (
            vec![
                Value::UInt(1),
                Value::Null,
                Value::Int(3),
                Value::Bytes(b"Ab".to_vec()),
            ],
            vec![Value::Int(3)],
            Some(Value::Bytes(b"aB".to_vec())),
        ),
    ];
    for (values, n, s) in cases {
        layout.encode(&values, &mut fixed, &mut var).unwrap();
        let (mut from_row, mut from_values) = (Vec::new(), Vec::new());
        assert!(layout.key_of_row(&[2], &fixed, &var, &mut from_row));
        layout.key_of_values(&[2], &n, &mut from_values).unwrap();
        assert_eq!(from_row, from_values);
        let (mut from_row, mut from_values) = (Vec::new(), Vec::new());
        let whole = layout.key_of_row(&[3], &fixed, &var, &mut from_row);
        assert_eq!(whole, s.is_some(), "a NULL added column makes no key");
        if let Some(s) = s {
            layout.key_of_values(&[3], &[s], &mut from_values).unwrap();
            assert_eq!(
                from_row, from_values,
                "'Ab' and 'aB' are one key under ai_ci"
            );
        }
    }
}

#[test]
fn an_added_column_comes_after_every_created_one_and_is_not_in_the_primary_key() {
    let added = Column::new("a", int(4, true))
        .nullable()
        .added_with(Value::Null);
    let schema = |columns: Vec<Column>, primary_key: Vec<usize>| TableSchema {
        extra_metadata: Vec::new(),
        name: "t".into(),
        columns,
        primary_key,
    };
    let before_a_created_one = schema(
        vec![
            Column::new("id", int(4, false)),
            added.clone(),
            Column::new("b", int(4, false)),
        ],
        vec![0],
    );
    let in_the_key = schema(
        vec![
            Column::new("id", int(4, false)),
            Column::new("a", int(4, true)).added_with(Value::Int(1)),
        ],
        vec![0, 1],
    );
    let not_null_absent = schema(
        vec![
            Column::new("id", int(4, false)),
            Column::new("a", int(4, true)).added_with(Value::Null),
        ],
        vec![0],
    );
    for refused in [before_a_created_one, in_the_key, not_null_absent] {
        assert!(refused.validate().is_err(), "{refused:?}");
    }
}

// ----- rows written straight from their encoded values -----

/// A row's fixed and variable parts, or why it could not be encoded.
type Encoded = Result<(Vec<u8>, Vec<u8>), RowError>;

/// `encode` and `encode_from_wire` of the same values: both rows, or both errors.
fn encode_both_ways(layout: &RowLayout, values: &[Value]) -> (Encoded, Encoded) {
    let mut encoded = Vec::new();
    crate::codec::write_values(&mut Writer(&mut encoded), values);
    let encode = |from_wire: bool| {
        let mut fixed = vec![0xAA; layout.fixed_bytes()];
        let mut var = vec![0xBB; 3];
        if from_wire {
            layout.encode_from_wire(&encoded, &mut fixed, &mut var)?;
        } else {
            layout.encode(values, &mut fixed, &mut var)?;
        }
        Ok((fixed, var))
    };
    (encode(false), encode(true))
}

/// A row of `a_row`, some of whose values are swapped for a value of any type (often one
/// the column refuses: of another kind, out of its range, too long) or NULL.
fn a_row_with_any_values() -> impl Strategy<Value = (TableSchema, Vec<Value>)> {
    a_row().prop_flat_map(|(schema, values)| {
        let swapped: Vec<BoxedStrategy<Value>> = values
            .into_iter()
            .map(|value| {
                let any_type = a_column_type().prop_flat_map(a_value);
                prop_oneof![4 => Just(value), 1 => any_type, 1 => Just(Value::Null)].boxed()
            })
            .collect();
        (Just(schema), swapped)
    })
}

proptest! {
    #[test]
    fn a_row_from_its_encoded_values_is_the_row_from_its_values(
        (schema, values) in a_row_with_any_values(),
    ) {
        let (from_values, from_wire) = encode_both_ways(&RowLayout::new(&schema), &values);
        prop_assert_eq!(from_wire, from_values);
    }

    /// A cut encoding is malformed (or, cut after a whole value, a count that is wrong),
    /// never a row and never a panic; any bytes at all are a row or an error.
    #[test]
    fn a_cut_or_garbled_encoding_is_refused_without_a_panic(
        (schema, values) in a_row(),
        cut in any::<prop::sample::Index>(),
        garbage in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let layout = RowLayout::new(&schema);
        let mut encoded = Vec::new();
        crate::codec::write_values(&mut Writer(&mut encoded), &values);
        let mut fixed = vec![0; layout.fixed_bytes()];
        let mut var = Vec::new();
        let cut = cut.index(encoded.len());
        let refused = layout.encode_from_wire(&encoded[..cut], &mut fixed, &mut var);
        prop_assert!(matches!(refused, Err(RowError::Malformed(_))), "{:?}", refused);
        let _ = layout.encode_from_wire(&garbage, &mut fixed, &mut var);
    }
}

#[test]
fn an_encoded_date_out_of_range_or_bytes_left_over_are_malformed() {
    let schema = table(vec![
        Column::new("id", int(4, false)),
        Column::new("d", ColumnType::Date),
        Column::new("at", ColumnType::DateTime),
    ]);
    let layout = RowLayout::new(&schema);
    let (mut fixed, mut var) = (vec![0; layout.fixed_bytes()], Vec::new());
    let mut encoded = Vec::new();
    let epoch = DateTime::from_micros(0).unwrap();
    let values = [
        Value::UInt(1),
        Value::Date(epoch.date),
        Value::DateTime(epoch),
    ];
    crate::codec::write_values(&mut Writer(&mut encoded), &values);
    layout
        .encode_from_wire(&encoded, &mut fixed, &mut var)
        .unwrap();
    let date_at = 4 + 9 + 1;
    let datetime_at = date_at + 4 + 1;
    for (at, bad) in [
        (date_at, &i32::MAX.to_le_bytes()[..]),
        (datetime_at, &i64::MIN.to_le_bytes()),
    ] {
        let mut garbled = encoded.clone();
        garbled[at..at + bad.len()].copy_from_slice(bad);
        let error = layout
            .encode_from_wire(&garbled, &mut fixed, &mut var)
            .unwrap_err();
        assert!(
            matches!(error, RowError::Malformed(CodecError::Invalid { .. })),
            "{error}"
        );
    }
    encoded.push(0);
    let error = layout
        .encode_from_wire(&encoded, &mut fixed, &mut var)
        .unwrap_err();
    assert_eq!(error, RowError::Malformed(CodecError::TrailingBytes(1)));
}

#[test]
fn a_row_from_encoded_values_may_carry_added_columns_or_leave_them_out() {
    let (_, after) = table_with_added_columns(false);
    let layout = RowLayout::new(&after);
    let added = every_type().into_iter().map(|(_, value)| value);
    let mut values = vec![Value::UInt(1)];
    values.extend((1..after.base_columns()).map(|_| Value::Null));
    for value in added.chain([Value::Null]) {
        let (from_values, from_wire) = encode_both_ways(&layout, &values);
        assert_eq!(from_wire, from_values, "carrying {}", values.len());
        values.push(value);
    }
}
