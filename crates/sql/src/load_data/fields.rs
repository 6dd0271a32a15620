//! Records of a delimited text file, as `LOAD DATA` reads them (and `SELECT ... INTO
//! OUTFILE` writes them): fields ended by a terminator, records by another, a field
//! optionally enclosed in quotes (a quote inside doubled), escapes (`\t`, `\n`, `\0`, ...)
//! and `\N` for NULL. A streaming reader over any `Read`, a buffer at a time, counting the
//! file's lines so that a record can be named by the line it starts on.

use std::io::Read;

use crate::statement_text::unescaped;

/// Bytes read from the file at once.
const READ_CHUNK_BYTES: usize = 256 * 1024;
/// A longer field is refused (a missing closing quote would otherwise read the whole file
/// into one field).
pub const FIELD_BYTES_MAX: usize = 16 << 20;
/// Room a record's buffer starts with.
const RECORD_BYTES_EXPECTED: usize = 256;
/// A record with more fields is refused (a table has at most 4096 columns).
pub const FIELDS_MAX: usize = 4096;

/// How fields and records are delimited (LOAD DATA's FIELDS and LINES clauses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldFormat {
    pub fields_terminated_by: Vec<u8>,
    /// A field that starts with it ends at the next one not doubled.
    pub enclosed_by: Option<u8>,
    /// The escape character (`None`: fields hold their bytes as they are).
    pub escaped_by: Option<u8>,
    /// Each record begins after it (lines without it are skipped).
    pub lines_starting_by: Vec<u8>,
    pub lines_terminated_by: Vec<u8>,
}

impl FieldFormat {
    /// LOAD DATA's defaults: tab-separated, one record a line, `\` escapes, no quotes.
    pub fn tab_separated() -> Self {
        FieldFormat {
            fields_terminated_by: b"\t".to_vec(),
            enclosed_by: None,
            escaped_by: Some(b'\\'),
            lines_starting_by: Vec::new(),
            lines_terminated_by: b"\n".to_vec(),
        }
    }

    /// Comma-separated, fields optionally in double quotes, `\` escapes and `\N` for NULL:
    /// what `SELECT ... INTO OUTFILE ... FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"'`
    /// writes, and plain CSV without backslashes reads the same.
    pub fn comma_separated() -> Self {
        FieldFormat {
            fields_terminated_by: b",".to_vec(),
            enclosed_by: Some(b'"'),
            ..Self::tab_separated()
        }
    }

    /// Whether the format can be read: terminators must not be empty.
    pub fn check(&self) -> Result<(), FieldError> {
        if self.fields_terminated_by.is_empty() || self.lines_terminated_by.is_empty() {
            return Err(FieldError::Format(
                "the field and line terminators must not be empty".into(),
            ));
        }
        Ok(())
    }
}

/// One record: the line of the file it starts on and its fields, their bytes kept one
/// after another in one buffer (two allocations a record, not one per field).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub line: u64,
    data: Vec<u8>,
    /// Each field's bytes in `data`, or `None` for NULL.
    spans: Vec<Option<(usize, usize)>>,
}

impl Record {
    /// How many fields it has.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The bytes of all its fields together.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// Its fields in order (`None`: NULL).
    pub fn fields(&self) -> impl Iterator<Item = Option<&[u8]>> + '_ {
        self.spans
            .iter()
            .map(|span| span.map(|(start, end)| &self.data[start..end]))
    }

    fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FieldError {
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("line {line}: a field longer than {FIELD_BYTES_MAX} bytes (a quote not closed?)")]
    FieldTooLong { line: u64 },
    #[error("line {line}: more than {FIELDS_MAX} fields")]
    TooManyFields { line: u64 },
    #[error("line {line}: the quoted field that starts here is not closed by the end of the file")]
    Unterminated { line: u64 },
    #[error("{0}")]
    Format(String),
}

/// Reads the records of `input` one after another.
pub struct RecordReader<R> {
    input: R,
    format: FieldFormat,
    buffer: Vec<u8>,
    at: usize,
    input_ended: bool,
    /// Lines (line feeds) consumed so far.
    lines: u64,
    /// Whether [`RecordReader::simple_record`] may read a record (off in tests that hold
    /// it to the general path).
    simple_records: bool,
}

impl<R: Read> RecordReader<R> {
    pub fn new(input: R, format: FieldFormat) -> Result<Self, FieldError> {
        format.check()?;
        Ok(RecordReader {
            input,
            format,
            buffer: Vec::new(),
            at: 0,
            input_ended: false,
            lines: 0,
            simple_records: true,
        })
    }

