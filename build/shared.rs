//! The part of `build/` other packages compile: the generator
//! (`codegen/`) with its syn-free helpers (`preprocess`, `release`), the
//! one place that finds CUDA (`locate`) and the timing lines (`timings`).
//!
//! xtask and abi-proofs' build script each mount this file, once:
//!
//! ```ignore
//! #[path = "../../build/shared.rs"]
//! mod shared;
//! ```
//!
//! A file mounted with `#[path]` finds its `mod`s beside it, so these are
//! the very files the build script (`main.rs`) declares; they name each
//! other through `super::`, which is this module there and the crate root in
//! the build script. Nothing here is compiled into the build script twice:
//! `main.rs` does not declare this module.

pub mod codegen;
pub mod locate;
pub mod preprocess;
pub mod release;
pub mod timings;
