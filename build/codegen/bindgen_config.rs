//! How bindgen is configured: the only place that does it.

use bindgen::{EnumVariation, RustTarget};
use std::path::{Path, PathBuf};

/// `static_wrappers` is where bindgen writes C wrappers for `static inline`
/// functions (with the per-thread default stream, `cuGetProcAddress` is one).
/// `comments`: whether NVIDIA's doc comments are kept ([`super::Docs`]).
pub fn builder(
    wrapper: &Path,
    include_dirs: &[PathBuf],
    defines: &[&str],
    static_wrappers: &Path,
    comments: bool,
) -> bindgen::Builder {
    let mut b = bindgen::Builder::default()
        .header(wrapper.to_string_lossy())
        .clang_args(include_dirs.iter().map(|d| format!("-I{}", d.display())))
        // Keep NVIDIA's doc comments even when the headers sit on a system path.
        .clang_arg("-fretain-comments-from-system-headers")
        .allowlist_function("cu.*")
        .allowlist_type("(CU|cu|CUDA|cuda).*")
        .allowlist_var("(CU|cu|CUDA|cuda).*")
        // A C enum becomes a transparent newtype with crate-level constants:
        // every bit pattern a newer driver returns is a valid value, and the
        // documented names (`CUDA_SUCCESS`) are usable as they are.
        .default_enum_style(EnumVariation::NewType {
            is_bitfield: false,
            is_global: true,
        })
        .prepend_enum_name(false)
        .use_core()
        .ctypes_prefix("::core::ffi")
        // bindgen's layout tests compare libclang with itself; the crate's own
        // tests compare with the C compiler instead (abi-proofs/tests/abi_layout.rs).
        .layout_tests(false)
        .derive_default(true)
        .derive_debug(true)
        // Where every field allows it: bindgen's own analysis leaves out
        // unions, and `Eq`/`Hash` where a float is inside (cudarc's `sys`
        // derives the same). The enum newtypes' `PartialOrd`/`Ord` and the
        // opaque handles' `Clone`/`Copy` are added in `ports.rs`.
        .derive_partialeq(true)
        .derive_eq(true)
        .derive_hash(true)
        .impl_debug(false)
        .generate_comments(comments)
        // Both would make bindgen parse its whole output with syn and print it
        // again (seconds, unoptimised); postprocess merges the blocks on the
        // tree it parses anyway.
        .merge_extern_blocks(false)
        .wrap_static_fns(true)
        .wrap_static_fns_path(static_wrappers)
        .sort_semantically(false)
        .formatter(bindgen::Formatter::None)
        .rust_target(RustTarget::stable(80, 0).unwrap_or_default());
    for d in defines {
        b = b.clang_arg(format!("-D{d}"));
    }
    b
}
