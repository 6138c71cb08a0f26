//! The part of `build/` other packages compile: the generator
//! (`codegen/`) with its syn-free helpers (`preprocess`, `release`), the
//! one place that finds CUDA (`locate`), the timing lines (`timings`) and
//! what only the tools use of them (`tools`, which the build script does not
//! declare).
//!
//! It is the library of the `generator` package (`generator/Cargo.toml`,
//! `[lib] path`, not published), which xtask and abi-proofs' build script
//! depend on and whose unit tests (`#[cfg(test)]` in these files) and
//! integration tests (`generator/tests/`) a plain `cargo test` runs (it is a
//! default member).
//! The files are the very files the build script (`main.rs`) declares as
//! its own modules; they name each other through `super::`, which is the
//! crate root in both. Nothing here is compiled into the build script
//! twice: `main.rs` does not declare this module.

pub mod codegen;
pub mod committed;
pub mod locate;
pub mod preprocess;
pub mod release;
pub mod timings;
pub mod tools;
