//! The generator: headers in, one self-contained Rust file out.
//!
//! Shared by `build/main.rs` (bindings for the headers found at build time),
//! `cargo xtask regen` (the committed fallback) and `abi-proofs/build/main.rs` (the
//! bindings the ABI proofs are made from), so all produce the same tokens
//! (`build/main.rs` writes them one item a line, `regen` pretty-printed).

mod bindgen_config;
mod docs;
mod groups;
mod links;
pub mod loader;
mod macro_constants;
mod moved_fields;
mod ports;
mod postprocess;
mod syn_items;
#[allow(unused_imports)] // abi-proofs's generators read it; cuda-mem-sys's build does not
pub use syn_items::foreign_functions;

// Its two syn-free helpers lie beside it in `build/`: the build without the
// `bindgen` feature uses them alone. Whoever mounts the generator mounts
// them beside it.
use super::preprocess;
pub use super::release::*;
use std::path::{Path, PathBuf};

pub const WRAPPER: &str = "#include \"wrapper.h\"\n";

/// The Rust integer types bindgen writes for C's (the primitives and
/// `core::ffi`'s aliases): every bit pattern of their size is a value. The
/// accessors of moved fields (`ports`) and abi-proofs's layout checks read
/// the same list.
pub const INTEGERS: [&str; 23] = [
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "c_char",
    "c_schar",
    "c_uchar",
    "c_short",
    "c_ushort",
    "c_int",
    "c_uint",
    "c_long",
    "c_ulong",
    "c_longlong",
    "c_ulonglong",
];

/// What the generated items' documentation says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Docs {
    /// NVIDIA's comments, from the headers the bindings are generated from
    /// (a build from the user's own headers shows their own copy's comments).
    Headers,
    /// None of NVIDIA's text: each item gets a line of ours linking NVIDIA's
    /// online reference (its group's page, or its API's data types), each
    /// group module its group's title and page. The committed bindings, which
    /// the published package carries, are made so (`cargo xtask regen`);
    /// see `links.rs`.
    Links,
}

pub struct Input<'a> {
    pub include_dirs: &'a [PathBuf],
    /// The folder holding `wrapper.h`.
    pub crate_dir: &'a Path,
    /// Scratch space for the preprocessor's files.
    pub work_dir: &'a Path,
    /// A `cc::Build` set up for the target (the caller knows its context).
    pub cc: cc::Build,
    pub per_thread_default_stream: bool,
    pub docs: Docs,
    /// Called as each step ends, with its name (the build script's
    /// `CUDA_MEM_SYS_BUILD_TIMINGS`; `&|_| {}` elsewhere).
    pub lap: &'a dyn Fn(&str),
}

pub struct Output {
    pub cuda_version: u32,
    /// The generated bindings, parsed once: every later step reads this tree.
    pub file: syn::File,
    /// The generated file's header comment (the text is `header` + the tree).
    pub header: String,
    /// Every header the preprocessor read (for `rerun-if-changed`).
    pub headers_read: Vec<PathBuf>,
    /// C source of out-of-line copies of the headers' `static inline`
    /// functions (`<name>__extern`), if the bindings declare any.
    pub static_wrappers_c: Option<String>,
    /// The headers as the C preprocessor wrote them (the ABI proofs spell C
    /// types with the tags they declare); the build script leaves it unread.
    #[allow(dead_code)]
    pub preprocessed: String,
}

