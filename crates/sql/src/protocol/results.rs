//! Answers: OK, error and EOF packets, column definitions, rows in text and binary form.

use super::wire::{put_lenenc_bytes, put_lenenc_int, put_u16, put_u32};
use super::{column_type, COLLATION_BINARY};

pub const OK_HEADER: u8 = 0x00;
pub const EOF_HEADER: u8 = 0xFE;
pub const ERROR_HEADER: u8 = 0xFF;
/// A NULL in a text row.
pub const TEXT_NULL: u8 = 0xFB;

/// What the server says about one column of a result set (or one parameter of a prepared
/// statement).
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDefinition {
    pub schema: String,
    pub table: String,
    pub name: String,
    /// The table column's own name (the same as `name` unless aliased; empty for
    /// expressions).
    pub org_name: String,
    pub type_code: u8,
    pub flags: u16,
    /// Display width, as MySQL computes it for the type.
    pub length: u32,
    pub decimals: u8,
    pub collation: u16,
    /// The digits of a second a TIME, DATETIME or TIMESTAMP value shows in the text
    /// protocol: a table column's own (`DATETIME(3)`); `None` (an expression): six where
    /// the value has a fraction, else none. Not sent.
    pub fraction_digits: Option<u8>,
}

impl ColumnDefinition {
    /// A computed column of `type_code` with no table behind it.
    pub fn expression(name: &str, type_code: u8, flags: u16, length: u32, collation: u16) -> Self {
        Self {
            schema: String::new(),
            table: String::new(),
            name: name.to_string(),
            org_name: String::new(),
            type_code,
            flags,
            length,
            decimals: if type_code == column_type::DOUBLE {
                31
            } else {
                0
            },
            collation,
            fraction_digits: None,
        }
    }

    /// `Protocol::ColumnDefinition41`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_lenenc_bytes(out, b"def");
        put_lenenc_bytes(out, self.schema.as_bytes());
        put_lenenc_bytes(out, self.table.as_bytes());
        put_lenenc_bytes(out, self.table.as_bytes());
        put_lenenc_bytes(out, self.name.as_bytes());
        put_lenenc_bytes(out, self.org_name.as_bytes());
        put_lenenc_int(out, 0x0C);
        put_u16(out, self.collation);
        put_u32(out, self.length);
        out.push(self.type_code);
        put_u16(out, self.flags);
        out.push(self.decimals);
        out.extend_from_slice(&[0, 0]);
    }
}

/// `OK_Packet`; with `eof_header` it ends a result set (the `DEPRECATE_EOF` form).
pub fn ok(
    out: &mut Vec<u8>,
    eof_header: bool,
    affected_rows: u64,
    last_insert_id: u64,
    status: u16,
    warnings: u16,
    info: &str,
) {
    out.push(if eof_header { EOF_HEADER } else { OK_HEADER });
    put_lenenc_int(out, affected_rows);
    put_lenenc_int(out, last_insert_id);
    put_u16(out, status);
    put_u16(out, warnings);
    // Clients read the message length-encoded (libmysqlclient and libmariadb both).
    if !info.is_empty() {
        put_lenenc_bytes(out, info.as_bytes());
    }
}

/// `ERR_Packet`.
pub fn error(out: &mut Vec<u8>, code: u16, sql_state: &str, message: &str) {
    out.push(ERROR_HEADER);
    put_u16(out, code);
    out.push(b'#');
    let mut state = [b'H', b'Y', b'0', b'0', b'0'];
    for (slot, byte) in state.iter_mut().zip(sql_state.bytes()) {
        *slot = byte;
    }
    out.extend_from_slice(&state);
    out.extend_from_slice(message.as_bytes());
}

/// `EOF_Packet` (clients without `DEPRECATE_EOF`).
pub fn eof(out: &mut Vec<u8>, warnings: u16, status: u16) {
    out.push(EOF_HEADER);
    put_u16(out, warnings);
    put_u16(out, status);
}

/// A column definition for a value of binary collation (numbers, dates, bytes).
pub fn is_binary_collation(collation: u16) -> bool {
    collation == COLLATION_BINARY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_packet_carries_code_state_and_message() {
        let mut out = Vec::new();
        error(&mut out, 1146, "42S02", "Table 'a.b' doesn't exist");
        assert_eq!(&out[..9], b"\xff\x7a\x04#42S02");
        assert!(out.ends_with(b"doesn't exist"));
    }

    #[test]
    fn an_ok_packet_carries_counts_and_status() {
        let mut out = Vec::new();
        ok(&mut out, false, 3, 300, 2, 1, "");
        assert_eq!(out, [0, 3, 0xFC, 44, 1, 2, 0, 1, 0]);
    }
}
