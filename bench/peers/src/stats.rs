//! Minimum, median and percentiles of measured durations.

use std::time::Duration;

/// Samples of one consumer.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    /// Add one.
    pub fn push(&mut self, sample: Duration) {
        self.0.push(sample);
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted
    }

    /// The fastest: the run least disturbed by other load.
    pub fn min(&self) -> Duration {
        self.0.iter().copied().min().unwrap_or_default()
    }

    /// The `p`-th percentile (nearest rank), `p` in 0..=100.
    pub fn percentile(&self, p: f64) -> Duration {
        let sorted = self.sorted();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    /// The median (the lower middle for an even count).
    pub fn median(&self) -> Duration {
        self.percentile(50.0)
    }
}

/// CPU time of the calling thread so far (what preemption by other processes does not inflate).
pub fn thread_cpu() -> Duration {
    cpu(rustix::time::ClockId::ThreadCPUTime)
}

/// CPU time of the whole process so far, every thread.
pub fn process_cpu() -> Duration {
    cpu(rustix::time::ClockId::ProcessCPUTime)
}

fn cpu(clock: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(clock);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `a / b` as a ratio.
pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// A duration for a table: milliseconds with two decimals, or microseconds below 1 ms.
pub fn show(d: Duration) -> String {
    if d >= Duration::from_millis(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut samples = Samples::default();
        for ms in [5, 1, 4, 2, 3] {
            samples.push(Duration::from_millis(ms));
        }
        assert_eq!(samples.min(), Duration::from_millis(1));
        assert_eq!(samples.median(), Duration::from_millis(3));
        assert_eq!(samples.percentile(99.0), Duration::from_millis(5));
        assert_eq!(samples.percentile(20.0), Duration::from_millis(1));
    }
}
