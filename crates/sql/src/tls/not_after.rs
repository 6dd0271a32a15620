//! When a certificate stops being valid (its `notAfter`), read from its DER, for the
//! expiry the front end shows (`kista_info.certificates`, the metrics). Only the path to
//! that one field is walked, every length checked against what is there:
//!
//! ```text
//! Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL,
//!     serialNumber INTEGER, signature SEQUENCE, issuer SEQUENCE,
//!     validity SEQUENCE { notBefore Time, notAfter Time }, ... }, ... }
//! Time ::= UTCTime "YYMMDDHHMMSSZ" | GeneralizedTime "YYYYMMDDHHMMSSZ"
//! ```

use kista_client::types::Date;

const SEQUENCE: u8 = 0x30;
const VERSION: u8 = 0xA0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// Seconds since 1970-01-01 UTC at which the certificate `der` expires; `None` for bytes
/// that are not a certificate as above.
pub fn not_after_s(der: &[u8]) -> Option<i64> {
    let (SEQUENCE, certificate, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, mut fields, _) = element(certificate)? else {
        return None;
    };
    if fields.first() == Some(&VERSION) {
        fields = element(fields)?.2;
    }
    for _serial_signature_issuer in 0..3 {
        fields = element(fields)?.2;
    }
    let (SEQUENCE, validity, _) = element(fields)? else {
        return None;
    };
    let not_before_rest = element(validity)?.2;
    let (tag, time, _) = element(not_before_rest)?;
    time_s(tag, time)
}

/// `seconds` since 1970-01-01 UTC as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn utc_text(seconds: i64) -> String {
    let days = i32::try_from(seconds.div_euclid(86_400)).unwrap_or(i32::MAX);
    let of_day = seconds.rem_euclid(86_400);
    let (hour, minute, second) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    match Date::from_days(days) {
        Some(date) => format!(
            "{:04}-{:02}-{:02} {hour:02}:{minute:02}:{second:02}",
            date.year, date.month, date.day
        ),
        None => "out of range".into(),
    }
}

/// The first element of `bytes`: its tag, its content and what follows it.
fn element(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7F);
        if !(1..=4).contains(&count) || rest.len() < count {
            return None;
        }
        let length = (rest[..count].iter()).fold(0usize, |n, &byte| n << 8 | usize::from(byte));
        (length, &rest[count..])
    };
    let (content, after) = rest.split_at_checked(length)?;
    Some((tag, content, after))
}

/// A UTCTime (years 1950-2049, as X.509 reads two digits) or GeneralizedTime in UTC.
fn time_s(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        UTC_TIME if text.len() == 12 => {
            let short: u16 = text[..2].parse().ok()?;
            (
                if short < 50 {
                    2000 + short
                } else {
                    1900 + short
                },
                &text[2..],
            )
        }
        GENERALIZED_TIME if text.len() == 14 => (text[..4].parse().ok()?, &text[4..]),
        _ => return None,
    };
    let two = |at: usize| rest.get(at..at + 2)?.parse::<u8>().ok();
    let date = Date::new(year, two(0)?, two(2)?)?;
    let (hour, minute, second) = (two(4)?, two(6)?, two(8)?);
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let seconds_of_day = i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second);
    Some(i64::from(date.to_days()) * 86_400 + seconds_of_day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate's skeleton with `not_after` (tag and text) as its validity's end.
    fn certificate(version: bool, not_after: (u8, &str)) -> Vec<u8> {
        let wrap = |tag: u8, content: &[u8]| {
            let mut out = vec![tag];
            if content.len() < 0x80 {
                out.push(content.len() as u8);
            } else {
                out.extend_from_slice(&[0x82, (content.len() >> 8) as u8, content.len() as u8]);
            }
            out.extend_from_slice(content);
            out
        };
        let mut fields = Vec::new();
        if version {
            fields.extend(wrap(VERSION, &wrap(0x02, &[2])));
        }
        fields.extend(wrap(0x02, &[1, 2, 3]));
        fields.extend(wrap(SEQUENCE, &[0x05, 0x00]));
        fields.extend(wrap(SEQUENCE, &[0u8; 200]));
        let mut validity = wrap(UTC_TIME, b"260101000000Z");
        validity.extend(wrap(not_after.0, not_after.1.as_bytes()));
        fields.extend(wrap(SEQUENCE, &validity));
        fields.extend(wrap(SEQUENCE, &[1, 2, 3]));
        wrap(SEQUENCE, &wrap(SEQUENCE, &fields))
    }

    #[test]
    fn the_end_of_validity_is_read_in_either_time_form() {
        // 2027-12-08 01:02:03 UTC.
        let expected = 1_828_227_723;
        let utc = certificate(true, (UTC_TIME, "271208010203Z"));
        assert_eq!(not_after_s(&utc), Some(expected));
        let generalized = certificate(false, (GENERALIZED_TIME, "20271208010203Z"));
        assert_eq!(not_after_s(&generalized), Some(expected));
        let last_century = certificate(true, (UTC_TIME, "991231235959Z"));
        assert_eq!(not_after_s(&last_century), Some(946_684_799));
        assert_eq!(utc_text(expected), "2027-12-08 01:02:03");
    }

    #[test]
    fn anything_else_is_none_never_a_panic() {
        let good = certificate(true, (UTC_TIME, "271208010203Z"));
        for cut in 0..good.len() {
            let _ = not_after_s(&good[..cut]);
        }
        assert_eq!(not_after_s(&good[..good.len() - 1]), None);
        assert_eq!(
            not_after_s(&certificate(true, (UTC_TIME, "271308010203Z"))),
            None
        );
        assert_eq!(
            not_after_s(&certificate(true, (0x04, "271208010203Z"))),
            None
        );
        assert_eq!(not_after_s(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }
}
