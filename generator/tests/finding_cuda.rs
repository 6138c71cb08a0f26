//! Finding CUDA (`build/locate.rs`, the code the build script runs): a
//! wheel's headers take `crt/` from a sibling package of NVIDIA's wheel
//! layout (`…/nvidia/<package>/include`), and only `crt/`; a stray CUDA tree
//! two levels up (another release's wheel, a toolkit copied into `/tmp`) is
//! never mixed in, and gets a named error instead. Each case is a fixture
//! tree of its own, in a scratch folder of this test.

use generator::locate;
use std::path::{Path, PathBuf};
use test_support::{scratch, Scratch};

/// A scratch folder holding `files` (paths below it; contents are their names).
fn tree(name: &str, files: &[&str]) -> Scratch {
    let d = scratch(&format!("finding-cuda-{name}"));
    for f in files {
        let path = d.path().join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, f).unwrap();
    }
    d
}

/// What the include path of `cuda` makes of `#include "<file>"`: the first
/// folder holding it, or `None`.
fn resolves(cuda: &locate::Cuda, file: &str) -> Option<PathBuf> {
    cuda.include_dirs
        .iter()
        .map(|d| d.join(file))
        .find(|p| p.is_file())
}

fn find(root: &Path, crt_home: Option<&Path>) -> Result<locate::Cuda, String> {
    locate::at_root_exposing(root, "x86_64", format!("TEST={}", root.display()), crt_home)
        .expect("the fixture holds a cuda.h")
}

const RUNTIME: [&str; 2] = [
    "nvidia/cuda_runtime/include/cuda.h",
    "nvidia/cuda_runtime/include/cuda_runtime_api.h",
];

/// The 12.x wheels' layout: `crt/` comes from `nvidia/cuda_nvcc/include`,
/// exposed alone (the other headers of that package stay out of the include
/// path). The deliberately wrong case: the sibling's include folder itself,
/// which a check that only asked for `crt/` would accept, exposes its other
/// header too.
#[test]
fn a_wheels_crt_package_is_taken_and_only_its_crt_folder() {
    let mut files = RUNTIME.to_vec();
    files.extend([
        "nvidia/cuda_nvcc/include/crt/host_defines.h",
        "nvidia/cuda_nvcc/include/nvPTXCompiler.h",
    ]);
    let t = tree("wheel", &files);
    let home = t.path().join("exposed");
    let include = t.path().join("nvidia/cuda_runtime/include");
    let cuda = find(&include, Some(&home)).unwrap();
    assert_eq!(cuda.include_dirs, [include.clone(), home.clone()]);
    assert_eq!(
        cuda.crt.as_deref(),
        Some(t.path().join("nvidia/cuda_nvcc/include/crt").as_path())
    );
    let crt = resolves(&cuda, "crt/host_defines.h").expect("crt/host_defines.h is reachable");
    assert_eq!(
        std::fs::read_to_string(crt).unwrap(),
        "nvidia/cuda_nvcc/include/crt/host_defines.h"
    );
    let entries: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["crt"], "the exposed folder holds more than crt/");
    assert_eq!(resolves(&cuda, "nvPTXCompiler.h"), None);
    // Exposed again (a rerun of the build script): the same answer.
    assert_eq!(
        find(&include, Some(&home)).unwrap().include_dirs,
        cuda.include_dirs
    );

    // The wrong case: the package's include folder as it is.
    let whole = find(&include, None).unwrap();
    assert!(
        resolves(&whole, "nvPTXCompiler.h").is_some(),
        "the check above cannot see a header other than crt/'s"
    );
}

/// A stray CUDA tree two levels above an include folder that is not in a
/// wheel's layout (here `<scratch>/stray/include`, beside
/// `<scratch>/mine/include`) is named, not mixed in. The deliberately right
/// case: the same folder without the stray tree is found, and only it.
#[test]
fn a_stray_cuda_tree_beside_other_headers_is_named_not_mixed_in() {
    let t = tree(
        "stray",
        &[
            "mine/include/cuda.h",
            "mine/include/cuda_runtime_api.h",
            "stray/include/cuda.h",
            "stray/include/cuda_runtime_api.h",
            "stray/include/crt/host_defines.h",
        ],
    );
    let mine = t.path().join("mine/include");
    let err = find(&mine, Some(&t.path().join("exposed"))).unwrap_err();
    for said in [
        "no crt/host_defines.h in",
        &t.path().join("stray/include").display().to_string(),
        "is not in the layout of NVIDIA's wheels",
        "a stray CUDA tree",
        "pip install nvidia-cuda-runtime==13.0.* nvidia-cuda-crt==13.0.*",
    ] {
        assert!(err.contains(said), "{said:?} not in: {err}");
    }
    assert!(!err.contains("xtask"), "a command users lack: {err}");

    std::fs::remove_dir_all(t.path().join("stray")).unwrap();
    let cuda = find(&mine, Some(&t.path().join("exposed"))).unwrap();
    assert_eq!(cuda.include_dirs, [mine]);
    assert_eq!(cuda.crt, None);
}

