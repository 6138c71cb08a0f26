//! The loader's synchronisation, model-checked: `src/loader/once.rs` of
//! cuda-mem-sys (the one-time load, its waits and verdicts, the fork
//! generation, a slot's publication), compiled here against a fake system
//! layer ([`sys`]) instead of the platform's. Under `--cfg loom` its atomics
//! and threads are loom's, which runs every interleaving of each model
//! (`models`); without it the same models run on real threads.
//!
//! `cargo xtask loom` runs them (CI's step `loom`).

pub mod sys;

// The models are its only users: mounted for the tests alone. They use
// part of it (they never word a verdict, and fork by their own hand); the
// crate's own build still reports anything of it that the loader leaves
// unused.
#[cfg(test)]
#[path = "../../src/loader/once.rs"]
#[allow(dead_code)]
mod once;

#[cfg(test)]
mod models;

#[cfg(test)]
mod fork_models;
