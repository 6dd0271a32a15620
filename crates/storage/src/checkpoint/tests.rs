use super::*;
use crate::redo::LogEnd;

const PLACE: RowPlace = RowPlace {
    table_id: 7,
    table_version: 1,
    partition: 2,
};

/// The bytes a writer holds, handed out.
fn written(mut writer: LogWriter) -> Vec<u8> {
    let mut file = Vec::new();
    while let Some((_, bytes)) = writer.take_write(1000) {
        file.extend_from_slice(&bytes);
        writer.reuse(bytes);
    }
    file
}

/// The file of checkpoint `id` holding one partition's section: `deleted` keys (one byte
/// each), then `rows` rows (fixed part: the row's number); ended when `finished`.
fn checkpoint_file(id: u64, deleted: u8, rows: u64, finished: bool) -> Vec<u8> {
    let mut writer = writer(id, id.saturating_sub(2), 1);
    let section = Record::CheckpointPartition {
        place: PLACE,
        whole: deleted == 0,
    };
    writer.append(40, &section).expect("room");
    for key in 0..deleted {
        let delete = Record::DeleteRow {
            place: PLACE,
            key: &[key],
        };
        writer.append(39, &delete).expect("room");
    }
    for row in 0..rows {
        append_row(&mut writer, row);
    }
    if finished {
        let done = Record::CheckpointDone {
            id,
            redo_lsn: 1234,
            rows,
            marked_gci: 38,
        };
        writer.append(41, &done).expect("room");
    }
    written(writer)
}

/// Appends row number `row` of `PLACE` (GCI 40).
fn append_row(writer: &mut LogWriter, row: u64) {
    let fixed = row.to_le_bytes();
    let record = Record::WriteRow {
        place: PLACE,
        fixed: &fixed,
        var: b"variable",
    };
    writer.append(40, &record).expect("room");
}

/// The rows (by number) and deleted keys of a file, and how its read ended.
type Read = (
    Vec<u64>,
    Vec<u8>,
    Result<CheckpointSummary, CheckpointError>,
);

fn read(file: &[u8]) -> Read {
    let (mut rows, mut deleted) = (Vec::new(), Vec::new());
    let outcome = read_file(file, |entry| match entry {
        CheckpointEntry::Partition { place, .. } => assert_eq!(place, PLACE),
        CheckpointEntry::Delete { key, gci, .. } => {
            assert_eq!(gci, 39);
            deleted.extend_from_slice(key);
        }
        CheckpointEntry::Row {
            place, fixed, var, ..
        } => {
            assert_eq!((place, var), (PLACE, &b"variable"[..]));
            rows.push(u64::from_le_bytes(fixed.try_into().unwrap()));
        }
    });
    (rows, deleted, outcome)
}

#[test]
fn a_finished_checkpoint_reads_back_whole() {
    let (rows, deleted, outcome) = read(&checkpoint_file(5, 3, 300, true));
    assert_eq!(rows, (0..300).collect::<Vec<_>>());
    assert_eq!(deleted, [0, 1, 2]);
    let summary = CheckpointSummary {
        id: 5,
        chain_start: 3,
        max_gci: 41,
        redo_lsn: 1234,
        rows: 300,
        marked_gci: 38,
    };
    assert_eq!(outcome, Ok(summary));
}

#[test]
fn an_empty_checkpoint_is_complete_too() {
    let (rows, _, outcome) = read(&checkpoint_file(1, 0, 0, true));
    assert!(rows.is_empty());
    assert_eq!(outcome.map(|s| s.rows), Ok(0));
}

#[test]
fn an_unfinished_checkpoint_or_one_without_its_start_is_refused() {
    let (_, _, outcome) = read(&checkpoint_file(5, 0, 300, false));
    assert_eq!(outcome, Err(CheckpointError::Unfinished(LogEnd::Truncated)));
    assert_eq!(read(&[]).2, Err(CheckpointError::NoStart));
    let file = checkpoint_file(5, 0, 300, true);
    let mut no_start = file.clone();
    no_start[2] = 1; // the start record's kind made a row's: its checksum fails
    assert_eq!(read(&no_start).2, Err(CheckpointError::NoStart));
    assert_eq!(
        read_start(&file),
        Ok(CheckpointStart {
            id: 5,
            chain_start: 3
        })
    );
    assert_eq!(
        read_start(&file[..START_RECORD_BYTES - 1]),
        Err(CheckpointError::NoStart)
    );
}

