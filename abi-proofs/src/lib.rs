//! cuda-mem-sys's ABI proofs live in this package's tests; their inputs are
//! written by its build script (`abi-proofs/build/main.rs`), from the same
//! generator as cuda-mem-sys's bindings. Nothing here is published.
#![no_std]
