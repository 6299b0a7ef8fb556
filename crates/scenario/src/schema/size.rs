//! Sizes in the schema: the exact pattern of what `parse_size` reads (whole bytes,
//! 64 bits, any case) tested in an `if`, and each way to miss it refused in words:
//! a unit's letter alone, too large, zero, below a minimum.

use super::words::{refuse, with};
use serde_json::{json, Value};

/// Digits with `_` between them, at least one digit: the whole part of a size.
const WHOLE: &str = "[0-9_]*[0-9][0-9_]*";

/// A fraction that adds at most `digits` significant digits (zeros after them are
/// fine): sizes in decimal units are whole bytes up to their power of ten.
fn fraction(digits: usize, required: bool) -> String {
    let body = if digits == 0 {
        "[0_]*".to_owned()
    } else {
        format!("(?:_*[0-9]){{0,{digits}}}[0_]*")
    };
    if required {
        format!("\\.{body}")
    } else {
        format!("(?:\\.{body})?")
    }
}

/// The body of a size string (no anchors): a number and an optional unit, spaces
/// allowed, the unit in any case; a fraction only where it can be whole bytes.
fn size_body() -> String {
    let mut alternatives = Vec::new();
    let mut binary = Vec::new();
    for (name, bytes, optional_b) in crate::SIZE_UNITS {
        let unit = unit_pattern(name, optional_b);
        if bytes == 1 {
            // Bytes: no fraction but zeros.
            alternatives.push(format!("{WHOLE}{}\\s*{unit}", fraction(0, false)));
        } else if bytes.is_power_of_two() {
            binary.push(unit);
        } else {
            // Decimal units: a fraction of at most as many digits as the unit's zeros.
            let digits = bytes.ilog10() as usize;
            alternatives.push(format!(
                "(?:{WHOLE}{}|_*{})\\s*{unit}",
                fraction(digits, false),
                fraction(digits, true)
            ));
        }
    }
    // Binary units: any fraction (0.5KiB is 512 bytes).
    alternatives.push(format!(
        "(?:{WHOLE}(?:\\.[0-9_]*)?|[0-9_]*\\.[0-9_]*[0-9][0-9_]*)\\s*(?:{})",
        binary.join("|")
    ));
    format!("\\s*(?:{})\\s*", alternatives.join("|"))
}

/// A unit's name in any case, its final B optional where the unit allows:
/// `[Kk][Ii][Bb]`, `[Kk][Bb]?`.
fn unit_pattern(name: &str, optional_b: bool) -> String {
    let mut pattern: String = name
        .chars()
        .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
        .collect();
    if optional_b {
        pattern.push('?');
    }
    pattern
}

/// A percentage in (0, 100].
const PERCENT_BODY: &str =
    "\\s*0*(?:100(?:\\.0*)?|[1-9][0-9]?(?:\\.[0-9]*)?|\\.[0-9]*[1-9][0-9]*)\\s*%\\s*";

/// Sizes too large for 64 bits: a whole part above what fits in each unit (bytes
/// above 18446744073709551615, EiB above 15, ...), whatever fraction follows.
fn overflow() -> String {
    let alternatives: Vec<String> = crate::SIZE_UNITS
        .iter()
        .map(|&(name, bytes, optional_b)| {
            format!(
                "(?:{})(?:\\.[0-9_]*)?\\s*{}",
                integers_above(u64::MAX / bytes),
                unit_pattern(name, optional_b)
            )
        })
        .collect();
    format!("^\\s*0*(?:{})\\s*$", alternatives.join("|"))
}

/// A pattern for the decimal integers (no leading zeros) above `n`: longer ones, and
/// those of its length that pass it at some digit.
fn integers_above(n: u64) -> String {
    let digits = n.to_string();
    let mut alternatives = vec![format!("[1-9][0-9]{{{},}}", digits.len())];
    for (i, d) in digits.bytes().enumerate() {
        if d < b'9' {
            let rest = digits.len() - i - 1;
            alternatives.push(format!(
                "{}[{}-9][0-9]{{{rest}}}",
                &digits[..i],
                (d + 1) as char
            ));
        }
    }
    alternatives.join("|")
}

