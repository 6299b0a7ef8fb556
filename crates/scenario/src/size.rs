//! Byte sizes with units: `"1MiB"`, `"1.5 GiB"`, `"64KB"`, `4096`.

use std::fmt;

/// Why a size did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Empty text.
    #[error("empty size; write e.g. \"1MiB\"")]
    Empty,
    /// The number part is not a decimal number.
    #[error("{0:?} is not a number; write e.g. \"1MiB\" or \"1.5GiB\"")]
    NotANumber(String),
    /// The unit is not one we know.
    #[error(
        "unknown unit {0:?}; use B, KiB, MiB, GiB, TiB, PiB, EiB (binary) or KB, MB, GB, TB, PB, EB (decimal)"
    )]
    UnknownUnit(String),
    /// A unit's letter alone (`1M`, `64k`, `2Gi`): binary or decimal is not said.
    #[error("{text:?}: a unit needs its B, binary or decimal: did you mean {binary:?} ({binary_bytes} bytes) or {decimal:?} ({decimal_bytes} bytes)?")]
    BareLetter {
        /// The size as written.
        text: String,
        /// The number with the binary unit (`1MiB`).
        binary: String,
        /// Its bytes.
        binary_bytes: String,
        /// The number with the decimal unit (`1MB`).
        decimal: String,
        /// Its bytes.
        decimal_bytes: String,
    },
    /// The value does not fit in 64 bits.
    #[error("{0:?} is too large: a size is at most 16 EiB less one byte (18446744073709551615 B)")]
    Overflow(String),
    /// A fraction with more digits than 128-bit arithmetic carries.
    #[error(
        "{0:?} has more digits after the point than a size can use; write it in a smaller unit"
    )]
    TooPrecise(String),
    /// A fraction that is not a whole number of bytes.
    #[error("{0:?} is not a whole number of bytes")]
    Fractional(String),
}

/// The units a size may take, in any case: name, bytes, and whether its final B may
/// be left out (only bytes': `4096`). A letter alone (`1M`, `64k`) is refused with
/// both readings offered ([`SizeError::BareLetter`]): `1M` ran as 1000000 bytes
/// where 1 MiB was meant.
pub const SIZE_UNITS: [(&str, u64, bool); 13] = [
    ("B", 1, true),
    ("KiB", 1 << 10, false),
    ("MiB", 1 << 20, false),
    ("GiB", 1 << 30, false),
    ("TiB", 1 << 40, false),
    ("PiB", 1 << 50, false),
    ("EiB", 1 << 60, false),
    ("KB", 1_000, false),
    ("MB", 1_000_000, false),
    ("GB", 1_000_000_000, false),
    ("TB", 1_000_000_000_000, false),
    ("PB", 1_000_000_000_000_000, false),
    ("EB", 1_000_000_000_000_000_000, false),
];

/// The bytes of `unit` as written (any case), if it is one of [`SIZE_UNITS`].
fn unit_bytes(unit: &str) -> Option<u64> {
    SIZE_UNITS.iter().find_map(|&(name, bytes, optional_b)| {
        let without_b = &name[..name.len() - 1];
        (name.eq_ignore_ascii_case(unit) || optional_b && without_b.eq_ignore_ascii_case(unit))
            .then_some(bytes)
    })
}

/// `1M`, `64k`, `2Gi`: a unit's letter without its B (`Gi`: without it), read
/// both ways for the message.
fn bare_letter(text: &str, number: &str, unit: &str) -> Option<SizeError> {
    let letter = unit.strip_suffix(['i', 'I']).unwrap_or(unit);
    let letter = letter.to_ascii_uppercase();
    if letter.len() != 1 || !"KMGTPE".contains(letter.as_str()) {
        return None;
    }
    let reading = |suffix: &str| {
        let unit = format!("{letter}{suffix}");
        let bytes = parse_size(&format!("{number}{unit}"))
            .map_or_else(|_| "too many".to_owned(), |b| b.to_string());
        (format!("{number}{unit}"), bytes)
    };
    let (binary, binary_bytes) = reading("iB");
    let (decimal, decimal_bytes) = reading("B");
    Some(SizeError::BareLetter {
        text: text.to_owned(),
        binary,
        binary_bytes,
        decimal,
        decimal_bytes,
    })
}