    /// Skips `count` lines (IGNORE n LINES, a header); false if the file ended first.
    pub fn skip_lines(&mut self, count: u64) -> Result<bool, FieldError> {
        for _ in 0..count {
            loop {
                if self.at(Delimiter::Line)? {
                    self.consume(self.format.lines_terminated_by.len());
                    break;
                }
                if self.peek()?.is_none() {
                    return Ok(false);
                }
                self.consume(1);
            }
        }
        Ok(true)
    }

    /// Reads the next record into `record`; false at the end of the file.
    pub fn next_record(&mut self, record: &mut Record) -> Result<bool, FieldError> {
        record.clear();
        // Most records are short: room for them at once, not grown byte by byte.
        record.data.reserve(RECORD_BYTES_EXPECTED);
        if self.simple_record(record) {
            return Ok(true);
        }
        record.clear();
        if !self.skip_to_record_start()? {
            return Ok(false);
        }
        record.line = self.lines + 1;
        loop {
            if record.spans.len() == FIELDS_MAX {
                return Err(FieldError::TooManyFields { line: record.line });
            }
            let start = record.data.len();
            let null = self.field(&mut record.data, record.line)?;
            let span = (start, record.data.len());
            record.spans.push((!null).then_some(span));
            if self.at(Delimiter::Field)? {
                self.consume(self.format.fields_terminated_by.len());
                continue;
            }
            if self.at(Delimiter::Line)? {
                self.consume(self.format.lines_terminated_by.len());
            }
            return Ok(true);
        }
    }

    /// Reads the next record the quick way when it is a simple one, as most records of a
    /// data file are: a whole line already buffered, without escapes, whose quoted fields
    /// hold no quotes (single-byte terminators, no LINES STARTING BY). False (nothing
    /// consumed, `record` partly filled) where the general path must read it; where both
    /// can, they read the same (a test holds them to it).
    fn simple_record(&mut self, record: &mut Record) -> bool {
        let format = &self.format;
        let (&[field_end], &[line_end]) = (
            format.fields_terminated_by.as_slice(),
            format.lines_terminated_by.as_slice(),
        ) else {
            return false;
        };
        let (quote, escape) = (format.enclosed_by, format.escaped_by);
        let special = [quote, escape];
        if !self.simple_records
            || !format.lines_starting_by.is_empty()
            || special.contains(&Some(field_end))
            || special.contains(&Some(line_end))
        {
            return false;
        }
        let available = &self.buffer[self.at..];
        let Some(line_bytes) = memchr::memchr(line_end, available) else {
            return false;
        };
        let line = &available[..line_bytes];
        if escape.is_some_and(|escape| memchr::memchr(escape, line).is_some()) {
            return false;
        }
        let null_word_is_null = quote.is_some() || escape.is_none();
        let mut rest = line;
        loop {
            if record.spans.len() == FIELDS_MAX {
                return false;
            }
            let start = record.data.len();
            let (field, after) = match (quote, rest.first()) {
                (Some(quote), Some(&first)) if first == quote => {
                    let Some(close) = memchr::memchr(quote, &rest[1..]) else {
                        return false;
                    };
                    let after = &rest[close + 2..];
                    if !after.is_empty() && after[0] != field_end {
                        return false; // a doubled quote, or a quote inside the field
                    }
                    (Some(&rest[1..close + 1]), after)
                }
                _ => {
                    let end = memchr::memchr(field_end, rest).unwrap_or(rest.len());
                    let field = &rest[..end];
                    let null = null_word_is_null && field == b"NULL";
                    ((!null).then_some(field), &rest[end..])
                }
            };
            if let Some(field) = field {
                record.data.extend_from_slice(field);
            }
            let span = (start, record.data.len());
            record.spans.push(field.is_some().then_some(span));
            match after.split_first() {
                Some((_, next)) => rest = next,
                None => break,
            }
        }
        record.line = self.lines + 1;
        if line_end == b'\n' {
            // The line's one newline is its end, which `memchr` found first: no need to
            // count them byte by byte.
            self.at += line_bytes + 1;
            self.lines += 1;
        } else {
            self.consume(line_bytes + 1);
        }
        true
    }

