//! Compiles `src/loader/once.rs` as the model's (`cuda_mem_sys_model`): its
//! fork generation is then the fake system layer's, per modelled thread,
//! instead of the process's `atfork` counter.
fn main() {
    println!("cargo:rustc-cfg=cuda_mem_sys_model");
}