/// Parses a size with an optional unit (case-insensitive, spaces allowed).
///
/// ```
/// use clmulti_scenario::parse_size;
/// assert_eq!(parse_size("1MiB"), Ok(1 << 20));
/// assert_eq!(parse_size("1.5 GiB"), Ok(3 << 29));
/// assert_eq!(parse_size("64KB"), Ok(64_000));
/// assert!(parse_size("1 MiBs").is_err());
/// assert_eq!(
///     parse_size("1M").unwrap_err().to_string(),
///     "\"1M\": a unit needs its B, binary or decimal: did you mean \"1MiB\" (1048576 bytes) or \"1MB\" (1000000 bytes)?"
/// );
/// ```
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(SizeError::Empty);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number = number.replace('_', "");
    if number.is_empty() {
        return Err(SizeError::NotANumber(text.to_owned()));
    }
    let multiplier = unit_bytes(unit.trim()).ok_or_else(|| {
        bare_letter(text, &number, unit.trim())
            .unwrap_or_else(|| SizeError::UnknownUnit(unit.trim().to_owned()))
    })?;
    let (whole, fraction) = number.split_once('.').unwrap_or((&number, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return Err(SizeError::NotANumber(text.to_owned()));
    }
    let fraction = fraction.trim_end_matches('0');
    let overflow = || SizeError::Overflow(text.to_owned());
    let whole_fits = whole
        .trim_start_matches('0')
        .parse::<u128>()
        .ok()
        .or(whole.bytes().all(|b| b == b'0').then_some(0))
        .and_then(|w| w.checked_mul(multiplier as u128))
        .is_some_and(|bytes| bytes <= u64::MAX as u128);
    if !whole_fits {
        return Err(overflow());
    }
    // The whole part fits: what does not now is the fraction's length.
    let too_precise = || SizeError::TooPrecise(text.to_owned());
    let digits: u128 = format!("{whole}{fraction}")
        .parse()
        .map_err(|_| too_precise())?;
    let scale = 10u128
        .checked_pow(fraction.len() as u32)
        .ok_or_else(too_precise)?;
    let scaled = digits
        .checked_mul(multiplier as u128)
        .ok_or_else(too_precise)?;
    if scaled % scale != 0 {
        return Err(SizeError::Fractional(text.to_owned()));
    }
    u64::try_from(scaled / scale).map_err(|_| overflow())
}

/// Formats a size in the largest binary unit that divides it exactly: `1MiB`, `1536KiB`.
///
/// ```
/// use clmulti_scenario::{format_size, parse_size};
/// assert_eq!(format_size(1 << 20), "1MiB");
/// assert_eq!(parse_size(&format_size(123_456)), Ok(123_456));
/// ```
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [
        ("EiB", 60),
        ("PiB", 50),
        ("TiB", 40),
        ("GiB", 30),
        ("MiB", 20),
        ("KiB", 10),
    ] {
        if bytes != 0 && bytes % (1u64 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// Formats a measured byte count for people, in the largest binary unit below it
/// with two decimals: `512 B`, `1.00 MiB`, `139.80 GiB`. Negative counts (shrinking
/// resources) keep their sign.
///
/// ```
/// use clmulti_scenario::format_bytes;
/// assert_eq!(format_bytes(512.0), "512 B");
/// assert_eq!(format_bytes(1536.0), "1.50 KiB");
/// assert_eq!(format_bytes(-1048576.0), "-1.00 MiB");
/// assert_eq!(format_bytes(-0.3), "0 B");
/// ```
pub fn format_bytes(bytes: f64) -> String {
    format_bytes_with(bytes, 2)
}

/// Two byte counts a message sets against each other ("would pass"), with as many
/// decimals as it takes (up to six) for them to read apart: `4.001 GiB` and
/// `4.000 GiB`, never `4.00 GiB would pass 4.00 GiB`.
///
/// ```
/// use clmulti_scenario::format_bytes_apart;
/// let (a, b) = format_bytes_apart(4295806976.0, 4294967296.0);
/// assert_eq!((a.as_str(), b.as_str()), ("4.001 GiB", "4.000 GiB"));
/// let (a, b) = format_bytes_apart(3.07 * 1073741824.0, 3.0 * 1073741824.0);
/// assert_eq!((a.as_str(), b.as_str()), ("3.07 GiB", "3.00 GiB"));
/// ```
pub fn format_bytes_apart(a: f64, b: f64) -> (String, String) {
    let mut pair = (format_bytes(a), format_bytes(b));
    for decimals in 3..=6 {
        if pair.0 != pair.1 {
            break;
        }
        pair = (
            format_bytes_with(a, decimals),
            format_bytes_with(b, decimals),
        );
    }
    pair
}

/// Formats a count for people: whole numbers below a million as they are (`278`,
/// `100000`), fractions with two decimals (`0.25`), and from a million on with three
/// significant digits and a word (`8.25 million`, `119 million`), so no figure a
/// person reads runs past six digits. Negative counts keep their sign.
///
/// ```
/// use clmulti_scenario::format_count;
/// assert_eq!(format_count(278.0), "278");
/// assert_eq!(format_count(100000.0), "100000");
/// assert_eq!(format_count(0.25), "0.25");
/// assert_eq!(format_count(8250342.0), "8.25 million");
/// assert_eq!(format_count(119302030.0), "119 million");
/// assert_eq!(format_count(-2.5e9), "-2.50 billion");
/// ```
pub fn format_count(count: f64) -> String {
    let sign = if count < 0.0 && count.abs() >= 0.005 {
        "-"
    } else {
        ""
    };
    let value = count.abs();
    if value < 999_999.5 {
        return if value.fract() == 0.0 || value >= 1000.0 {
            format!("{sign}{value:.0}")
        } else {
            format!("{sign}{value:.2}")
        };
    }
    let (scaled, word) = [(1e12, "trillion"), (1e9, "billion"), (1e6, "million")]
        .into_iter()
        .find(|(scale, _)| value >= scale * 0.9999995)
        .map_or((value, ""), |(scale, word)| (value / scale, word));
    let decimals = if scaled >= 99.95 {
        0
    } else if scaled >= 9.995 {
        1
    } else {
        2
    };
    format!("{sign}{scaled:.decimals$} {word}")
}

/// A rate for people: [`format_count`] of the events per second and the unit,
/// `12345 allocations/s`, `1.23 million allocations/s`.
///
/// ```
/// use clmulti_scenario::format_rate;
/// assert_eq!(format_rate(523_412.4, "allocations"), "523412 allocations/s");
/// assert_eq!(format_rate(1_234_567.0, "allocations"), "1.23 million allocations/s");
/// ```
pub fn format_rate(per_second: f64, unit: &str) -> String {
    format!("{} {unit}/s", format_count(per_second.round()))
}

fn format_bytes_with(bytes: f64, decimals: usize) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    // No "-0 B": what rounds to zero bytes has no sign.
    let sign = if bytes <= -0.5 { "-" } else { "" };
    let mut value = bytes.abs();
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{sign}{value:.0} B")
    } else {
        format!("{sign}{value:.decimals$} {}", UNITS[unit])
    }
}

