//! Byte sizes in configuration files and on the command line: `4096`, `64K`, `512M`, `2G`
//! (binary units).

/// Parses a size; the suffix K, M, G or T (any case, optionally followed by `B` or `iB`)
/// multiplies by 1024, 1024², 1024³, 1024⁴.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(digits_end);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size: expected a number such as 512M or 2G"))?;
    let shift = match suffix.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "{text:?}: unknown size unit {suffix:?} (use K, M, G or T)"
            ))
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
    }

    #[test]
    fn nonsense_sizes_are_refused_with_the_reason() {
        assert!(parse_size("").unwrap_err().contains("not a size"));
        assert!(parse_size("12X").unwrap_err().contains("unit"));
        assert!(parse_size("-5").is_err());
        assert!(parse_size("99999999999T")
            .unwrap_err()
            .contains("too large"));
    }
}