/// In a wheel's layout, a sibling that is a CUDA tree of its own (the 13.x
/// wheel `nvidia/cu13`, beside 12.x's `nvidia/cuda_runtime`) is named, not
/// taken for the crt package; the deliberately right case: with the 12.x crt
/// package installed as well, that one is taken and the tree left alone.
#[test]
fn another_releases_wheel_beside_a_wheel_is_named_not_mixed_in() {
    let mut files = RUNTIME.to_vec();
    files.extend([
        "nvidia/cu13/include/cuda.h",
        "nvidia/cu13/include/cuda_runtime_api.h",
        "nvidia/cu13/include/crt/host_defines.h",
    ]);
    let t = tree("other-release", &files);
    let include = t.path().join("nvidia/cuda_runtime/include");
    let home = t.path().join("exposed");
    let err = find(&include, Some(&home)).unwrap_err();
    for said in [
        &t.path().join("nvidia/cu13/include").display().to_string(),
        "is a CUDA tree of its own (it holds cuda.h)",
        "nvidia-cuda-nvcc-cu12",
    ] {
        assert!(err.contains(said), "{said:?} not in: {err}");
    }

    let nvcc = t.path().join("nvidia/cuda_nvcc/include/crt");
    std::fs::create_dir_all(&nvcc).unwrap();
    std::fs::write(nvcc.join("host_defines.h"), "nvcc's").unwrap();
    let cuda = find(&include, Some(&home)).unwrap();
    assert_eq!(cuda.crt.as_deref(), Some(nvcc.as_path()));
    assert_eq!(
        std::fs::read_to_string(resolves(&cuda, "crt/host_defines.h").unwrap()).unwrap(),
        "nvcc's"
    );
}

/// The runtime's header is never taken from beside cuda.h's folder: a
/// stray tree's `cuda_runtime_api.h` is not reachable (the build refuses
/// the header set as incomplete, `tests/build_errors.rs`).
#[test]
fn cuda_runtime_api_h_is_never_taken_from_a_sibling() {
    let t = tree(
        "no-runtime",
        &[
            "nvidia/cuda_runtime/include/cuda.h",
            "nvidia/cuda_nvcc/include/crt/host_defines.h",
            "nvidia/cuda_nvcc/include/cuda_runtime_api.h",
        ],
    );
    let include = t.path().join("nvidia/cuda_runtime/include");
    // The sibling holding cuda_runtime_api.h is a tree of its own: refused.
    let err = find(&include, Some(&t.path().join("exposed"))).unwrap_err();
    assert!(err.contains("it holds cuda_runtime_api.h"), "{err}");
}

/// The 12.x wheels' profiler package (`nvidia/cuda_profiler_api/include`,
/// holding `cudaProfiler.h` and `cuda_profiler_api.h`, which `wrapper.h`
/// reads where they exist) joins the include path after the runtime's; the
/// wrong cases: a sibling of that name that is a CUDA tree of its own, and an
/// include folder outside NVIDIA's wheel layout, take nothing.
#[test]
fn a_wheels_profiler_package_is_taken_beside_the_runtime() {
    let mut files = RUNTIME.to_vec();
    files.extend([
        "nvidia/cuda_runtime/include/crt/host_defines.h",
        "nvidia/cuda_profiler_api/include/cudaProfiler.h",
        "nvidia/cuda_profiler_api/include/cuda_profiler_api.h",
    ]);
    let t = tree("profiler", &files);
    let include = t.path().join("nvidia/cuda_runtime/include");
    let cuda = find(&include, None).unwrap();
    let profiler = t.path().join("nvidia/cuda_profiler_api/include");
    assert_eq!(cuda.include_dirs, [include.clone(), profiler.clone()]);
    assert_eq!(
        resolves(&cuda, "cuda_profiler_api.h"),
        Some(profiler.join("cuda_profiler_api.h"))
    );

    // A sibling of that name holding a cuda.h: another tree, not taken.
    std::fs::write(profiler.join("cuda.h"), "other").unwrap();
    assert_eq!(
        find(&include, None).unwrap().include_dirs,
        std::slice::from_ref(&include)
    );
    std::fs::remove_file(profiler.join("cuda.h")).unwrap();

    // Headers that have their own (the 13.x wheel, a toolkit): nothing added.
    std::fs::write(include.join("cudaProfiler.h"), "own").unwrap();
    assert_eq!(
        find(&include, None).unwrap().include_dirs,
        std::slice::from_ref(&include)
    );

    // Not a wheel's layout: no sibling is looked for.
    let mut flat = vec!["cuda/include/cuda.h", "cuda/include/cuda_runtime_api.h"];
    flat.extend([
        "cuda/include/crt/host_defines.h",
        "cuda_profiler_api/include/cudaProfiler.h",
    ]);
    let f = tree("profiler-flat", &flat);
    let include = f.path().join("cuda/include");
    assert_eq!(find(&include, None).unwrap().include_dirs, [include]);
}
