//! The originals' statistics (`MeasurementSeries.hpp`): each benchmark reports what its
//! original reports (the median for stream, the minimum for the cache benchmarks and latency),
//! with the spread as (max − min) / the mean without the extremes.

/// Repeated measurements of one configuration.
#[derive(Debug, Clone, Default)]
pub struct Series(pub Vec<f64>);

impl Series {
    pub fn add(&mut self, v: f64) {
        self.0.push(v);
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The mean without the smallest and largest value (the original's `value()`).
    pub fn value(&self) -> f64 {
        let v = self.sorted();
        match v.len() {
            0 => 0.0,
            1 => v[0],
            2 => (v[0] + v[1]) / 2.0,
            n => v[1..n - 1].iter().sum::<f64>() / (n - 2) as f64,
        }
    }

    pub fn median(&self) -> f64 {
        rocm_stats::stats::median(&self.0).unwrap_or(0.0)
    }

    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(0.0)
    }

    /// (max − min) / [`Series::value`].
    pub fn spread(&self) -> f64 {
        let v = self.sorted();
        if v.len() < 2 || self.value() == 0.0 {
            return 0.0;
        }
        (v[v.len() - 1] - v[0]).abs() / self.value()
    }
}

#[cfg(test)]
mod tests {
    use super::Series;

    #[test]
    fn as_the_original() {
        let s = Series(vec![4.0, 1.0, 3.0, 2.0, 10.0]);
        assert_eq!(s.min(), 1.0);
        assert_eq!(s.median(), 3.0);
        assert_eq!(s.value(), 3.0);
        assert!((s.spread() - 3.0).abs() < 1e-12);
    }
}
