use super::*;
use crate::schema::{Column, TableSchema};
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
            Column::new("name", ColumnType::VarChar { max_length: 20 }).nullable(),
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
fn like_matches_percent_underscore_and_escapes() {
    assert!(like(b"hello", b"h%o"));
    assert!(like(b"hello", b"%"));
    assert!(like(b"", b"%"));
    assert!(!like(b"", b"_"));
    assert!(like(b"hello", b"h_llo"));
    assert!(!like(b"hello", b"h_lo"));
    assert!(like(b"abcabd", b"%abd"));
    assert!(like(b"aaa", b"%a%a%a%"));
    assert!(!like(b"aa", b"%a%a%a%"));
    assert!(like(b"50%", b"50\\%"));
    assert!(!like(b"500", b"50\\%"));
    assert!(like(b"a_c", b"a\\_c"));
    assert!(!like(b"abc", b"a\\_c"));
    assert!(like("é!".as_bytes(), b"_!"), "one character, two bytes");
    assert!(!like(b"Hello", b"hello"), "binary comparison: case matters");
}

#[test]
fn like_agrees_with_a_naive_matcher_on_short_inputs() {
    // Exhaustive over a small alphabet: the backtracking matcher against plain recursion.
    fn naive(text: &[u8], pattern: &[u8]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some((b'%', rest)) => (0..=text.len()).any(|skip| naive(&text[skip..], rest)),
            Some((b'_', rest)) => !text.is_empty() && naive(&text[1..], rest),
            Some((&byte, rest)) => text.first() == Some(&byte) && naive(&text[1..], rest),
        }
    }
    /// Every word over `alphabet` of at most `length` letters.
    fn all(alphabet: &[u8], length: usize) -> Vec<Vec<u8>> {
        let mut words = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..length {
            last = last
                .iter()
                .flat_map(|w: &Vec<u8>| alphabet.iter().map(move |&c| [&w[..], &[c]].concat()))
                .collect();
            words.extend(last.iter().cloned());
        }
        words
    }
    let texts = all(b"ab", 4);
    let patterns = all(b"ab%_", 4);
    assert_eq!(texts.len(), 31);
    for text in &texts {
        for pattern in &patterns {
            assert_eq!(
                like(text, pattern),
                naive(text, pattern),
                "{text:?} LIKE {pattern:?}"
            );
        }
    }
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
    assert_eq!(refused(deep), FilterError::TooDeep);
    let wide = Filter::Or(vec![Filter::IsNull(1); FILTER_NODES_MAX]);
    assert_eq!(refused(wide), FilterError::TooManyNodes);
}
