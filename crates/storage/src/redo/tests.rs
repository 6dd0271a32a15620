//! The REDO format as a specification: what a writer puts in the ring, a scan reads back in
//! order, and a scan stops at the first byte it cannot trust (a torn tail, a flipped bit,
//! an earlier lap of the ring, an earlier life's records) without reading past it.

use proptest::prelude::*;

use super::*;

const RING: LogRing = LogRing {
    file_bytes: 2 * RECORD_BYTES_MAX as u64,
    files: 3,
};

/// Where the fixed examples' rows belong.
const PLACE: RowPlace = RowPlace {
    table_id: 1,
    table_version: 1,
    partition: 0,
};

/// The ring's files as a disk holds them (preallocated: zeros until written).
struct Files(Vec<Vec<u8>>);

impl Files {
    fn new(ring: LogRing) -> Self {
        Self(vec![vec![0; ring.file_bytes as usize]; ring.files as usize])
    }

    /// Writes everything `writer` has not handed out yet, in pieces of `bytes_max`.
    fn flush(&mut self, writer: &mut LogWriter, bytes_max: usize) {
        while let Some((lsn, bytes)) = writer.take_write(bytes_max) {
            let file = &mut self.0[writer.ring().file_of(lsn) as usize];
            let offset = writer.ring().offset_of(lsn) as usize;
            file[offset..offset + bytes.len()].copy_from_slice(&bytes);
            writer.reuse(bytes);
        }
    }

    fn at_mut(&mut self, lsn: u64) -> &mut u8 {
        &mut self.0[RING.file_of(lsn) as usize][RING.offset_of(lsn) as usize]
    }

    /// Every record from `lsn` on, as a scan of whole files reads them, and why it ended.
    fn scan(&self, lsn: u64, life: u32) -> (Vec<(Stamp, OwnedRecord)>, LogEnd, u64) {
        let mut scan = LogScan::new(RING, lsn, life);
        let mut chunk_lsn = lsn;
        let mut found = Vec::new();
        loop {
            let file = &self.0[RING.file_of(chunk_lsn) as usize];
            let chunk = &file[RING.offset_of(chunk_lsn) as usize..];
            match scan.next(chunk, chunk_lsn) {
                ScanStep::Record(decoded) => {
                    found.push((decoded.stamp, OwnedRecord::of(&decoded.record)));
                }
                ScanStep::Read(from) => chunk_lsn = from,
                ScanStep::End(end) => return (found, end, scan.next_lsn()),
            }
        }
    }
}

/// A record with its bytes owned, to compare what was written with what was read.
#[derive(Clone, Debug, PartialEq, Eq)]
enum OwnedRecord {
    Write(RowPlace, Vec<u8>, Vec<u8>),
    Delete(RowPlace, Vec<u8>),
    GciDone,
    CheckpointDone(u64, u64, u64, u64),
    CheckpointStart(u64, u64),
    CheckpointPartition(RowPlace, bool),
    WriteRows(RowPlace, u32, Vec<u8>),
}

impl OwnedRecord {
    fn of(record: &Record<'_>) -> Self {
        match *record {
            Record::WriteRow { place, fixed, var } => {
                OwnedRecord::Write(place, fixed.to_vec(), var.to_vec())
            }
            Record::DeleteRow { place, key } => OwnedRecord::Delete(place, key.to_vec()),
            Record::GciDone => OwnedRecord::GciDone,
            Record::CheckpointDone {
                id,
                redo_lsn,
                rows,
                marked_gci,
            } => OwnedRecord::CheckpointDone(id, redo_lsn, rows, marked_gci),
            Record::CheckpointStart { id, chain_start } => {
                OwnedRecord::CheckpointStart(id, chain_start)
            }
            Record::CheckpointPartition { place, whole } => {
                OwnedRecord::CheckpointPartition(place, whole)
            }
            Record::WriteRows {
                place,
                rows,
                packed,
            } => OwnedRecord::WriteRows(place, rows, packed.to_vec()),
            Record::FileEnd => panic!("a scan never returns a file end"),
        }
    }

