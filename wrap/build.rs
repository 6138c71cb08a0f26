//! The wrapper's cfgs, from the release cuda-mem-sys's declarations are for
//! (`DEP_CUDA_MEM_SYS_VERSION_NUMBER`, e.g. `13000`): `cuda_13020` is set
//! when that release is 13.2 or newer. Only the releases whose forms this
//! crate tells apart are listed.

/// 12.2: `cudaMemPoolProps::maxSize`. 13.2: `CUmemLocation`'s `id` in an
/// anonymous union. 13.3: `cudaMemLocation`'s `id` in an anonymous union.
const RELEASES: [u32; 3] = [12020, 13020, 13030];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for r in RELEASES {
        println!("cargo::rustc-check-cfg=cfg(cuda_{r})");
    }
    let key = "DEP_CUDA_MEM_SYS_VERSION_NUMBER";
    let version = match std::env::var(key).map(|v| v.parse::<u32>()) {
        Ok(Ok(v)) => v,
        Ok(Err(_)) | Err(std::env::VarError::NotUnicode(_)) => fail(&format!(
            "{key} is {:?}, not a CUDA_VERSION number such as 13000",
            std::env::var_os(key).unwrap_or_default()
        )),
        Err(std::env::VarError::NotPresent) => fail(&format!(
            "{key} is not set: cargo sets it for the build script of a crate that depends \
             on cuda-mem-sys directly (its `links` key), from cuda-mem-sys 0.1 on. Add \
             cuda-mem-sys to this crate's [dependencies]."
        )),
    };
    for r in RELEASES.iter().filter(|&&r| r <= version) {
        println!("cargo::rustc-cfg=cuda_{r}");
    }
}

/// A named build error: the message, and exit status 1 (no panic).
fn fail(message: &str) -> ! {
    eprintln!("\ncuda-mem-wrap: {message}\n");
    std::process::exit(1);
}