/// A byte count that displays with [`format_size`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1 KiB"), Ok(1024));
        assert_eq!(parse_size("1mib"), Ok(1 << 20));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("0.5KiB"), Ok(512));
        assert_eq!(parse_size("1_000"), Ok(1000));
        assert_eq!(
            parse_size("0.3B"),
            Err(SizeError::Fractional("0.3B".into()))
        );
        assert!(matches!(
            parse_size("1MiBs"),
            Err(SizeError::UnknownUnit(_))
        ));
        assert!(matches!(parse_size("MiB"), Err(SizeError::NotANumber(_))));
        assert!(matches!(
            parse_size("1.2.3MiB"),
            Err(SizeError::NotANumber(_))
        ));
        assert!(matches!(
            parse_size("17179869184TiB"),
            Err(SizeError::Overflow(_))
        ));
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert_eq!(parse_size("15EiB"), Ok(15 << 60));
        assert_eq!(
            parse_size("1.50000000000000000000000000000000000000000KiB"),
            Ok(1536)
        );
        assert!(matches!(
            parse_size("1.00000000000000000000000000000000000000001KiB"),
            Err(SizeError::TooPrecise(_))
        ));
        for bare in ["1M", "64k", "2Gi", "1e", "1.5 t"] {
            assert!(
                matches!(parse_size(bare), Err(SizeError::BareLetter { .. })),
                "{bare}"
            );
        }
        assert!(parse_size("64k")
            .unwrap_err()
            .to_string()
            .contains("\"64KiB\" (65536 bytes) or \"64KB\" (64000 bytes)"));
        assert_eq!(parse_size("2PB"), Ok(2_000_000_000_000_000));
        assert_eq!(format_size(3 << 50), "3PiB");
        let too_large = parse_size("16EiB").unwrap_err().to_string();
        assert!(
            too_large.contains("at most 16 EiB less one byte"),
            "{too_large}"
        );
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(n in any::<u64>()) {
            prop_assert_eq!(parse_size(&format_size(n)), Ok(n));
        }

        #[test]
        fn binary_units_multiply(n in 0u64..(1 << 20), unit in 0usize..4) {
            let (name, shift) = [("KiB", 10), ("MiB", 20), ("GiB", 30), ("TiB", 40)][unit];
            prop_assert_eq!(parse_size(&format!("{n} {name}")), Ok(n << shift));
        }

        #[test]
        fn any_text_never_panics(text in "\\PC{0,24}") {
            let _ = parse_size(&text);
        }

        #[test]
        fn overflow_is_an_error(n in (u64::MAX >> 10) + 1..u64::MAX) {
            let text = format!("{}KiB", n);
            prop_assert!(matches!(parse_size(&text), Err(SizeError::Overflow(_))));
        }
    }
}
