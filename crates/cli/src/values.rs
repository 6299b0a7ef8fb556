//! Value parsers that several commands' flags share.

/// A whole number in `range` (a count, an index), said as clap says a ranged one:
/// `-1 is not in 1..=N` (`1..` up to `u64::MAX`) for a negative one too, and `x is
/// not a whole number`, never "invalid digit found in string" (the flag takes
/// `allow_negative_numbers`, or clap reads `-1` as a flag). Spaces around it are
/// left out, as the other numeric flags' parsers do.
pub(crate) fn whole_in<T: TryFrom<u64> + 'static>(
    range: std::ops::RangeInclusive<u64>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| {
        let (start, end) = (*range.start(), *range.end());
        let Ok(n) = text.trim().parse::<i128>() else {
            return Err(format!("{text} is not a whole number"));
        };
        let out_of_range = || match end {
            u64::MAX if n < i128::from(start) => format!("{text} is not in {start}.."),
            _ => format!("{text} is not in {start}..={end}"),
        };
        let n = u64::try_from(n)
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(out_of_range)?;
        T::try_from(n).map_err(|_| out_of_range())
    }
}

/// A ratio (`bench --require`): a finite number above 0.
pub(crate) fn ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "{text}: expected a ratio above 0 (0.95: at least 95% of the plain loop's rate)"
        )),
    }
}

/// A device's share of a split (`axpy --weights`): a finite number above 0.
pub(crate) fn weight(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(w) if w.is_finite() && w > 0.0 => Ok(w),
        _ => Err(format!(
            "{}: a device's share is a number above 0 (1,3 gives the second device three times the first's)",
            if text.is_empty() { "an empty value" } else { text }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_whole_number_is_out_of_range_not_malformed() {
        let parse = whole_in::<u64>(1..=10);
        assert_eq!(parse("7"), Ok(7));
        assert_eq!(parse(" 5"), Ok(5));
        assert_eq!(parse("-1"), Err("-1 is not in 1..=10".to_owned()));
        assert_eq!(parse("11"), Err("11 is not in 1..=10".to_owned()));
        assert_eq!(parse("x"), Err("x is not a whole number".to_owned()));
        let any = whole_in::<u64>(1..=u64::MAX);
        assert_eq!(any("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(any("-1"), Err("-1 is not in 1..".to_owned()));
        // Too large says the whole range: it is above it, not outside `1..`.
        let said = any("99999999999999999999999").unwrap_err();
        assert_eq!(
            said,
            "99999999999999999999999 is not in 1..=18446744073709551615"
        );
        let small = whole_in::<u8>(0..=300);
        assert_eq!(small("256"), Err("256 is not in 0..=300".to_owned()));
    }

    #[test]
    fn a_weight_and_a_ratio_are_finite_numbers_above_zero() {
        assert_eq!(weight("1.5"), Ok(1.5));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            let said = weight(bad).unwrap_err();
            let expected = format!("{bad}: a device's share");
            assert!(said.starts_with(&expected), "{said}");
        }
        assert!(weight("").unwrap_err().starts_with("an empty value: "));
        assert_eq!(ratio("0.95"), Ok(0.95));
        assert!(ratio("-1")
            .unwrap_err()
            .starts_with("-1: expected a ratio above 0"));
    }
}
