//! Least squares with a margin: the one line fit every per-buffer cost, trend and
//! replicate check uses.

/// A straight line `y = intercept + slope * x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// Growth per unit of x.
    pub slope: f64,
    /// y at x = 0.
    pub intercept: f64,
    /// Half the width of the slope's 95% confidence interval (0 through two
    /// points, or points on the line).
    pub margin: f64,
}

/// Student's t at 97.5% for `df` degrees of freedom (two-sided 95%).
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 10] = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23];
    match df {
        0 => f64::INFINITY,
        1..=10 => TABLE[df - 1],
        11..=20 => 2.13,
        21..=40 => 2.04,
        _ => 1.98,
    }
}

/// Least-squares line through `points`, with its slope's margin; `None` with fewer
/// than two distinct x.
pub fn fit(points: &[(f64, f64)]) -> Option<Line> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let margin = if points.len() > 2 {
        let residuals: f64 = points
            .iter()
            .map(|(x, y)| (y - intercept - slope * x).powi(2))
            .sum();
        t95(points.len() - 2) * (residuals / (n - 2.0) / sxx).sqrt()
    } else {
        0.0
    };
    Some(Line {
        slope,
        intercept,
        margin,
    })
}

/// Whether points fall on a straight line: R² of at least `r2` against x.
pub fn straight(points: &[(f64, f64)], r2: f64) -> bool {
    let Some(line) = fit(points) else {
        return false;
    };
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let residual: f64 = points
        .iter()
        .map(|(x, y)| (y - line.intercept - line.slope * x).powi(2))
        .sum();
    total > 0.0 && 1.0 - residual / total >= r2
}
