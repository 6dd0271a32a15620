//! The protocol's basic encodings: fixed little-endian integers, length-encoded integers
//! and strings, NUL-terminated strings. [`Input`] reads a client's payload and reports a
//! short or malformed one as an error, never a panic.

/// A client sent a payload this server cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed packet: {0}")]
pub struct Malformed(pub &'static str);

pub fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// A length-encoded integer: one byte below 251, else a marker and 2, 3 or 8 bytes.
pub fn put_lenenc_int(out: &mut Vec<u8>, value: u64) {
    if value < 251 {
        out.push(value as u8);
    } else if value < 1 << 16 {
        out.push(0xFC);
        out.extend_from_slice(&(value as u16).to_le_bytes());
    } else if value < 1 << 24 {
        out.push(0xFD);
        out.extend_from_slice(&(value as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xFE);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

pub fn put_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub fn put_nul_string(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
    out.push(0);
}

/// A reader over one payload.
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    pub fn take(&mut self, count: usize, what: &'static str) -> Result<&'a [u8], Malformed> {
        if self.bytes.len() < count {
            return Err(Malformed(what));
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(taken)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, Malformed> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, Malformed> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, Malformed> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, Malformed> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(
            b.try_into().map_err(|_| Malformed(what))?,
        ))
    }

    pub fn lenenc_int(&mut self, what: &'static str) -> Result<u64, Malformed> {
        match self.u8(what)? {
            0xFC => Ok(u64::from(self.u16(what)?)),
            0xFD => {
                let b = self.take(3, what)?;
                Ok(u64::from(u32::from_le_bytes([b[0], b[1], b[2], 0])))
            }
            0xFE => self.u64(what),
            0xFB | 0xFF => Err(Malformed(what)),
            small => Ok(u64::from(small)),
        }
    }

    pub fn lenenc_bytes(&mut self, what: &'static str) -> Result<&'a [u8], Malformed> {
        let length = self.lenenc_int(what)?;
        let length = usize::try_from(length).map_err(|_| Malformed(what))?;
        self.take(length, what)
    }

    /// Bytes up to a NUL (consumed), or to the end when there is none.
    pub fn nul_terminated(&mut self) -> &'a [u8] {
        match self.bytes.iter().position(|&b| b == 0) {
            Some(end) => {
                let text = &self.bytes[..end];
                self.bytes = &self.bytes[end + 1..];
                text
            }
            None => self.rest(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_encoded_integers_round_trip_at_every_width() {
        for value in [
            0,
            250,
            251,
            65_535,
            65_536,
            (1 << 24) - 1,
            1 << 24,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc_int(&mut out, value);
            let mut input = Input::new(&out);
            assert_eq!(input.lenenc_int("n").unwrap(), value);
            assert!(input.is_empty());
        }
    }

    #[test]
    fn a_short_payload_is_malformed() {
        let mut input = Input::new(&[0xFC, 1]);
        assert_eq!(input.lenenc_int("count"), Err(Malformed("count")));
        let mut input = Input::new(&[5, b'a']);
        assert_eq!(input.lenenc_bytes("name"), Err(Malformed("name")));
    }
}
