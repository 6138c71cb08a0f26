#![no_std]
#![doc = include_str!("../README.md")]

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    clippy::all,
    rustdoc::all
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));
}
pub use generated::*;
