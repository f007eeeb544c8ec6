//! Where the random spread of waits comes from: the thread's generator, or, for a simulation
//! that must repeat exactly, generators seeded in call order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// The source of a layer's jitter, shared by every call through it.
#[derive(Clone, Debug, Default)]
pub(crate) enum Jitter {
    #[default]
    Random,
    Seeded {
        seed: u64,
        calls: Arc<AtomicU64>,
    },
}

impl Jitter {
    pub(crate) fn seeded(seed: u64) -> Self {
        Jitter::Seeded {
            seed,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The draws of the next call: seeded from the seed and the call's number, so that the
    /// same calls in the same order draw the same values.
    pub(crate) fn for_call(&self) -> Draws {
        match self {
            Jitter::Random => Draws::Random,
            Jitter::Seeded { seed, calls } => {
                let call = calls.fetch_add(1, Ordering::Relaxed);
                // Spreads consecutive call numbers over the seed space (the golden ratio).
                let stream = seed ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                Draws::Seeded(Box::new(SmallRng::seed_from_u64(stream)))
            }
        }
    }
}

/// One call's uniform draws in [0, 1).
#[derive(Debug)]
pub(crate) enum Draws {
    Random,
    Seeded(Box<SmallRng>),
}

impl Draws {
    pub(crate) fn unit(&mut self) -> f64 {
        match self {
            Draws::Random => rand::random(),
            Draws::Seeded(generator) => generator.random(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(jitter: &Jitter, calls: usize) -> Vec<f64> {
        (0..calls).map(|_| jitter.for_call().unit()).collect()
    }

    #[test]
    fn the_same_seed_draws_the_same_values_call_by_call() {
        let first = draws(&Jitter::seeded(7), 5);
        assert_eq!(first, draws(&Jitter::seeded(7), 5));
        assert_ne!(first, draws(&Jitter::seeded(8), 5));
        assert!(
            first.windows(2).all(|pair| pair[0] != pair[1]),
            "each call its own draws"
        );
        assert!(first.iter().all(|unit| (0.0..1.0).contains(unit)));
    }

    #[test]
    fn unseeded_draws_are_uniform_in_the_unit_interval() {
        let values = draws(&Jitter::Random, 100);
        assert!(values.iter().all(|unit| (0.0..1.0).contains(unit)));
        assert!(values.windows(2).any(|pair| pair[0] != pair[1]));
    }

    /// Seeds that differ only in bits the call's multiplier has set must not share a stream.
    #[test]
    fn different_seeds_draw_different_values_at_every_call() {
        for (a, b) in [(0, 1), (2, 3), (7, 8)] {
            let (first, second) = (draws(&Jitter::seeded(a), 8), draws(&Jitter::seeded(b), 8));
            for call in 0..8 {
                assert_ne!(first[call], second[call], "seeds {a} and {b}, call {call}");
            }
        }
    }
}