    fn as_record(&self) -> Record<'_> {
        match self {
            OwnedRecord::Write(place, fixed, var) => Record::WriteRow {
                place: *place,
                fixed,
                var,
            },
            OwnedRecord::Delete(place, key) => Record::DeleteRow { place: *place, key },
            OwnedRecord::GciDone => Record::GciDone,
            &OwnedRecord::CheckpointDone(id, redo_lsn, rows, marked_gci) => {
                Record::CheckpointDone {
                    id,
                    redo_lsn,
                    rows,
                    marked_gci,
                }
            }
            &OwnedRecord::CheckpointStart(id, chain_start) => {
                Record::CheckpointStart { id, chain_start }
            }
            &OwnedRecord::CheckpointPartition(place, whole) => {
                Record::CheckpointPartition { place, whole }
            }
            OwnedRecord::WriteRows(place, rows, packed) => Record::WriteRows {
                place: *place,
                rows: *rows,
                packed,
            },
        }
    }
}

fn record() -> impl Strategy<Value = OwnedRecord> {
    let place = (0u32..4, 0u32..3, 0u32..8).prop_map(|(t, v, p)| RowPlace {
        table_id: t,
        table_version: v,
        partition: p,
    });
    let bytes = |max| proptest::collection::vec(any::<u8>(), 0..max);
    prop_oneof![
        (place.clone(), bytes(300), bytes(3000)).prop_map(|(p, f, v)| OwnedRecord::Write(p, f, v)),
        (place.clone(), bytes(64)).prop_map(|(p, k)| OwnedRecord::Delete(p, k)),
        (place.clone(), any::<bool>()).prop_map(|(p, w)| OwnedRecord::CheckpointPartition(p, w)),
        (place, any::<u32>(), bytes(3000)).prop_map(|(p, r, b)| OwnedRecord::WriteRows(p, r, b)),
        any::<(u64, u64)>().prop_map(|(i, c)| OwnedRecord::CheckpointStart(i, c)),
        Just(OwnedRecord::GciDone),
        any::<(u64, u64, u64, u64)>()
            .prop_map(|(i, l, r, m)| OwnedRecord::CheckpointDone(i, l, r, m)),
    ]
}

/// Appends `records` (GCIs rising every few) and writes them out; returns their stamps.
fn write_all(
    files: &mut Files,
    writer: &mut LogWriter,
    records: &[OwnedRecord],
    bytes_max: usize,
) -> Vec<(Stamp, OwnedRecord)> {
    let mut written = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let gci = 100 + index as u64 / 3;
        let lsn = writer.append(gci, &record.as_record()).expect("room");
        let stamp = Stamp {
            lsn,
            gci,
            life: writer.life(),
        };
        written.push((stamp, record.clone()));
    }
    files.flush(writer, bytes_max);
    written
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_hardware_checksum_is_crc32c(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        crc in any::<u32>(),
    ) {
        prop_assume!(std::arch::is_x86_feature_detected!("sse4.2"));
        // SAFETY: the CPU has SSE 4.2, checked just above.
        let hardware = unsafe { crc32c_sse42(crc, &bytes) };
        prop_assert_eq!(hardware, crc32c::crc32c_append(crc, &bytes));
    }

    #[test]
    fn a_scan_reads_back_every_record_in_order_across_files_and_ends_where_the_writer_will_go_on(
        records in proptest::collection::vec(record(), 1..400),
        bytes_max in 1usize..70_000,
    ) {
        let mut files = Files::new(RING);
        let mut writer = LogWriter::new(RING, 1, 0, 0);
        let written = write_all(&mut files, &mut writer, &records, bytes_max);
        let (read, end, end_lsn) = files.scan(0, 1);
        prop_assert_eq!(read, written);
        prop_assert_eq!(end, LogEnd::NoRecord, "zeros follow the last record");
        // The scan's end is where the writer would place its next record.
        prop_assert_eq!(RING.place(end_lsn, 64).at, RING.place(writer.head_lsn(), 64).at);
    }

    #[test]
    fn a_torn_or_damaged_record_ends_the_log_just_before_it(
        records in proptest::collection::vec(record(), 2..60),
        victim_seed in any::<u64>(),
        byte_seed in any::<u64>(),
        tear in any::<bool>(),
    ) {
        let mut files = Files::new(RING);
        let mut writer = LogWriter::new(RING, 1, 0, 0);
        let written = write_all(&mut files, &mut writer, &records, 1 << 20);
        let victim = (victim_seed % written.len() as u64) as usize;
        let (stamp, record) = &written[victim];
        let length = record.as_record().encoded_bytes() as u64;
        if tear {
            // The write stopped at `at`: nothing of it or after it reached the disk. A
            // record may end in zeros (an empty key's length), so the tear starts at or
            // before its last other byte: the record read back is not the one written.
            let last_nonzero = (stamp.lsn..stamp.lsn + length)
                .rev()
                .find(|&lsn| *files.at_mut(lsn) != 0)
                .expect("a header is never all zeros");
            let at = stamp.lsn + byte_seed % (last_nonzero - stamp.lsn + 1);
            for lsn in at..stamp.lsn + length {
                *files.at_mut(lsn) = 0;
            }
        } else {
            *files.at_mut(stamp.lsn + byte_seed % length) ^= 1 << (byte_seed % 8);
        }
        let (read, _, end_lsn) = files.scan(0, 1);
        prop_assert_eq!(&read[..], &written[..victim]);
        prop_assert_eq!(end_lsn, stamp.lsn);
    }
}

