use kista_storage::schema::{Column, TableSchema};
use kista_storage::types::ColumnType;

use super::*;

fn definition(name: &str) -> TableDefinitionBody {
    let int = ColumnType::Int {
        bytes: 8,
        signed: true,
    };
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        columns: vec![Column::new("id", int), Column::new("value", int)],
        primary_key: vec![0],
    };
    TableDefinitionBody::new(schema, Vec::new())
}

fn image() -> (Vec<u8>, SchemaImage) {
    let tables = vec![
        SavedTable {
            table_id: 3,
            version: 2,
            index_of: None,
            definition: definition("db/accounts"),
        },
        SavedTable {
            table_id: 4,
            version: 1,
            index_of: Some(3),
            definition: definition("#index"),
        },
    ];
    let encoded: Vec<Vec<u8>> = (tables.iter())
        .map(|t| {
            let mut body = Vec::new();
            t.definition.encode(&mut body);
            body
        })
        .collect();
    let entries = (tables.iter().zip(&encoded))
        .map(|(t, body)| (t.table_id, t.version, t.index_of, body.as_slice()));
    let bytes = encode(7, 5, entries);
    let image = SchemaImage {
        sequence: 7,
        next_table_id: 5,
        tables,
    };
    (bytes, image)
}

#[test]
fn a_written_dictionary_reads_back_whole() {
    let (bytes, image) = image();
    assert_eq!(decode(&bytes), Ok(image));
    let empty = encode(1, 1, std::iter::empty());
    assert_eq!(decode(&empty).map(|i| i.tables.len()), Ok(0));
    assert_eq!(path_of(7), "dict/schema.1");
}

#[test]
fn a_damaged_or_foreign_file_is_refused_with_the_reason() {
    let (bytes, _) = image();
    for at in [8, 30, bytes.len() / 2, bytes.len() - 1] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x01;
        assert_eq!(
            decode(&damaged),
            Err(SchemaFileError::Sealed(SealError::Checksum)),
            "byte {at}"
        );
    }
    assert_eq!(
        decode(&bytes[..bytes.len() - 10]),
        Err(SchemaFileError::Sealed(SealError::Checksum)),
        "cut short"
    );
    assert_eq!(
        decode(&bytes[..10]),
        Err(SchemaFileError::Sealed(SealError::Short(10)))
    );
    let mut foreign = bytes.clone();
    foreign[..4].copy_from_slice(b"KR\x01\x00");
    assert!(matches!(
        decode(&foreign),
        Err(SchemaFileError::Sealed(SealError::Foreign { .. }))
    ));
    let mut newer = bytes.clone();
    let ours = SCHEMA_FILE.format_version;
    newer[4] = (ours + 1) as u8;
    let refused = Err(SchemaFileError::Sealed(SealError::Version {
        found: ours + 1,
        ours,
    }));
    assert_eq!(decode(&newer), refused);
}

#[test]
fn a_definition_that_does_not_decode_is_refused_though_the_checksum_holds() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"KSCH");
    for word in [SCHEMA_FILE.format_version, 1, 0, 2, 1] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    for word in [9u32, 1, 0, 3] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    bytes.extend_from_slice(&[0xff; 3]);
    let checksum = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    assert!(matches!(
        decode(&bytes),
        Err(SchemaFileError::Definition { table_id: 9, .. })
    ));
}