pub fn generate(input: &Input) -> Result<Output, String> {
    let mut include_dirs = input.include_dirs.to_vec();
    include_dirs.push(input.crate_dir.to_path_buf());
    let defines: Vec<&'static str> = if input.per_thread_default_stream {
        vec![PTDS_DEFINE]
    } else {
        vec![]
    };
    let pp = preprocess::Preprocessor {
        cc: input.cc.clone(),
        include_dirs: &include_dirs,
        defines: defines.clone(),
        work_dir: input.work_dir,
    };
    let static_wrappers = input.work_dir.join("static_wrappers");
    let _ = std::fs::remove_file(static_wrappers.with_extension("c"));
    // The preprocessor's questions need nothing from bindgen: they run beside
    // it (bindgen keeps one core busy for seconds), one after the other.
    let (bindings, asked) = std::thread::scope(|s| {
        let asked = s.spawn(|| ask_preprocessor(&pp, input.include_dirs, &include_dirs));
        // bindgen now also reads headers the preprocessor may yet refuse: a
        // panic of its own is an error, the preprocessor's named one first.
        let bindings = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            bindgen_config::builder(
                &input.crate_dir.join("wrapper.h"),
                &include_dirs,
                &defines,
                &static_wrappers,
                input.docs == Docs::Headers,
            )
            .generate()
            .map_err(|e| format!("bindgen could not parse the CUDA headers: {e}"))
            .map(|b| b.to_string())
        }))
        .unwrap_or_else(|_| {
            Err("bindgen panicked on the CUDA headers (its message is above)".into())
        });
        let asked = asked.join().unwrap_or_else(|_| {
            Err(Asking::Headers(
                "the preprocessor thread panicked".to_string(),
            ))
        });
        (bindings, asked)
    });
    // What is wrong with the headers first (named by the preprocessor), then
    // bindgen's failure, then the preprocessor's later questions'.
    if let Err(Asking::Headers(e)) = asked {
        return Err(e);
    }
    let bindings = bindings?;
    let asked = asked.map_err(|e| match e {
        Asking::Headers(e) | Asking::Later(e) => e,
    })?;
    (input.lap)("bindgen, and the preprocessor beside it");
    let (file, header) = postprocess::run(
        &postprocess::Context {
            pp: &pp,
            wrapper: WRAPPER,
            macros: &asked.macros,
            expansions: &asked.expansions,
            comments: &asked.comments,
            cuda_version: asked.cuda_version,
            per_thread_default_stream: input.per_thread_default_stream,
            docs: input.docs,
            typedefs: &asked.typedefs,
            lap: input.lap,
        },
        &bindings,
    )?;
    // The copies call trampolines by private names in some builds (see `loader`).
    let static_wrappers_c = std::fs::read_to_string(static_wrappers.with_extension("c"))
        .ok()
        .filter(|c| c.contains("__extern"))
        .map(|c| loader::private_names_c(&loader::c_callees(&file)) + &c);
    Ok(Output {
        cuda_version: asked.cuda_version,
        file,
        header,
        headers_read: asked.headers_read,
        static_wrappers_c,
        preprocessed: asked.preprocessed,
    })
}

/// What the C preprocessor says of the headers (beside bindgen).
struct Asked {
    cuda_version: u32,
    /// The headers' macros (those of the include folders and `wrapper.h`).
    macros: Vec<preprocess::MacroDef>,
    headers_read: Vec<PathBuf>,
    preprocessed: String,
    expansions: std::collections::BTreeMap<String, String>,
    comments: String,
    /// The `PFN_` typedefs of `cudaTypedefs.h` (for the loader).
    typedefs: std::collections::BTreeSet<String>,
}

/// Why [`ask_preprocessor`] failed: the headers themselves (reported before
/// bindgen's failure), or a later question (after it).
enum Asking {
    Headers(String),
    Later(String),
}

/// The preprocessor's questions, in one thread: the macros (and the
/// release, one of them, and the headers read), then what the `cu*` names
/// expand to, the comments, and the loader's typedefs.
/// `headers`: the CUDA include folders; `include_dirs`: with `wrapper.h`'s.
fn ask_preprocessor(
    pp: &preprocess::Preprocessor,
    headers: &[PathBuf],
    include_dirs: &[PathBuf],
) -> Result<Asked, Asking> {
    // One preprocessor run answers both: `CUDA_VERSION` is one of the macros.
    // Where it fails, ask for the release alone: headers too old are named as such.
    let (macros, files, preprocessed) = match pp.macros(WRAPPER) {
        Ok(m) => m,
        Err(e) => {
            pp.cuda_version(None)
                .map_err(|e| {
                    format!(
                        "{} does not preprocess: the C preprocessor stopped on `#include \
                         <cuda.h>` (its messages are above). The headers are damaged or \
                         incomplete: point CUDA_MEM_SYS_INCLUDE_DIR at a complete CUDA include \
                         folder. {}. ({e})",
                        headers[0].join("cuda.h").display(),
                        super::locate::GET_HEADERS
                    )
                })
                .and_then(|v| check_release(&headers[0], v))
                .map_err(Asking::Headers)?;
            return Err(Asking::Headers(e));
        }
    };
    let cuda_version = pp.cuda_version(Some(&macros)).map_err(Asking::Headers)?;
    check_release(&headers[0], cuda_version).map_err(Asking::Headers)?;
    let mut headers_read: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| headers.iter().any(|d| f.starts_with(d)))
        .collect();
    // The loader's table reads `cudaTypedefs.h` (and the profiler's) too, in a
    // preprocessor run of its own (they include nothing `wrapper.h` does not).
    for typedefs in loader::TYPEDEF_HEADERS {
        headers_read.extend(
            headers
                .iter()
                .map(|d| d.join(typedefs))
                .find(|t| t.is_file()),
        );
    }
    let macros: Vec<_> = macros
        .into_iter()
        .filter(|m| include_dirs.iter().any(|d| m.file.starts_with(d)))
        .collect();
    let names: Vec<&str> = macros
        .iter()
        .filter(|m| !m.function_like && m.name.starts_with("cu"))
        .map(|m| m.name.as_str())
        .collect();
    let later = |e| Asking::Later(e);
    let expansions = pp.expand(WRAPPER, &names).map_err(later)?;
    let comments = pp.with_comments(WRAPPER).map_err(later)?;
    let typedefs = loader::typedef_names(pp, WRAPPER);
    Ok(Asked {
        cuda_version,
        macros,
        headers_read,
        preprocessed,
        expansions,
        comments,
        typedefs,
    })
}