#[test]
fn a_scan_stops_at_the_records_of_an_earlier_lap_of_the_ring() {
    let mut files = Files::new(RING);
    let mut writer = LogWriter::new(RING, 1, 0, 0);
    let row = OwnedRecord::Write(PLACE, vec![7; 100], vec![9; 1000]);
    // More than a ring's worth of records, the tail following the head closely.
    let mut last = 0;
    while writer.head_lsn() < RING.ring_bytes() + RING.file_bytes / 2 {
        writer.release_until(writer.head_lsn());
        last = writer.append(5, &row.as_record()).unwrap();
        files.flush(&mut writer, 1 << 20);
    }
    let (read, end, end_lsn) = files.scan(last, 1);
    assert_eq!(read.len(), 1, "the last record");
    assert_eq!(end_lsn, writer.head_lsn());
    assert!(
        matches!(end, LogEnd::EarlierLap { found } if found + RING.ring_bytes() == end_lsn),
        "{end:?}"
    );
}

#[test]
fn a_later_life_that_goes_on_before_an_earlier_lifes_end_hides_what_is_left_of_it() {
    let place = PLACE;
    let delete = |key: u8| OwnedRecord::Delete(place, vec![key; 40]);
    let mut files = Files::new(RING);
    let mut first = LogWriter::new(RING, 1, 0, 0);
    let first_life = write_all(
        &mut files,
        &mut first,
        &[delete(1), delete(2), delete(3)],
        1 << 20,
    );
    // The second life found the log's end after the first record (the rest was not yet
    // on the disk when it looked, say) and goes on there with a smaller record.
    let second_start = first_life[1].0.lsn;
    let mut second = LogWriter::new(RING, 2, second_start, 0);
    let small = OwnedRecord::GciDone;
    second.append(7, &small.as_record()).unwrap();
    files.flush(&mut second, 1 << 20);
    // What the first life wrote after that point is intact on the disk, at LSNs that
    // the second life may well reach exactly: here, with records of the right size.
    let mut third = LogWriter::new(RING, 2, second.head_lsn(), 0);
    let filler = first_life[2].0.lsn - second.head_lsn() - RECORD_HEADER_BYTES as u64;
    let pad = OwnedRecord::Delete(place, vec![0; filler as usize - 16]);
    third.append(7, &pad.as_record()).unwrap();
    files.flush(&mut third, 1 << 20);
    assert_eq!(
        third.head_lsn(),
        first_life[2].0.lsn,
        "the test lines them up"
    );
    let (read, end, _) = files.scan(0, 1);
    let lives: Vec<u32> = read.iter().map(|(stamp, _)| stamp.life).collect();
    assert_eq!(lives, [1, 2, 2]);
    assert_eq!(end, LogEnd::EarlierLife { found: 1, life: 2 });
}

#[test]
fn a_full_ring_refuses_records_until_a_checkpoint_releases_space() {
    let mut writer = LogWriter::new(RING, 1, 0, 0);
    let row = OwnedRecord::Write(PLACE, vec![1; 200], vec![2; 20_000]);
    let mut appended = Vec::new();
    let full = loop {
        match writer.append(3, &row.as_record()) {
            Ok(lsn) => appended.push(lsn),
            Err(full) => break full,
        }
        while let Some((_, bytes)) = writer.take_write(1 << 20) {
            writer.reuse(bytes);
        }
    };
    assert!(full.free_bytes < full.needed_bytes, "{full:?}");
    assert!(writer.head_lsn() <= RING.ring_bytes());
    writer.release_until(appended[appended.len() / 2]);
    assert!(writer.append(3, &row.as_record()).is_ok());
}

#[test]
fn decoding_garbage_never_panics_and_never_finds_a_record() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let length = (state % 200) as usize;
        let bytes: Vec<u8> = (0..length)
            .map(|i| (state >> (i % 8 * 8)) as u8 ^ i as u8)
            .collect();
        assert!(decode(&bytes, 0, 0).is_err());
    }
}
