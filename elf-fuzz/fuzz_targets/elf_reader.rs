//! The fuzz target: any input, decoded into an image and the reader's
//! arguments (`elf_fuzz::fuzz_one`), must neither panic nor read outside
//! the mapping (the image panics on such a read).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| elf_fuzz::fuzz_one(data));
