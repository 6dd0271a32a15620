use super::*;
use crate::schema::{Column, TableSchema};
use crate::types::Collation;
use CompareOp::*;

fn layout() -> RowLayout {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "t".into(),
        columns: vec![
            Column::new(
                "id",
                ColumnType::Int {
                    bytes: 4,
                    signed: true,
                },
            ),
            Column::new("name", ColumnType::varchar(20)).nullable(),
            Column::new("score", ColumnType::Double).nullable(),
        ],
        primary_key: vec![0],
    };
    RowLayout::new(&schema)
}

fn row(layout: &RowLayout, values: &[Value]) -> (Vec<u8>, Vec<u8>) {
    let mut fixed = vec![0; layout.fixed_bytes()];
    let mut var = Vec::new();
    layout.encode(values, &mut fixed, &mut var).unwrap();
    (fixed, var)
}

fn truth(filter: Filter, values: &[Value]) -> Truth {
    let layout = layout();
    let program = FilterProgram::new(filter, &layout).unwrap();
    let (fixed, var) = row(&layout, values);
    program.evaluate(&layout, &fixed, &var)
}

fn name(text: &str) -> Value {
    Value::Bytes(text.as_bytes().to_vec())
}

#[test]
fn comparisons_with_constants_and_columns() {
    let values = [Value::Int(7), name("ann"), Value::Double(7.0)];
    let compare = |column, op, value| Filter::Compare { column, op, value };
    assert_eq!(truth(compare(0, Eq, Value::Int(7)), &values), Truth::True);
    assert_eq!(truth(compare(0, Lt, Value::UInt(7)), &values), Truth::False);
    assert_eq!(truth(compare(1, Ge, name("an")), &values), Truth::True);
    assert_eq!(
        truth(compare(2, Ne, Value::Double(7.5)), &values),
        Truth::True
    );
    let columns = Filter::CompareColumns {
        left: 2,
        op: Gt,
        right: 2,
    };
    assert_eq!(truth(columns, &values), Truth::False);
}

#[test]
fn null_makes_comparisons_unknown_and_not_keeps_them_unknown() {
    let values = [Value::Int(1), Value::Null, Value::Null];
    let unknown = Filter::Compare {
        column: 1,
        op: Eq,
        value: name("x"),
    };
    assert_eq!(truth(unknown.clone(), &values), Truth::Unknown);
    assert_eq!(
        truth(Filter::Not(Box::new(unknown.clone())), &values),
        Truth::Unknown
    );
    assert_eq!(truth(Filter::IsNull(1), &values), Truth::True);
    let is_one = Filter::Compare {
        column: 0,
        op: Eq,
        value: Value::Int(1),
    };
    let or = Filter::Or(vec![unknown.clone(), is_one.clone()]);
    assert_eq!(truth(or, &values), Truth::True, "unknown OR true");
    let and = Filter::And(vec![unknown.clone(), is_one]);
    assert_eq!(truth(and, &values), Truth::Unknown, "unknown AND true");
    let and = Filter::And(vec![unknown, Filter::Not(Box::new(Filter::IsNull(2)))]);
    assert_eq!(truth(and, &values), Truth::False, "unknown AND false");
    assert_eq!(truth(Filter::And(vec![]), &values), Truth::True);
    assert_eq!(truth(Filter::Or(vec![]), &values), Truth::False);
}

#[test]
fn bad_filters_are_refused_with_the_reason() {
    let layout = layout();
    let refused = |filter| FilterProgram::new(filter, &layout).unwrap_err();
    assert!(matches!(
        refused(Filter::IsNull(3)),
        FilterError::NoSuchColumn {
            column: 3,
            columns: 3,
            ..
        }
    ));
    assert!(matches!(
        refused(Filter::Compare {
            column: 0,
            op: Eq,
            value: name("7")
        }),
        FilterError::Incomparable { .. }
    ));
    assert!(matches!(
        refused(Filter::Like {
            column: 2,
            pattern: b"%".to_vec()
        }),
        FilterError::LikeOnNonString { .. }
    ));
    assert!(matches!(
        refused(Filter::CompareColumns {
            left: 0,
            op: Eq,
            right: 1
        }),
        FilterError::IncomparableColumns { .. }
    ));
    let mut deep = Filter::IsNull(1);
    for _ in 0..FILTER_DEPTH_MAX {
        deep = Filter::Not(Box::new(deep));
    }
    assert!(
        !deep.within_bounds(),
        "a sender sees what a data node refuses"
    );
    assert_eq!(refused(deep), FilterError::TooDeep);
    let wide = Filter::Or(vec![Filter::IsNull(1); FILTER_NODES_MAX]);
    assert!(!wide.within_bounds());
    assert_eq!(refused(wide), FilterError::TooManyNodes);
    assert!(Filter::Or(vec![Filter::IsNull(1); FILTER_NODES_MAX - 1]).within_bounds());
}

#[test]
fn a_text_column_compares_and_matches_like_under_its_collation() {
    let ci = ColumnType::varchar(20).with_collation(Collation::utf8mb4_0900_ai_ci);
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: "t".into(),
        columns: vec![
            Column::new("name", ci),
            Column::new("exact", ColumnType::varchar(20)),
        ],
        primary_key: vec![0],
    };
    let layout = RowLayout::new(&schema);
    let (fixed, var) = row(&layout, &[name("Banana"), name("Banana")]);
    let holds = |filter: Filter| {
        let program = FilterProgram::new(filter, &layout).unwrap();
        program.evaluate(&layout, &fixed, &var)
    };
    let equals = |column, text| Filter::Compare {
        column,
        op: Eq,
        value: name(text),
    };
    let like = |column, pattern: &str| Filter::Like {
        column,
        pattern: pattern.as_bytes().to_vec(),
    };
    assert_eq!(holds(equals(0, "BANANA")), Truth::True);
    assert_eq!(holds(equals(1, "BANANA")), Truth::False);
    assert_eq!(holds(like(0, "b%")), Truth::True);
    assert_eq!(holds(like(1, "b%")), Truth::False);
    let mixed = Filter::CompareColumns {
        left: 0,
        op: Eq,
        right: 1,
    };
    assert!(matches!(
        FilterProgram::new(mixed, &layout),
        Err(FilterError::IncomparableColumns { .. })
    ));
}
