//! The MySQL client/server protocol, as far as this server speaks it: packets, the
//! handshake with its two password plugins, and the encodings of answers (OK, errors,
//! result sets in text and binary form).

pub mod auth;
pub mod binary;
pub mod handshake;
pub mod long_data;
pub mod packet;
pub mod results;
pub mod wire;

/// Capability flags (MySQL's `CLIENT_*`).
pub mod capability {
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 2;
    pub const LONG_FLAG: u32 = 4;
    pub const CONNECT_WITH_DB: u32 = 8;
    /// LOAD DATA LOCAL: the client sends files the server names.
    pub const LOCAL_FILES: u32 = 0x80;
    pub const PROTOCOL_41: u32 = 0x200;
    pub const INTERACTIVE: u32 = 0x400;
    /// TLS: offered in the greeting when the front end has a certificate; a client's
    /// `SSLRequest` carries it.
    pub const SSL: u32 = 0x800;
    pub const TRANSACTIONS: u32 = 0x2000;
    pub const SECURE_CONNECTION: u32 = 0x8000;
    pub const MULTI_STATEMENTS: u32 = 0x1_0000;
    pub const MULTI_RESULTS: u32 = 0x2_0000;
    pub const PS_MULTI_RESULTS: u32 = 0x4_0000;
    pub const PLUGIN_AUTH: u32 = 0x8_0000;
    pub const CONNECT_ATTRS: u32 = 0x10_0000;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 0x20_0000;
    pub const DEPRECATE_EOF: u32 = 0x100_0000;

    /// What this server offers; a session uses what both sides have.
    pub const SERVER: u32 = LONG_PASSWORD
        | FOUND_ROWS
        | LONG_FLAG
        | CONNECT_WITH_DB
        | LOCAL_FILES
        | PROTOCOL_41
        | INTERACTIVE
        | TRANSACTIONS
        | SECURE_CONNECTION
        | MULTI_STATEMENTS
        | MULTI_RESULTS
        | PS_MULTI_RESULTS
        | PLUGIN_AUTH
        | CONNECT_ATTRS
        | PLUGIN_AUTH_LENENC_CLIENT_DATA
        | DEPRECATE_EOF;
}

/// Server status flags (`SERVER_STATUS_*`), sent with OK and EOF packets.
pub mod status {
    pub const IN_TRANSACTION: u16 = 1;
    pub const AUTOCOMMIT: u16 = 2;
    pub const MORE_RESULTS_EXIST: u16 = 8;
}

/// Command bytes (`COM_*`) this server answers.
pub mod command {
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const STATISTICS: u8 = 0x09;
    pub const CHANGE_USER: u8 = 0x11;
    pub const PING: u8 = 0x0E;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1A;
    pub const SET_OPTION: u8 = 0x1B;
    pub const RESET_CONNECTION: u8 = 0x1F;
}

/// Column type codes (`MYSQL_TYPE_*`).
pub mod column_type {
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const NULL: u8 = 6;
    pub const TIMESTAMP: u8 = 7;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const DATETIME: u8 = 12;
    pub const YEAR: u8 = 13;
    pub const VARCHAR: u8 = 15;
    pub const BIT: u8 = 16;
    pub const JSON: u8 = 245;
    pub const DECIMAL: u8 = 0;
    pub const NEWDECIMAL: u8 = 246;
    pub const ENUM: u8 = 247;
    pub const SET: u8 = 248;
    pub const TINY_BLOB: u8 = 249;
    pub const MEDIUM_BLOB: u8 = 250;
    pub const LONG_BLOB: u8 = 251;
    pub const BLOB: u8 = 252;
    pub const VAR_STRING: u8 = 253;
    pub const STRING: u8 = 254;
}

/// Column definition flags (`*_FLAG`).
pub mod column_flag {
    pub const NOT_NULL: u16 = 1;
    pub const PRIMARY_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const ZEROFILL: u16 = 64;
    pub const BINARY: u16 = 128;
    pub const ENUM: u16 = 256;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const SET: u16 = 2048;
    pub const NUM: u16 = 32768;
}

/// Collation ids: `utf8mb4_0900_ai_ci` (MySQL 8's default) for text, `binary` for numbers
/// and bytes.
pub const COLLATION_UTF8MB4: u16 = 255;
pub const COLLATION_BINARY: u16 = 63;
