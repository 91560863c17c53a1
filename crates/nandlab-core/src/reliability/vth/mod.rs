//! Monte-Carlo threshold-voltage (Vth) model of MLC and TLC NAND cells (Guo ch. 2.1–2.2, 3.2).
//!
//! For every sampled victim cell the model draws
//!
//! 1. its erased Vth `x0 ~ N(1.1, 0.35)` (Guo §2.2.1 / §3.2, citing Dong et al. \[27\]);
//! 2. if programmed to level `i ≥ 1`, its ISPP-programmed Vth, uniform in
//!    `[Vverify_i, Vverify_i + ΔVpp]` (the ISPP model of Guo's reference \[27\]; Guo itself
//!    states the verify voltages and ΔVpp but not the shape, so *uniform over one step* is
//!    our reading), or `x0` itself if `x0` already passes verify;
//! 3. random telegraph noise, Laplacian with mean magnitude `λ = k·N^a` (eq. 2.1);
//! 4. cell-to-cell interference `ΔV_c2c = Σ_k ΔVp^(k)·γ^(k)` (eq. 2.2) from the neighbours
//!    programmed *after* the victim. `ΔVp` is the neighbour's Vth change in its last program
//!    step ([`ProgramScheme`]): with Guo's two-step programming (§2.1.1, Fig. 3(a)) a
//!    neighbour going to L1 moves from its erased Vth, one going to L2/L3 from the
//!    intermediate (LM) level, so the largest disturbances come from L1 and L3 — as Guo
//!    §2.1.2 states citing \[23\];
//! 5. retention charge loss `N(μd, σd²)` (eq. 2.3–2.4) with `x` = programmed Vth after RTN and
//!    `x0` = the *same cell's* erased Vth (Guo §3.2: "x0 is Vth level 0 and is modeled by
//!    N(1.1, 0.35)" — we read x0 as the random erased Vth of that cell, not the mean);
//! 6. read disturb `N(μrd, σrd²)` (eq. 2.8).
//!
//! Steps 5–6 are Gaussian given steps 1–4, so instead of drawing them the model computes the
//! exact conditional probability that the cell is read at each level (a Rao–Blackwellised
//! estimator: unbiased, and far lower variance for rare retention errors). With no retention
//! and no reads the estimator is the plain error indicator. Bit errors are counted with the
//! level → bits map (Gray code), or with Guo's ReduceCode (Table 7, eq. 3.6–3.8) for the
//! FlexLevel reduced state, where two cells hold three bits.
//!
//! By subject: `params.rs` holds the model's parameters (cell types, coupling, read disturb,
//! program schemes, the presets of Guo ch. 2 and 3 and their checks, level configurations,
//! the operating point) and `mc.rs` the Monte-Carlo estimator of steps 1–6 and its stopping
//! rule; the unit tests are in `tests.rs`.

mod mc;
mod params;
#[cfg(test)]
mod tests;

pub use super::reducecode::{reduce_decode, reduce_encode};
pub use mc::*;
pub use params::*;