#[test]
fn an_older_checkpoint_left_behind_a_crashed_one_is_not_read_as_its_rest() {
    // Checkpoint 7 was being written over checkpoint 1's file when the node crashed: its
    // first rows are there, then checkpoint 1's rows and end.
    let old = checkpoint_file(1, 0, 300, true);
    let new = checkpoint_file(7, 0, 100, false);
    let mut file = old.clone();
    file[..new.len()].copy_from_slice(&new);
    let (rows, _, outcome) = read(&file);
    assert_eq!(rows.len(), 100, "only checkpoint 7's rows");
    assert!(
        matches!(
            outcome,
            Err(CheckpointError::Unfinished(LogEnd::EarlierLap { .. }))
        ),
        "{outcome:?}"
    );
}

#[test]
fn a_damaged_row_ends_the_checkpoint() {
    let mut file = checkpoint_file(2, 0, 50, true);
    file[700] ^= 0x10;
    let (rows, _, outcome) = read(&file);
    assert!(rows.len() < 50);
    assert_eq!(outcome, Err(CheckpointError::Unfinished(LogEnd::Checksum)));
}

#[test]
fn an_end_of_another_checkpoint_or_count_is_refused() {
    let mut writer = writer(4, 4, 1);
    let section = Record::CheckpointPartition {
        place: PLACE,
        whole: true,
    };
    writer.append(1, &section).unwrap();
    append_row(&mut writer, 0);
    let wrong_count = Record::CheckpointDone {
        id: 4,
        redo_lsn: 0,
        rows: 2,
        marked_gci: 0,
    };
    writer.append(1, &wrong_count).unwrap();
    assert_eq!(
        read(&written(writer)).2,
        Err(CheckpointError::RowCount {
            counted: 2,
            found: 1
        })
    );
    let mut writer = super::writer(6, 6, 1);
    let wrong_id = Record::CheckpointDone {
        id: 8,
        redo_lsn: 0,
        rows: 0,
        marked_gci: 0,
    };
    writer.append(1, &wrong_id).unwrap();
    assert_eq!(
        read(&written(writer)).2,
        Err(CheckpointError::WrongId { found: 8 })
    );
}

#[test]
fn a_row_outside_its_partition_section_is_refused() {
    let mut writer = writer(3, 3, 1);
    append_row(&mut writer, 0);
    assert_eq!(read(&written(writer)).2, Err(CheckpointError::OutOfPlace));
}

#[test]
fn every_row_is_in_the_rotating_share_of_one_of_any_rotation_of_checkpoints() {
    for first in [1, 2, 9] {
        for anchor in 0..20 {
            let ids = first..first + ROTATION_CHECKPOINTS;
            let sharing = ids.filter(|&id| in_rotating_share(id, anchor)).count();
            assert_eq!(sharing, 1, "anchor {anchor} from checkpoint {first}");
        }
    }
}

#[test]
fn a_chain_spans_the_last_rotation_of_checkpoints_or_starts_at_a_whole_one() {
    assert_eq!(chain_start(1, None), 1, "a first checkpoint is whole");
    assert_eq!(chain_start(2, Some(1)), 1);
    assert_eq!(chain_start(4, Some(1)), 1);
    assert_eq!(
        chain_start(5, Some(1)),
        2,
        "4 checkpoints wrote every share"
    );
    assert_eq!(chain_start(9, Some(7)), 7, "checkpoint 7 was whole");
    assert_eq!(chain_start(11, Some(7)), 8);
    assert!(
        CHECKPOINT_FILES as u64 >= ROTATION_CHECKPOINTS + 2,
        "the newest chain, the file before it and the one being written"
    );
}

#[test]
fn a_file_read_a_chunk_at_a_time_gives_what_a_whole_read_gives() {
    // 30,000 rows of 32-byte records: about 1 MB, four chunks of the smallest size.
    let file = checkpoint_file(6, 0, 30_000, true);
    assert!(file.len() > 3 * RECORD_BYTES_MAX);
    let mut rows = Vec::new();
    let streamed = read_stream(&mut std::io::Cursor::new(&file), 0, |entry| {
        if let CheckpointEntry::Row { fixed, .. } = entry {
            rows.push(u64::from_le_bytes(fixed.try_into().unwrap()));
        }
    });
    let (whole_rows, _, whole) = read(&file);
    assert_eq!(rows, whole_rows);
    assert_eq!(streamed.ok(), whole.ok());
    let cut = &file[..file.len() - 10];
    let refused = read_stream(&mut std::io::Cursor::new(cut), 0, |_| {});
    assert!(matches!(
        refused.map_err(ReadError::into_inner),
        Err(Some(CheckpointError::Unfinished(_)))
    ));
}

