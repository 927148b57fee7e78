//! A tiny seeded PRNG (SplitMix64) whose stream never changes with a crate
//! version, so that the same seed gives a byte-identical cohort forever.

/// SplitMix64 (Steele, Lea & Flood 2014).
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self {
            state: seed ^ 0x5EED_C0DE_CFE7_A11A,
        }
    }

    /// A generator for sub-stream `stream` of `seed` (one per case).
    pub fn derive(seed: u64, stream: u64) -> Self {
        let mut base = Self::new(seed);
        let mixed = base.next_u64() ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        Self::new(mixed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut value = self.state;
        value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        value ^ (value >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * bound as u128) >> 53) as usize
    }

    /// Uniform in `low..=high`.
    pub fn range(&mut self, low: u32, high: u32) -> u32 {
        low + self.below((high - low + 1) as usize) as u32
    }

    /// True with probability `probability`.
    pub fn chance(&mut self, probability: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < probability
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Picks one of some static strings.
    pub fn text(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len())]
    }

    /// Picks by weight.
    pub fn weighted<'a, T>(&mut self, items: &'a [(T, f64)]) -> &'a T {
        let total: f64 = items.iter().map(|(_, weight)| weight).sum();
        let mut target = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        for (item, weight) in items {
            if target < *weight {
                return item;
            }
            target -= weight;
        }
        &items[items.len() - 1].0
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for index in (1..items.len()).rev() {
            let other = self.below(index + 1);
            items.swap(index, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_fixed() {
        let mut rng = Rng::new(7);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        let mut again = Rng::new(7);
        assert_eq!(first, (0..3).map(|_| again.next_u64()).collect::<Vec<_>>());
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            assert!(rng.below(6) < 6);
            let value = rng.range(2, 4);
            assert!((2..=4).contains(&value));
        }
        assert_ne!(Rng::derive(1, 0).next_u64(), Rng::derive(1, 1).next_u64());
    }
}
