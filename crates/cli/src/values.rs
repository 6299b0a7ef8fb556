//! Value parsers that several commands' flags share.

/// A whole number in `range` (a count, an index), said as clap says a ranged one:
/// `-1 is not in 1..=N` (`1..` up to `u64::MAX`) for a negative one too, not "invalid digit found in string"
/// (the flag takes `allow_negative_numbers`, or clap reads `-1` as a flag).
pub(crate) fn whole_in<T: TryFrom<u64> + 'static>(
    range: std::ops::RangeInclusive<u64>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| {
        let out_of_range = || match *range.end() {
            u64::MAX => format!("{text} is not in {}..", range.start()),
            end => format!("{text} is not in {}..={end}", range.start()),
        };
        let n = text.parse::<i128>().map_err(|e| e.to_string())?;
        let n = u64::try_from(n)
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(out_of_range)?;
        T::try_from(n).map_err(|_| out_of_range())
    }
}

/// A device's share of a split (`axpy --weights`): a finite number above 0.
pub(crate) fn weight(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(w) if w.is_finite() && w > 0.0 => Ok(w),
        _ => Err(format!(
            "{text}: a device's share is a number above 0 (1,3 gives the second device three times the first's)"
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
        assert_eq!(parse("-1"), Err("-1 is not in 1..=10".to_owned()));
        assert_eq!(parse("11"), Err("11 is not in 1..=10".to_owned()));
        assert!(parse("x").is_err());
        assert_eq!(
            whole_in::<u64>(1..=u64::MAX)("18446744073709551615"),
            Ok(u64::MAX)
        );
        assert_eq!(
            whole_in::<u64>(1..=u64::MAX)("-1"),
            Err("-1 is not in 1..".to_owned())
        );
        assert_eq!(
            whole_in::<u8>(0..=300)("256"),
            Err("256 is not in 0..=300".to_owned())
        );
    }

    #[test]
    fn a_weight_is_a_finite_number_above_zero() {
        assert_eq!(weight("1.5"), Ok(1.5));
        for bad in ["0", "-1", "nan", "inf", "x", ""] {
            let said = weight(bad).unwrap_err();
            assert!(
                said.starts_with(&format!("{bad}: a device's share")),
                "{said}"
            );
        }
    }
}