/// A file of checkpoint 9 whose one section holds `rows` rows packed (row `n`: fixed part
/// its number, GCI `40 + n % 3`), then a row too long to pack, then a row the way a
/// checkpoint wrote rows before they were packed.
fn packed_file(rows: u64) -> Vec<u8> {
    let mut writer = writer(9, 9, 1);
    let section = Record::CheckpointPartition {
        place: PLACE,
        whole: true,
    };
    writer.append(40, &section).expect("room");
    let mut packed = PackedRows::default();
    for row in 0..rows {
        let row_bytes = row.to_le_bytes();
        let gci = 40 + row % 3;
        packed
            .push(&mut writer, PLACE, (gci, &row_bytes, b"variable"))
            .expect("room");
    }
    let long = vec![7u8; PACKED_ROWS_BYTES_MAX];
    packed
        .push(&mut writer, PLACE, (44, &long, b""))
        .expect("room");
    packed.append_to(&mut writer, PLACE).expect("room");
    append_row(&mut writer, rows);
    let done = Record::CheckpointDone {
        id: 9,
        redo_lsn: 1,
        rows: rows + 2,
        marked_gci: 38,
    };
    writer.append(44, &done).expect("room");
    written(writer)
}

/// Every row of a file as (fixed part, GCI), read a chunk of `chunk_bytes` at a time.
fn rows_with_gcis(file: &[u8], chunk_bytes: usize) -> (Vec<(Vec<u8>, u64)>, CheckpointSummary) {
    let mut rows = Vec::new();
    let summary = read_stream(&mut std::io::Cursor::new(file), chunk_bytes, |entry| {
        if let CheckpointEntry::Row {
            place, fixed, gci, ..
        } = entry
        {
            assert_eq!(place, PLACE);
            rows.push((fixed.to_vec(), gci));
        }
    })
    .expect("a whole checkpoint");
    (rows, summary)
}

#[test]
fn rows_packed_many_to_a_record_read_back_in_order_with_their_gcis() {
    // 20,000 rows: packed records of 32 KiB, read across chunks of 256 KiB.
    let file = packed_file(20_000);
    let (rows, summary) = rows_with_gcis(&file, 0);
    assert_eq!(summary.rows, 20_002);
    assert_eq!(rows.len(), 20_002);
    for (n, (fixed, gci)) in rows[..20_000].iter().enumerate() {
        assert_eq!(fixed[..], (n as u64).to_le_bytes(), "row {n}");
        assert_eq!(*gci, 40 + n as u64 % 3, "row {n}");
    }
    assert_eq!(
        rows[20_000],
        (vec![7u8; PACKED_ROWS_BYTES_MAX], 44),
        "a row too long to pack is a record of its own"
    );
    assert_eq!(
        rows[20_001].0,
        20_000u64.to_le_bytes(),
        "a row as one record"
    );
    assert!(
        file.len() < 20_000 * (16 + 8 + 8) + 64 * 1024,
        "packed, a row takes 16 bytes besides its parts: {} bytes",
        file.len()
    );
}

#[test]
fn a_record_of_packed_rows_that_does_not_hold_what_it_counts_is_refused() {
    let mut one_row = PackedRows::default();
    let mut scratch = writer(3, 3, 1);
    one_row
        .push(&mut scratch, PLACE, (40, b"row", b""))
        .expect("room");
    let packed_bytes = {
        let mut writer = LogWriter::new(ring(), 1, 0, 0);
        one_row.append_to(&mut writer, PLACE).expect("room");
        let record = written(writer);
        record[RECORD_HEADER_BYTES + 16..].to_vec() // past the header, place and count
    };
    for (rows, packed) in [
        (2, packed_bytes.clone()), // fewer rows than counted
        (1, [&packed_bytes[..], &packed_bytes[..]].concat()), // more
        (1, packed_bytes[..packed_bytes.len() - 1].to_vec()), // a row cut short
    ] {
        let mut writer = writer(9, 9, 1);
        let section = Record::CheckpointPartition {
            place: PLACE,
            whole: true,
        };
        writer.append(40, &section).expect("room");
        let record = Record::WriteRows {
            place: PLACE,
            rows,
            packed: &packed,
        };
        writer.append(40, &record).expect("room");
        let outcome = read_file(&written(writer), |_| {});
        assert_eq!(outcome, Err(CheckpointError::MalformedRows), "{rows} rows");
    }
}