    /// Moves past LINES STARTING BY (skipping lines without it); false at the end.
    fn skip_to_record_start(&mut self) -> Result<bool, FieldError> {
        if self.peek()?.is_none() {
            return Ok(false);
        }
        if self.format.lines_starting_by.is_empty() {
            return Ok(true);
        }
        loop {
            if self.at(Delimiter::LineStart)? {
                self.consume(self.format.lines_starting_by.len());
                return Ok(true);
            }
            if self.peek()?.is_none() {
                return Ok(false);
            }
            self.consume(1);
        }
    }

    /// One field, up to (not including) its terminator, the line's, or the end, added
    /// to `data`; whether it is NULL (then it added nothing).
    fn field(&mut self, data: &mut Vec<u8>, line: u64) -> Result<bool, FieldError> {
        let start = data.len();
        let quote = self.format.enclosed_by;
        if quote.is_some() && self.peek()? == quote {
            self.consume(1);
            self.quoted_field(data, start, quote.unwrap_or_default(), line)?;
            return Ok(false);
        }
        let field = data;
        let mut escaped_n_alone = false;
        while let Some(byte) = self.peek()? {
            if self.copy_plain_run(field, None) {
                escaped_n_alone = false;
                if field.len() - start > FIELD_BYTES_MAX {
                    return Err(FieldError::FieldTooLong { line });
                }
                continue;
            }
            if self.at_field_end()? {
                break;
            }
            self.consume(1);
            if Some(byte) == self.format.escaped_by {
                match self.peek()? {
                    Some(next) => {
                        self.consume(1);
                        escaped_n_alone = field.len() == start && next == b'N';
                        field.push(unescaped(next));
                    }
                    None => field.push(byte),
                }
            } else {
                escaped_n_alone = false;
                field.push(byte);
            }
            if field.len() - start > FIELD_BYTES_MAX {
                return Err(FieldError::FieldTooLong { line });
            }
        }
        // `\N` alone is NULL; so is the word NULL unquoted where quotes or no escapes are
        // in use (as MySQL writes NULL then).
        let bytes = &field[start..];
        let null_word = bytes == b"NULL"
            && (self.format.enclosed_by.is_some() || self.format.escaped_by.is_none());
        if (escaped_n_alone && bytes == b"N") || null_word {
            field.truncate(start);
            return Ok(true);
        }
        Ok(false)
    }

    /// The rest of a field that began with `quote`: a doubled quote is one; a quote ends
    /// the field when a terminator or the end follows it, else it is a plain byte.
    fn quoted_field(
        &mut self,
        field: &mut Vec<u8>,
        start: usize,
        quote: u8,
        line: u64,
    ) -> Result<(), FieldError> {
        loop {
            let Some(byte) = self.peek()? else {
                return Err(FieldError::Unterminated { line });
            };
            if self.copy_plain_run(field, Some(quote)) {
                if field.len() - start > FIELD_BYTES_MAX {
                    return Err(FieldError::FieldTooLong { line });
                }
                continue;
            }
            self.consume(1);
            if Some(byte) == self.format.escaped_by {
                match self.peek()? {
                    Some(next) => {
                        self.consume(1);
                        field.push(unescaped(next));
                    }
                    None => return Err(FieldError::Unterminated { line }),
                }
            } else if byte == quote {
                if self.peek()? == Some(quote) {
                    self.consume(1);
                    field.push(quote);
                } else if self.peek()?.is_none() || self.at_field_end()? {
                    return Ok(());
                } else {
                    field.push(quote);
                }
            } else {
                field.push(byte);
            }
            if field.len() - start > FIELD_BYTES_MAX {
                return Err(FieldError::FieldTooLong { line });
            }
        }
    }

    /// Copies the buffered bytes before the next one that may matter into `field` at once
    /// (the byte-by-byte path then looks at that one): in a field enclosed in `quote`, the
    /// quote or an escape; otherwise, the start of a terminator or an escape. Whether it
    /// copied any. Most of a file's bytes go this way.
    fn copy_plain_run(&mut self, field: &mut Vec<u8>, quote: Option<u8>) -> bool {
        let available = &self.buffer[self.at..];
        let escape = self.format.escaped_by;
        let found = match (quote, escape) {
            (Some(quote), Some(escape)) => memchr::memchr2(quote, escape, available),
            (Some(quote), None) => memchr::memchr(quote, available),
            (None, _) => {
                let field_end = self.format.fields_terminated_by.first().copied();
                let line_end = self.format.lines_terminated_by.first().copied();
                let (a, b) = (field_end.unwrap_or(b'\n'), line_end.unwrap_or(b'\n'));
                match escape {
                    Some(escape) => memchr::memchr3(a, b, escape, available),
                    None => memchr::memchr2(a, b, available),
                }
            }
        };
        let run = found.unwrap_or(available.len());
        if run == 0 {
            return false;
        }
        field.extend_from_slice(&available[..run]);
        self.consume(run);
        true
    }

