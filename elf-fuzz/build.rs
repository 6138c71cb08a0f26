//! Brings the ELF reader's byte image (`src/loader/elf/image.rs`) into this
//! package's build of the reader: the crate compiles it only for its tests.
fn main() {
    println!("cargo:rustc-cfg=cuda_mem_sys_elf_image");
}
