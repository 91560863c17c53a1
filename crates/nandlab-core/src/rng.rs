//! Seeded random streams (DESIGN §4 determinism: one master seed in the config; each component
//! derives its own stream from it).

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Derive an independent RNG stream from the master seed (SplitMix64 of seed and stream id).
///
/// Streams in use: 1 preconditioning aging, 2 initial wear and ages, 3 the reliability model's
/// per-read error draws, 4 the refresh planner.
pub fn rng_stream(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31))
}