    fn at_field_end(&mut self) -> Result<bool, FieldError> {
        Ok(self.at(Delimiter::Field)? || self.at(Delimiter::Line)?)
    }

    fn peek(&mut self) -> Result<Option<u8>, FieldError> {
        self.fill(1)?;
        Ok(self.buffer.get(self.at).copied())
    }

    /// Whether the unread bytes begin with `delimiter`.
    fn at(&mut self, delimiter: Delimiter) -> Result<bool, FieldError> {
        self.fill(delimiter.of(&self.format).len())?;
        Ok(self.buffer[self.at..].starts_with(delimiter.of(&self.format)))
    }

    fn consume(&mut self, count: usize) {
        let end = (self.at + count).min(self.buffer.len());
        self.lines += self.buffer[self.at..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        self.at = end;
    }

    /// Makes at least `wanted` bytes available past `at`, unless the input ends first.
    fn fill(&mut self, wanted: usize) -> Result<(), FieldError> {
        while self.buffer.len() - self.at < wanted && !self.input_ended {
            if self.at > 0 {
                self.buffer.drain(..self.at);
                self.at = 0;
            }
            let start = self.buffer.len();
            self.buffer.resize(start + READ_CHUNK_BYTES, 0);
            let read = loop {
                match self.input.read(&mut self.buffer[start..]) {
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            let read = read.inspect_err(|_| self.buffer.truncate(start))?;
            self.buffer.truncate(start + read);
            self.input_ended = read == 0;
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Delimiter {
    Field,
    Line,
    LineStart,
}

impl Delimiter {
    fn of(self, format: &FieldFormat) -> &[u8] {
        match self {
            Delimiter::Field => &format.fields_terminated_by,
            Delimiter::Line => &format.lines_terminated_by,
            Delimiter::LineStart => &format.lines_starting_by,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, format: FieldFormat) -> Vec<(u64, Vec<Option<String>>)> {
        let mut reader = RecordReader::new(text.as_bytes(), format).unwrap();
        let mut record = Record::default();
        let mut all = Vec::new();
        while reader.next_record(&mut record).unwrap() {
            let fields = record
                .fields()
                .map(|f| f.map(|bytes| String::from_utf8(bytes.to_vec()).unwrap()));
            all.push((record.line, fields.collect()));
        }
        all
    }

    type Read = Result<Vec<(u64, Vec<Option<Vec<u8>>>)>, String>;

    /// Every record of `text` (or the error that stopped the reading), read with or
    /// without the simple-record path.
    fn read_all(text: &[u8], format: &FieldFormat, simple_records: bool) -> Read {
        let mut reader = RecordReader::new(text, format.clone()).unwrap();
        reader.simple_records = simple_records;
        let mut record = Record::default();
        let mut all = Vec::new();
        while reader.next_record(&mut record).map_err(|e| e.to_string())? {
            let fields = record.fields().map(|f| f.map(<[u8]>::to_vec)).collect();
            all.push((record.line, fields));
        }
        Ok(all)
    }

    proptest::proptest! {
        // Short texts made of what matters (terminators, quotes, escapes, NULL and \N) in
        // every default format: the simple path reads what the general one reads,
        // wherever it takes a record.
        #[test]
        fn simple_records_are_read_as_the_general_path_reads_them(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "a", ",", "\"", "\\", "\n", "\t", " ", "NULL", "\\N", "\"\"",
            ]), 0..30),
            format in proptest::sample::select(vec![0, 1, 2]),
        ) {
            let bytes = pieces.concat().into_bytes();
            let format = match format {
                0 => FieldFormat::comma_separated(),
                1 => FieldFormat::tab_separated(),
                _ => FieldFormat { escaped_by: None, ..FieldFormat::comma_separated() },
            };
            proptest::prop_assert_eq!(
                read_all(&bytes, &format, true),
                read_all(&bytes, &format, false)
            );
        }
    }

    #[test]
    fn a_data_file_s_plain_lines_take_the_simple_path() {
        let text = b"1,\"name 1\",2.25,NULL\n2,,\"\",x\n";
        let mut reader = RecordReader::new(&text[..], FieldFormat::comma_separated()).unwrap();
        reader.fill(1).unwrap();
        let mut record = Record::default();
        assert!(reader.simple_record(&mut record));
        let fields: Vec<_> = record.fields().collect();
        assert_eq!(
            fields,
            [Some(&b"1"[..]), Some(b"name 1"), Some(b"2.25"), None]
        );
        record.clear();
        assert!(reader.simple_record(&mut record));
        let fields: Vec<_> = record.fields().collect();
        assert_eq!(fields, [Some(&b"2"[..]), Some(b""), Some(b""), Some(b"x")]);
        assert_eq!(record.line, 2);
    }

    fn some(fields: &[&str]) -> Vec<Option<String>> {
        fields.iter().map(|f| Some(f.to_string())).collect()
    }

    #[test]
    fn tab_separated_lines_with_escapes_and_null() {
        let text = "1\ta\\tb\t\\N\n2\tline\\nbreak\tNULL\n";
        assert_eq!(
            records(text, FieldFormat::tab_separated()),
            vec![
                (1, vec![Some("1".into()), Some("a\tb".into()), None]),
                (2, some(&["2", "line\nbreak", "NULL"])),
            ]
        );
    }

    #[test]
    fn quoted_csv_fields_hold_separators_doubled_quotes_and_line_breaks() {
        let text = "1,\"a,b\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",NULL\n3,\\N,\"\"\n";
        assert_eq!(
            records(text, FieldFormat::comma_separated()),
            vec![
                (1, some(&["1", "a,b", "say \"hi\""])),
                (2, vec![Some("2".into()), Some("two\nlines".into()), None]),
                (4, vec![Some("3".into()), None, Some(String::new())]),
            ],
            "a record is named by the line it starts on"
        );
    }

    #[test]
    fn the_last_line_may_lack_its_terminator_and_crlf_lines_are_read_whole() {
        let format = FieldFormat {
            lines_terminated_by: b"\r\n".to_vec(),
            ..FieldFormat::comma_separated()
        };
        assert_eq!(
            records("a,b\r\nc,d", format),
            vec![(1, some(&["a", "b"])), (2, some(&["c", "d"]))]
        );
    }

    #[test]
    fn lines_starting_by_skips_lines_without_the_prefix() {
        let format = FieldFormat {
            lines_starting_by: b"xxx".to_vec(),
            ..FieldFormat::comma_separated()
        };
        assert_eq!(
            records("xxx1,2\nnoise\nxxx3,4\n", format),
            vec![(1, some(&["1", "2"])), (3, some(&["3", "4"]))]
        );
    }

    #[test]
    fn header_lines_are_skipped_and_counted() {
        let text = "id,name\n1,a\n";
        let mut reader =
            RecordReader::new(text.as_bytes(), FieldFormat::comma_separated()).unwrap();
        assert!(reader.skip_lines(1).unwrap());
        let mut record = Record::default();
        assert!(reader.next_record(&mut record).unwrap());
        assert_eq!((record.line, record.len()), (2, 2));
        assert!(!reader.next_record(&mut record).unwrap());
    }

    #[test]
    fn an_unclosed_quote_is_an_error_naming_its_line() {
        let text = "1,\"ok\"\n2,\"never closed\n3,x\n";
        let mut reader =
            RecordReader::new(text.as_bytes(), FieldFormat::comma_separated()).unwrap();
        let mut record = Record::default();
        assert!(reader.next_record(&mut record).unwrap());
        let error = reader.next_record(&mut record).unwrap_err();
        assert!(
            matches!(error, FieldError::Unterminated { line: 2 }),
            "{error}"
        );
    }

    #[test]
    fn records_split_across_read_buffers_are_read_whole() {
        let row = format!("{},\"{}\"\n", 7, "y".repeat(1000));
        let text = row.repeat(600);
        let all = records(&text, FieldFormat::comma_separated());
        assert_eq!(all.len(), 600);
        assert!(all
            .iter()
            .all(|(_, f)| f[1].as_ref().unwrap().len() == 1000));
        assert_eq!(all[599].0, 600);
    }

    #[test]
    fn empty_terminators_are_refused() {
        let format = FieldFormat {
            fields_terminated_by: Vec::new(),
            ..FieldFormat::tab_separated()
        };
        assert!(RecordReader::new(&b""[..], format).is_err());
    }
}
