//! The build script, as a list of steps: read the environment, locate CUDA,
//! choose the bindings, generate them or take the committed ones, link (the
//! generated text written while the stub libraries compile), and
//! say what was built (cfgs and `DEP_CUDA_MEM_SYS_*` metadata). Each step
//! lives in its own module beside this file (`build/`).
//!
//! It runs unoptimised in every dependent's build, so it does little: the
//! generated text is parsed once and every later step reads that tree; it is
//! written to `OUT_DIR` one item a line, not pretty-printed. The ABI
//! proofs' generators are not here: `abi-proofs/`'s build script runs them.
//! Without the `bindgen` feature nothing here needs syn, bindgen or libclang.

mod bindings;
#[cfg(feature = "bindgen")]
mod codegen;
mod committed;
mod config;
mod link;
mod locate;
mod metadata;
// Without the generator only `cuda_version` is asked.
#[cfg_attr(not(feature = "bindgen"), allow(dead_code))]
mod preprocess;
// Without the generator only what finds and reads the committed bindings is asked.
#[cfg_attr(not(feature = "bindgen"), allow(dead_code))]
mod release;
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
    // PATH and pkg-config's variables where the search reached them.
    for line in locate::rerun_lines(&search, &config.target, &config.host) {
        println!("{line}");
    }
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
    // The link step compiles its stubs with it; its clones share this detection.
    let _ = config.cc.try_get_compiler();
    lap("find the C compiler");

    // 5. What the bindings declare: the `cuda_NNNNN` cfgs. docs.rs documents
    // the linked declarations and the `loader` module beside them: no
    // loading cfg there.
    describe(&made, config.dynamic_loading && !config.docs_rs);
    let include_dirs = match &cuda {
        Some(c) if bindings::headers_match(source) => Some(&c.include_dirs[..]),
        _ => None,
    };
    let cuda_version = made.cuda_version;
    let built = |runtime_loaded| metadata::Built {
        cuda_version,
        source,
        include_dirs,
        found_by: cuda.as_ref().map(|c| c.found_by.as_str()),
        driver_loaded: config.dynamic_loading,
        runtime_loaded,
        ptds: config.ptds,
    };
    if config.docs_rs {
        // Nothing linked: what is loaded, is loaded whole.
        built(config.dynamic_loading).say(&config.out_dir)?;
        made.write(&config, &lap)?;
        timings.total();
        return Ok(());
    }

    // 6. Link. Another release's libraries are not linked under the committed
    // bindings: no folder searched, and the runtime loaded like a shared one.
    let other_release = matches!(source, Source::OtherRelease(_));
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
        target_os: &config.target_os,
        target_env: &config.target_env,
        target_arch: &config.target_arch,
    })?;
    lap("link");

    // 7. The generated text, written while the stubs compile.
    made.write(&config, &lap)?;
    stubs.wait()?;
    lap("the stubs compiled");

    // 8. How it is linked, and what was built: the DEP_CUDA_MEM_SYS_*
    // metadata and `cuda_mem_sys::BUILD`, from one description.
    if linked.runtime_loaded {
        println!("cargo:rustc-cfg=cuda_mem_sys_load_runtime");
    }
    built(linked.runtime_loaded).say(&config.out_dir)?;
    timings.total();
    Ok(())
}

/// The `cuda_NNNNN` cfgs of the release the bindings declare, and whether
/// the driver is loaded at run time.
fn describe(made: &bindings::Made, dynamic_loading: bool) {
    for r in config::releases().filter(|&r| r <= made.cuda_version) {
        println!("cargo:rustc-cfg=cuda_{r}");
    }
    if dynamic_loading {
        println!("cargo:rustc-cfg=cuda_mem_sys_load_driver");
    }
}
