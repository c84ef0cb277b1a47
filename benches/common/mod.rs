//! What the benchmarks share: timing loops, percentiles, and copying fixture packs.

#![allow(dead_code, reason = "each benchmark uses a part of it")]

use std::path::Path;
use std::time::{Duration, Instant};

/// The `p` quantile (0.0 to 1.0) of the samples, which it sorts.
pub(crate) fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Runs `run` a few times to warm up, then `runs` times; returns p50 and p99.
pub(crate) fn measure(runs: usize, mut run: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..(runs / 20).max(3) {
        run();
    }
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    (percentile(&mut samples, 0.5), percentile(&mut samples, 0.99))
}

/// Copies a flat fixture pack folder.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Runs every variant once per round, `runs` rounds after a few warm-up rounds, so
/// that drift on the machine falls on all of them alike; returns p50 and p99 of each.
pub(crate) fn interleaved(runs: usize, variants: &mut [&mut dyn FnMut()]) -> Vec<(Duration, Duration)> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); variants.len()];
    for round in 0..runs + (runs / 20).max(3) {
        for (index, run) in variants.iter_mut().enumerate() {
            let started = Instant::now();
            run();
            if round >= (runs / 20).max(3) {
                samples[index].push(started.elapsed());
            }
        }
    }
    samples
        .iter_mut()
        .map(|samples| (percentile(samples, 0.5), percentile(samples, 0.99)))
        .collect()
}
