//! The build script, as a list of steps: read the environment, locate CUDA,
//! choose the bindings, generate them or take the committed ones, link (the
//! generated text written while the stub libraries compile), and
//! say what was built (cfgs and `DEP_CUDA_MEM_SYS_*` metadata). Each step
//! lives in its own file under `build/`.
//!
//! It runs unoptimised in every dependent's build, so it does little: the
//! generated text is parsed once and every later step reads that tree; it is
//! written to `OUT_DIR` as compact tokens, not pretty-printed. The ABI
//! proofs' generators are not here: `abi-proofs/`'s build script runs them.
//! Without the `bindgen` feature nothing here needs syn, bindgen or libclang.

#[path = "build/bindings.rs"]
mod bindings;
#[cfg(feature = "bindgen")]
#[path = "build/codegen/mod.rs"]
// What serves only `cargo xtask regen` and abi-proofs goes unused here.
#[allow(dead_code)]
mod codegen;
#[path = "build/config.rs"]
mod config;
#[path = "build/link.rs"]
mod link;
#[path = "build/locate.rs"]
mod locate;
#[path = "build/preprocess.rs"]
// Without the generator only `cuda_version` is asked.
#[cfg_attr(not(feature = "bindgen"), allow(dead_code))]
mod preprocess;
#[path = "build/release.rs"]
// Without the generator only what finds and reads the committed bindings is asked.
#[cfg_attr(not(feature = "bindgen"), allow(dead_code))]
mod release;
#[path = "build/timings.rs"]
mod timings;

use bindings::Source;
use config::Config;

fn main() {
    if let Err(message) = run() {
        eprintln!("\ncuda-mem-sys: {message}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    // 1. The environment (a variable cargo sets that is missing: a named error).
    let config = Config::from_env()?;
    config.declare("wrapper.h", &locate::env_vars_read());
    // With CUDA_MEM_SYS_BUILD_TIMINGS, a `cargo:warning` per step.
    let timings = timings::Timings::new(config.timings);
    let lap = |step: &str| timings.lap(step);

    // 2. Where CUDA is (docs.rs has none).
    let search = if config.docs_rs {
        locate::Search::NotFound {
            searched: vec!["nothing (DOCS_RS is set)".into()],
        }
    } else {
        locate::find(&config.target_arch)
    };
    lap("locate CUDA");

    // 3. Which bindings: generated, or the committed ones (the one decision).
    let source = bindings::choose(&config, &search)?;
    lap("choose the bindings");
    let cuda = match search {
        locate::Search::Found(cuda) => Some(cuda),
        _ => None,
    };

    // 4. Generate them (their text written at step 7) or take the committed
    // ones, into OUT_DIR.
    let mut made = bindings::make(&config, source, cuda.as_ref(), &lap)?;
    config.tell_tests_the_compiler();
    lap("find the C compiler");

    // 5. What the bindings declare: cfgs and DEP_CUDA_MEM_SYS_* metadata.
    // docs.rs documents the linked declarations (NVIDIA's full text) and
    // the `loader` module beside them: no loading cfg there.
    describe(
        &made,
        cuda.as_ref(),
        config.dynamic_loading && !config.docs_rs,
    )?;
    if config.docs_rs {
        made.write(&config, &lap)?;
        timings.total();
        return Ok(());
    }

    // 6. Link. Another release's libraries are not linked under the committed
    // bindings: no folder searched, and the runtime loaded like a shared one.
    let other_release = source == Source::OtherRelease;
    let (linked, stubs) = link::emit(&link::Plan {
        lib_dirs: match &cuda {
            Some(c) if !other_release => &c.lib_dirs,
            _ => &[],
        },
        dynamic_cudart: config.dynamic_cudart || other_release,
        out_dir: &config.out_dir,
        cc: &config.cc,
        driver_symbols: &made.symbols.0,
        runtime_symbols: &made.symbols.1,
        runtime_soname_major: made.cuda_version / 1000,
        dynamic_loading: config.dynamic_loading,
    })?;
    lap("link");

    // 7. The generated text, written while the stubs compile.
    made.write(&config, &lap)?;
    stubs.wait()?;
    lap("the stubs compiled");

    // 8. How it is linked.
    if linked.runtime_loaded {
        println!("cargo:rustc-cfg=cuda_mem_sys_load_runtime");
    }
    let mode = match (config.dynamic_loading, linked.runtime_loaded) {
        (false, _) => "linked",
        (true, false) => "loaded-driver,static-runtime",
        (true, true) => "loaded",
    };
    println!("cargo:mode={mode}");
    timings.total();
    Ok(())
}

/// The `cuda_NNNNN` cfgs of the release the bindings declare, the
/// `DEP_CUDA_MEM_SYS_*` metadata of the headers found, and whether the
/// driver is loaded at run time.
fn describe(
    made: &bindings::Made,
    cuda: Option<&locate::Cuda>,
    dynamic_loading: bool,
) -> Result<(), String> {
    for r in config::RELEASES.iter().filter(|&&r| r <= made.cuda_version) {
        println!("cargo:rustc-cfg=cuda_{r}");
    }
    println!("cargo:version_number={}", made.cuda_version);
    if let Some(cuda) = cuda {
        let dirs = std::env::join_paths(&cuda.include_dirs).map_err(|e| e.to_string())?;
        println!("cargo:include={}", dirs.to_string_lossy());
        println!("cargo:found_by={}", cuda.found_by);
    }
    if dynamic_loading {
        println!("cargo:rustc-cfg=cuda_mem_sys_load_driver");
    }
    Ok(())
}
