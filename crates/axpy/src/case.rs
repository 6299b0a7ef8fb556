//! One axpy problem and its CPU reference: no OpenCL here.

use crate::AxpyError;
use serde::{Deserialize, Serialize};

/// One axpy problem: y[y_offset + i*inc_y] += alpha * x[x_offset + i*inc_x], i < n.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AxpyCase {
    /// Elements.
    pub n: u64,
    /// The scalar.
    pub alpha: f32,
    /// First x element.
    pub x_offset: u64,
    /// x stride, elements.
    pub inc_x: u64,
    /// First y element.
    pub y_offset: u64,
    /// y stride, elements.
    pub inc_y: u64,
}

impl AxpyCase {
    /// Contiguous, zero offsets.
    pub fn contiguous(n: u64, alpha: f32) -> Self {
        AxpyCase {
            n,
            alpha,
            x_offset: 0,
            inc_x: 1,
            y_offset: 0,
            inc_y: 1,
        }
    }

    /// Floats the x and y buffers need (at least 1: OpenCL has no empty buffers).
    pub fn buffer_lengths(&self) -> (u64, u64) {
        let span = |offset: u64, inc: u64| {
            if self.n == 0 {
                offset + 1
            } else {
                offset + (self.n - 1) * inc + 1
            }
        };
        (
            span(self.x_offset, self.inc_x),
            span(self.y_offset, self.inc_y),
        )
    }

    pub(crate) fn fast_ok(&self) -> bool {
        self.inc_x == 1 && self.inc_y == 1 && self.x_offset % 4 == 0 && self.y_offset % 4 == 0
    }
}

