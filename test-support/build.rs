//! What the tests need to know of the build, learnt as a dependent of
//! cuda-mem-sys learns it: the headers of the bindings' release and the
//! features that change them from its `DEP_CUDA_MEM_SYS_*` metadata, the
//! target, the host and the target's C compiler from cargo and the cc crate.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dep = |key: &str| std::env::var(format!("DEP_CUDA_MEM_SYS_{key}")).ok();
    // The folders of headers of the bindings' own release (absent: none).
    if let Some(dirs) = dep("INCLUDE") {
        println!("cargo:rustc-env=TEST_SUPPORT_INCLUDE_DIRS={dirs}");
    }
    let bindings = dep("BINDINGS").unwrap_or_default();
    println!("cargo:rustc-env=TEST_SUPPORT_BINDINGS={bindings}");
    let ptds = dep("PER_THREAD_DEFAULT_STREAM").unwrap_or_default();
    println!("cargo:rustc-env=TEST_SUPPORT_PER_THREAD_DEFAULT_STREAM={ptds}");
    for var in ["TARGET", "HOST"] {
        let value = std::env::var(var).unwrap_or_else(|_| panic!("cargo sets {var}"));
        println!("cargo:rustc-env=TEST_SUPPORT_{var}={value}");
    }
    // The compiler the build finds for the target (`CC_<target>` honoured
    // here; a test running under Wine would look for a Windows `gcc.exe`).
    let mut cc = cc::Build::new();
    cc.cargo_metadata(false);
    if let Ok(tool) = cc.try_get_compiler() {
        println!(
            "cargo:rustc-env=TEST_SUPPORT_TARGET_CC={}",
            tool.path().display()
        );
    }
    // Scratch space under the target folder (`<target>/<profile>/tmp`): a
    // Linux path also for a test that runs under Wine.
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Some(profile) = out_dir.ancestors().nth(3) {
        let tmp = profile.join("tmp");
        let _ = std::fs::create_dir_all(&tmp);
        println!("cargo:rustc-env=TEST_SUPPORT_SCRATCH={}", tmp.display());
    }
}
