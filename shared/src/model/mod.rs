//! The speedup model of speculative decoding (docs/MODEL.md): E(α, k), S(B) and the
//! break-even batch, the what-if page's inputs, and the model calibrated on measured runs.

pub mod calibrate;
pub mod context;
pub mod forward;
pub mod speedup;
pub mod whatif;
