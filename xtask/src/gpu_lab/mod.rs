//! The GPU lab: what is built here to run on a machine with GPUs, and what
//! its runs are turned into.
//!
//! - [`suite`]: the device suite, listed once, and [`build`], its builds;
//! - [`bundle`]: `cargo xtask gpu-bundle`, every device test and example
//!   built against the pinned headers into `.gpu-bundle/`, with the scripts
//!   of `scripts/` (`run.sh`, `matrix.sh`, `bench.sh`);
//! - [`matrix`]: `cargo xtask gpu-bundle --matrix`, the same over the
//!   release matrix, in parts for one GPU call each;
//! - [`compile`]: `cargo xtask device-compile`, the device tests and
//!   examples compiled against releases' headers, linked and loaded, no GPU;
//! - [`runs`] and [`report`]: `cargo xtask device-report`, the table of
//!   `docs/device-results.md` from the recorded runs, and a run's Markdown.

pub mod build;
pub mod bundle;
pub mod compile;
pub mod matrix;
pub mod report;
pub mod runs;
pub mod suite;
