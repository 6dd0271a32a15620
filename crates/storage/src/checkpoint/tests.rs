use super::*;
use crate::redo::LogEnd;

const PLACE: RowPlace = RowPlace {
    table_id: 7,
    table_version: 1,
    partition: 2,
};

/// The file of checkpoint `id` holding `rows` rows (fixed part: the row's number), ended
/// when `finished`.
fn checkpoint_file(id: u64, rows: u64, finished: bool) -> Vec<u8> {
    let mut writer = writer(id, 1);
    for row in 0..rows {
        let fixed = row.to_le_bytes();
        let record = Record::WriteRow {
            place: PLACE,
            fixed: &fixed,
            var: b"variable",
        };
        writer.append(40, &record).expect("room");
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
    let mut file = Vec::new();
    while let Some((_, bytes)) = writer.next_write(1000) {
        file.extend_from_slice(bytes);
        let length = bytes.len();
        writer.handed_out(length);
    }
    file
}

fn rows_of(file: &[u8]) -> (Vec<u64>, Result<CheckpointSummary, CheckpointError>) {
    let mut rows = Vec::new();
    let outcome = read_file(file, |place, fixed, var| {
        assert_eq!((place, var), (PLACE, &b"variable"[..]));
        rows.push(u64::from_le_bytes(fixed.try_into().unwrap()));
    });
    (rows, outcome)
}

#[test]
fn a_finished_checkpoint_reads_back_whole() {
    let (rows, outcome) = rows_of(&checkpoint_file(5, 300, true));
    assert_eq!(rows, (0..300).collect::<Vec<_>>());
    let summary = CheckpointSummary {
        id: 5,
        max_gci: 41,
        redo_lsn: 1234,
        rows: 300,
        marked_gci: 38,
    };
    assert_eq!(outcome, Ok(summary));
}

#[test]
fn an_empty_checkpoint_is_complete_too() {
    let (rows, outcome) = rows_of(&checkpoint_file(1, 0, true));
    assert!(rows.is_empty());
    assert_eq!(outcome.map(|s| s.rows), Ok(0));
}

#[test]
fn an_unfinished_checkpoint_is_refused() {
    let (_, outcome) = rows_of(&checkpoint_file(5, 300, false));
    assert_eq!(outcome, Err(CheckpointError::Unfinished(LogEnd::Truncated)));
    assert_eq!(rows_of(&[]).1, Err(CheckpointError::NoStart));
}

#[test]
fn an_older_checkpoint_left_behind_a_crashed_one_is_not_read_as_its_rest() {
    // Checkpoint 3 was being written over checkpoint 1's file when the node crashed: its
    // first rows are there, then checkpoint 1's rows and end.
    let old = checkpoint_file(1, 300, true);
    let new = checkpoint_file(3, 100, false);
    let mut file = old.clone();
    file[..new.len()].copy_from_slice(&new);
    let (rows, outcome) = rows_of(&file);
    assert_eq!(rows.len(), 100, "only checkpoint 3's rows");
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
    let mut file = checkpoint_file(2, 50, true);
    file[700] ^= 0x10;
    let (rows, outcome) = rows_of(&file);
    assert!(rows.len() < 50);
    assert_eq!(outcome, Err(CheckpointError::Unfinished(LogEnd::Checksum)));
}

#[test]
fn an_end_of_another_checkpoint_or_count_is_refused() {
    let mut writer = writer(4, 1);
    let fixed = 0u64.to_le_bytes();
    let row = Record::WriteRow {
        place: PLACE,
        fixed: &fixed,
        var: b"variable",
    };
    writer.append(1, &row).unwrap();
    let wrong_count = Record::CheckpointDone {
        id: 4,
        redo_lsn: 0,
        rows: 2,
        marked_gci: 0,
    };
    writer.append(1, &wrong_count).unwrap();
    let (lsn, bytes) = writer.next_write(1 << 20).unwrap();
    assert_eq!(lsn, first_lsn(4));
    assert_eq!(
        rows_of(bytes).1,
        Err(CheckpointError::RowCount {
            counted: 2,
            found: 1
        })
    );
    let mut writer = super::writer(6, 1);
    let wrong_id = Record::CheckpointDone {
        id: 8,
        redo_lsn: 0,
        rows: 0,
        marked_gci: 0,
    };
    writer.append(1, &wrong_id).unwrap();
    let (_, bytes) = writer.next_write(1 << 20).unwrap();
    assert_eq!(rows_of(bytes).1, Err(CheckpointError::WrongId { found: 8 }));
}

#[test]
fn a_later_lap_is_told_apart_across_the_wrap() {
    assert_eq!(lap_of(first_lsn(7)), 7);
    assert!(is_later_lap(8, 7));
    assert!(!is_later_lap(7, 8));
    assert!(!is_later_lap(7, 7));
    assert!(
        is_later_lap(lap_of(first_lsn(LAPS)), LAPS - 1),
        "lap 0 follows the last"
    );
    let mut laps = vec![1, LAPS - 1, 0];
    laps.sort_by(|a, b| lap_order(*a, *b));
    assert_eq!(
        laps,
        [LAPS - 1, 0, 1],
        "three files' laps in order across the wrap"
    );
}
