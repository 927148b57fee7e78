//! A small, fixed pseudo-random generator (xoshiro256++ seeded by SplitMix64).
//!
//! The bootstrap owns its generator so that a seed means the same resamples
//! in every cfeval version, whatever a random-number crate changes: same seed
//! ⇒ identical intervals. Each replicate gets its own stream derived from
//! `(seed, replicate)`, so results do not depend on how rayon splits the work.

/// xoshiro256++ (Blackman & Vigna), the generator behind every resample.
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of stream `stream` under `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut stream_state = stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mut mix = seed ^ splitmix64(&mut stream_state);
        let state = [
            splitmix64(&mut mix),
            splitmix64(&mut mix),
            splitmix64(&mut mix),
            splitmix64(&mut mix),
        ];
        Self { state }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let [s0, s1, s2, s3] = &mut self.state;
        let result = s0.wrapping_add(*s3).rotate_left(23).wrapping_add(*s0);
        let t = *s1 << 17;
        *s2 ^= *s0;
        *s3 ^= *s1;
        *s1 ^= *s2;
        *s0 ^= *s3;
        *s2 ^= t;
        *s3 = s3.rotate_left(45);
        result
    }

    /// A uniform integer in `0..bound` (Lemire's unbiased multiply-shift);
    /// `bound` must be positive.
    pub fn below(&mut self, bound: u32) -> u32 {
        let bound64 = u64::from(bound);
        let mut product = u64::from(self.next_u64() as u32) * bound64;
        let mut low = product as u32;
        if low < bound {
            let threshold = bound.wrapping_neg() % bound;
            while low < threshold {
                product = u64::from(self.next_u64() as u32) * bound64;
                low = product as u32;
            }
        }
        (product >> 32) as u32
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal draw (Box–Muller; one of the pair is discarded).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_give_the_same_sequence() {
        let a: Vec<u64> = {
            let mut rng = Rng::new(7, 3);
            (0..16).map(|_| rng.next_u64()).collect()
        };
        let mut rng = Rng::new(7, 3);
        assert!(a.iter().all(|&value| value == rng.next_u64()));
        let mut other = Rng::new(7, 4);
        assert_ne!(a[0], other.next_u64());
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut rng = Rng::new(1, 0);
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[rng.below(7) as usize] += 1;
        }
        for count in counts {
            assert!((9_400..10_600).contains(&count), "{counts:?}");
        }
    }

    #[test]
    fn normal_draws_have_unit_variance() {
        let mut rng = Rng::new(2, 0);
        let draws: Vec<f64> = (0..50_000).map(|_| rng.normal()).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let variance = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!(mean.abs() < 0.02, "{mean}");
        assert!((variance - 1.0).abs() < 0.03, "{variance}");
    }
}