/// Non-trivial, reproducible test data in [-1, 1): not zeros, not constant.
pub fn test_data(len: u64, seed: u64) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let h = (i.wrapping_add(seed)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (h % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// The largest difference between device and CPU that float rounding allows for
/// one application of y + alpha*x.
pub fn tolerance(alpha: f32, x: f32, y: f32) -> f32 {
    2.0 * f32::EPSILON * ((alpha * x).abs() + y.abs()) + f32::MIN_POSITIVE
}

/// Checks y against the CPU reference after `times` applications; returns the
/// largest error in epsilons of the tolerance.
pub(crate) fn check(
    case: &AxpyCase,
    x: &[f32],
    y0: &[f32],
    got: &[f32],
    times: u32,
) -> Result<f64, AxpyError> {
    // The exact result of `times` applications, rounded once: each application on
    // the device rounds by at most the tolerance of its own magnitudes, and y moves
    // monotonically from y0 to the result, so `times` tolerances of the larger end
    // bound the device's error. One pass, whatever `times` is.
    let mut expected = y0.to_vec();
    let mut touched = vec![false; y0.len()];
    let (alpha, repeats) = (f64::from(case.alpha), f64::from(times));
    for i in 0..case.n {
        let xi = x[(case.x_offset + i * case.inc_x) as usize];
        let yi = (case.y_offset + i * case.inc_y) as usize;
        expected[yi] = (f64::from(expected[yi]) + repeats * alpha * f64::from(xi)) as f32;
        touched[yi] = true;
    }
    let (mut mismatches, mut first, mut worst) = (0u64, None, 0f64);
    for (i, (&g, &e)) in got.iter().zip(&expected).enumerate() {
        let tol = if touched[i] {
            let xi =
                x[((i as u64 - case.y_offset) / case.inc_y * case.inc_x + case.x_offset) as usize];
            times as f32 * tolerance(case.alpha, xi, e.abs().max(y0[i].abs()))
        } else {
            0.0
        };
        let err = (g - e).abs();
        if err > tol || g.is_nan() {
            mismatches += 1;
            first.get_or_insert((i as u64, g, e));
        } else if tol > 0.0 {
            worst = worst.max(f64::from(err / tol) * 2.0);
        }
    }
    match first {
        None => Ok(worst),
        Some((first_index, got, expected)) => Err(AxpyError::Mismatch {
            n: case.n,
            mismatches,
            first_index,
            got,
            expected,
        }),
    }
}

/// [`check`] of a contiguous case (`y[i] += alpha * x[i]`, `times` over), in chunks
/// on every core: at n = 2^29 and 30 applications one core takes tens of seconds.
pub(crate) fn check_contiguous(
    alpha: f32,
    x: &[f32],
    y0: &[f32],
    got: &[f32],
    times: u32,
) -> Result<f64, AxpyError> {
    let n = got.len();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1 << 16);
    let results: Vec<(usize, Result<f64, AxpyError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let end = (start + chunk).min(n);
                scope.spawn(move || {
                    let case = AxpyCase::contiguous((end - start) as u64, alpha);
                    let r = check(
                        &case,
                        &x[start..end],
                        &y0[start..end],
                        &got[start..end],
                        times,
                    );
                    (start, r)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a check thread panicked"))
            .collect()
    });
    let mut worst = 0f64;
    let mut failed: Option<(u64, u64, f32, f32)> = None;
    for (start, r) in results {
        match r {
            Ok(w) => worst = worst.max(w),
            Err(AxpyError::Mismatch {
                mismatches,
                first_index,
                got,
                expected,
                ..
            }) => {
                let (count, first, g, e) =
                    failed.unwrap_or((0, first_index + start as u64, got, expected));
                failed = Some((count + mismatches, first, g, e));
            }
            Err(e) => return Err(e),
        }
    }
    match failed {
        None => Ok(worst),
        Some((mismatches, first_index, got, expected)) => Err(AxpyError::Mismatch {
            n: n as u64,
            mismatches,
            first_index,
            got,
            expected,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunked_check_names_the_first_wrong_element_of_the_whole() {
        let n = 300_000;
        let (x, y0) = (test_data(n, 1), test_data(n, 2));
        // Three applications, one at a time as a device does them.
        let mut got: Vec<f32> = x
            .iter()
            .zip(&y0)
            .map(|(x, y)| ((y + 0.5 * x) + 0.5 * x) + 0.5 * x)
            .collect();
        assert!(check_contiguous(0.5, &x, &y0, &got, 3).unwrap() <= 2.0);
        got[250_001] += 1.0;
        got[299_999] = f32::NAN;
        match check_contiguous(0.5, &x, &y0, &got, 3) {
            Err(AxpyError::Mismatch {
                n,
                mismatches,
                first_index,
                ..
            }) => assert_eq!((n, mismatches, first_index), (300_000, 2, 250_001)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_one_pass_reference_holds_over_many_applications_and_counts_them() {
        let n = 10_000;
        let (x, y0) = (test_data(n, 3), test_data(n, 4));
        let apply = |times: u32, fused: bool| -> Vec<f32> {
            x.iter()
                .zip(&y0)
                .map(|(&x, &y)| {
                    (0..times).fold(y, |y, _| {
                        if fused {
                            0.75f32.mul_add(x, y)
                        } else {
                            y + 0.75 * x
                        }
                    })
                })
                .collect()
        };
        for fused in [false, true] {
            let got = apply(300, fused);
            assert!(check_contiguous(0.75, &x, &y0, &got, 300).unwrap() <= 2.0);
            // One application fewer than claimed is caught.
            assert!(matches!(
                check_contiguous(0.75, &x, &y0, &apply(299, fused), 300),
                Err(AxpyError::Mismatch { mismatches, .. }) if mismatches > n / 2
            ));
        }
    }

    #[test]
    fn reference_check_accepts_exact_and_rejects_wrong_results() {
        let case = AxpyCase {
            n: 10,
            alpha: 2.0,
            x_offset: 1,
            inc_x: 2,
            y_offset: 3,
            inc_y: 3,
        };
        let (xl, yl) = case.buffer_lengths();
        assert_eq!((xl, yl), (20, 31));
        let x = test_data(xl, 1);
        let y0 = test_data(yl, 2);
        let mut y = y0.clone();
        for i in 0..10usize {
            y[3 + 3 * i] += 2.0 * x[1 + 2 * i];
        }
        assert!(check(&case, &x, &y0, &y, 1).is_ok());
        // One element off by much more than rounding.
        let mut wrong = y.clone();
        wrong[6] += 1e-3;
        assert!(matches!(
            check(&case, &x, &y0, &wrong, 1),
            Err(AxpyError::Mismatch {
                mismatches: 1,
                first_index: 6,
                ..
            })
        ));
        // An element outside the strided set must stay untouched.
        let mut stray = y.clone();
        stray[4] += 1.0;
        assert!(matches!(
            check(&case, &x, &y0, &stray, 1),
            Err(AxpyError::Mismatch { first_index: 4, .. })
        ));
    }

    #[test]
    fn test_data_is_not_trivial() {
        let d = test_data(1000, 7);
        assert!(d.iter().all(|v| (-1.0..1.0).contains(v)));
        assert!(d.iter().filter(|v| **v == 0.0).count() < 10);
        assert!(d.windows(2).filter(|w| w[0] != w[1]).count() > 900);
    }
}