/// A size string that is zero.
const ZERO: &str = "^\\s*[0_]*(?:\\.[0_]*)?\\s*[A-Za-z]*\\s*$";

/// Sizes certainly below 64 MiB: bytes of up to 7 digits, K of up to 4, M below 67,
/// MiB below 64.
const BELOW_64_MIB: &str = "^\\s*0*(?:[0-9]{1,7}(?:\\.[0-9]*)?\\s*[Bb]?|[0-9]{1,4}(?:\\.[0-9]*)?\\s*[Kk][Ii]?[Bb]?|(?:[0-9]|[1-5][0-9]|6[0-6])(?:\\.[0-9]*)?\\s*[Mm][Bb]?|(?:[0-9]|[1-5][0-9]|6[0-3])(?:\\.[0-9]*)?\\s*[Mm][Ii][Bb])\\s*$";

/// A unit's letter without its B (`1M`, `64k`, `2Gi`): refused by check, which
/// offers both readings.
const BARE_LETTER: &str = "^\\s*[0-9_.]+\\s*[KkMmGgTtPpEe][Ii]?\\s*$";

/// What a size string may be, in words.
pub(super) const SIZE_WORDS: &str = "a size: an integer number of bytes, or a number and a unit, binary (B, KiB, MiB, GiB, TiB, PiB, EiB) or decimal (KB, MB, GB, TB, PB, EB), upper or lower case, like \"1MiB\", \"1.5 GiB\" or \"64KB\"; whole bytes, at most 16 EiB less one byte";

/// A string that misses the size pattern: a bare letter said apart, else `words`.
fn missed(words: &str) -> Value {
    json!({
        "if": {"pattern": BARE_LETTER},
        "then": refuse("a unit needs its B, binary or decimal: write \"1MiB\" (1048576 bytes) or \"1MB\" (1000000 bytes), not \"1M\""),
        "else": refuse(words),
    })
}

/// A string that matches the size pattern: too large, zero or below `min_bytes`
/// refused in words.
fn bounded(min_bytes: u64) -> Value {
    let mut checks = Vec::new();
    if min_bytes >= 64 << 20 {
        checks.push((
            BELOW_64_MIB.to_owned(),
            format!("at least {}", crate::format_size(min_bytes)),
        ));
    }
    if min_bytes >= 1 {
        checks.push((ZERO.to_owned(), "at least 1 byte".to_owned()));
    }
    checks.push((
        overflow(),
        "too large: a size is at most 16 EiB less one byte (18446744073709551615 B)".to_owned(),
    ));
    // Innermost first: each refusal is the `then` of its pattern, the next check its `else`.
    checks.into_iter().fold(json!({}), |inner, (pattern, words)| {
        json!({"if": {"type": "string", "pattern": pattern}, "then": refuse(&words), "else": inner})
    })
}

/// A size: an integer of bytes or a string with a unit, at least `min_bytes`. (No
/// `allOf` in a value's schema: taplo 0.9's key completion recurses into it until
/// its stack runs out.)
pub(super) fn size(description: &str, min_bytes: u64) -> Value {
    json!({
        "description": description,
        "type": ["integer", "string"],
        "minimum": min_bytes,
        "examples": ["1MiB", "64KiB", "1.5GiB", "64KB", 4096],
        "if": {"pattern": format!("^{}$", size_body())},
        "then": bounded(min_bytes),
        "else": missed(SIZE_WORDS),
    })
}

/// A size or a percentage of RAM in (0, 100].
pub(super) fn size_or_percent(description: &str, types: Value) -> Value {
    json!({
        "description": description,
        "type": types,
        "minimum": 0,
        "examples": ["50%", "8GiB"],
        "if": {"pattern": format!("^(?:{}|{PERCENT_BODY})$", size_body())},
        "then": bounded(0),
        "else": missed(&format!("{SIZE_WORDS}; or a percentage of RAM above 0 and at most 100, like \"50%\"")),
    })
}

/// A size written as a string (an `[env]` knob).
pub(super) fn size_text(description: &str) -> Value {
    with(
        json!({"description": description, "type": "string"}),
        json!({
            "if": {"pattern": format!("^{}$", size_body())},
            "then": bounded(0),
            "else": missed(SIZE_WORDS),
        }),
    )
}
