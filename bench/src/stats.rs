//! Summaries of repeated measurements: median and range.

/// Median, minimum and maximum of a set of measurements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The middle value (the mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

/// Summarises `values`; `None` when there are none.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.to_vec();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    Some(Summary { median, min: v[0], max: v[n - 1] })
}

/// The median of `values` (0 for none), for per-operation timings inside one run.
pub fn median(values: &[f64]) -> f64 {
    summarize(values).map_or(0.0, |s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_counts() {
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[3.0, 1.0, 2.0]), Some(Summary { median: 2.0, min: 1.0, max: 3.0 }));
        assert_eq!(summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
    }
}