/// The symbols generated code links to, split into driver (`cu*`) and
/// runtime (`cuda*`) ones; read back from the generated text itself.
pub fn linked_symbols(file: &syn::File) -> (Vec<String>, Vec<String>) {
    let mut driver = vec![];
    let mut runtime = vec![];
    for f in syn_items::foreign_functions(file) {
        let list = if f.name.starts_with("cuda") {
            &mut runtime
        } else {
            &mut driver
        };
        // A `static inline` function's copy (`__extern`) is compiled into the crate.
        let symbol = Some(f.symbol).filter(|s| !s.ends_with("__extern"));
        for s in symbol.into_iter().chain([f.name]) {
            if !list.contains(&s) {
                list.push(s);
            }
        }
    }
    (driver, runtime)
}

impl Output {
    /// The bindings as tokens for `OUT_DIR`, one item, attribute, field or
    /// statement a line (`lines`): a compiler note then points at a line of
    /// its own, not at a column of one 3 MB line. Not pretty-printed:
    /// that costs seconds in an unoptimised build script. `cargo xtask regen`
    /// pretty-prints the same tree for the committed copy;
    /// `abi-proofs/tests/fallback.rs` compares the two as tokens.
    pub fn tokens(&self) -> String {
        let mut text = self.header.clone();
        lines(
            quote::ToTokens::to_token_stream(&self.file),
            Breaks::Block,
            &mut text,
        );
        text.push('\n');
        text
    }
}

/// Where [`lines`] breaks lines in a token stream.
#[derive(Clone, Copy, PartialEq)]
enum Breaks {
    /// The file, or a brace group: after each `;`, `,`, attribute and brace group.
    Block,
    /// An array or slice (a bracket group but an attribute's): after each `,`.
    List,
    /// Nowhere (parentheses, attributes).
    None,
}

/// Writes `stream` as text, as `TokenStream`'s `Display` spaces it (a space
/// between tokens but after a joint punctuation mark), with line breaks as
/// [`Breaks`] says: only whitespace differs, the tokens read back are the
/// same. What is left long is a doc attribute: one string literal.
fn lines(stream: proc_macro2::TokenStream, breaks: Breaks, out: &mut String) {
    use proc_macro2::{Delimiter, Spacing, TokenTree};
    use std::fmt::Write;
    let block = breaks == Breaks::Block;
    let (mut joint, mut first, mut hash) = (false, true, false);
    for tt in stream {
        if !first && !joint && !out.ends_with('\n') {
            out.push(' ');
        }
        first = false;
        joint = false;
        let mut ends_line = false;
        let after_hash = std::mem::take(&mut hash);
        match tt {
            TokenTree::Group(g) => {
                let (open, close, inner) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")", Breaks::None),
                    Delimiter::Brace => ("{", "}", Breaks::Block),
                    Delimiter::Bracket if after_hash => ("[", "]", Breaks::None),
                    Delimiter::Bracket => ("[", "]", Breaks::List),
                    Delimiter::None => ("", "", breaks),
                };
                let brace = g.delimiter() == Delimiter::Brace;
                out.push_str(open);
                if brace && !g.stream().is_empty() {
                    out.push('\n');
                }
                lines(g.stream(), inner, out);
                if brace && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(close);
                ends_line = block && (brace || after_hash);
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                joint = p.spacing() == Spacing::Joint;
                // `#` or `#!` opening an attribute.
                hash = p.as_char() == '#' || (after_hash && p.as_char() == '!');
                ends_line = !joint
                    && match breaks {
                        Breaks::Block => matches!(p.as_char(), ';' | ','),
                        Breaks::List => p.as_char() == ',',
                        Breaks::None => false,
                    };
            }
            TokenTree::Ident(i) => {
                let _ = write!(out, "{i}");
            }
            TokenTree::Literal(l) => {
                let _ = write!(out, "{l}");
            }
        }
        if ends_line {
            out.push('\n');
        }
    }
}
