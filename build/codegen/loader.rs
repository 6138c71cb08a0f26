//! Run-time loading (`dynamic-loading`): the table of how each function is
//! found in the driver or the runtime library, and one trampoline per linked
//! symbol, all derived from the same parsed bindings as the declarations.
//!
//! The declarations stay `extern "C"` items with their `link_name`s; under
//! `cfg(cuda_mem_sys_load_driver)` (and `cuda_mem_sys_load_runtime`) the crate
//! itself defines those symbols (`cuMemAdvise_v2`, ...), each a trampoline
//! that calls through a slot filled on first use by `src/loader/`. So a
//! documented name keeps its exact item, signature and docs in both modes, C
//! compiled into the crate (the `static inline` copies) resolves the same way,
//! and nothing links `libcuda` or `libcudart`.
//!
//! Driver functions are asked of the driver's `cuGetProcAddress` by base name
//! and ABI version. The version is not the headers' `CUDA_VERSION`: it is the
//! one whose `PFN_<base>_v<version>` typedef (`cudaTypedefs.h`) has the type
//! of the symbol the preprocessor resolved the name to, the base being that
//! symbol without its `_v<N>`/`_ptds`/`_ptsz` suffixes (`cuMemAdvise` →
//! `cuMemAdvise_v2` → `("cuMemAdvise", 12020)`; `cuCtxGetDevice` → `2000`;
//! `cuGraphInstantiate` → `cuGraphInstantiateWithFlags` → `11040`). Where
//! several versions have that type, the `_v<N>` suffix picks the N-th oldest.
//! A symbol without a typedef is found by `dlsym` of the symbol itself;
//! runtime functions always are.

use super::preprocess::Preprocessor;
use super::syn_items::{foreign_fns, link_name, lit_value};
use std::collections::{BTreeMap, BTreeSet};

/// How the loader finds one symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The symbol C calls (and the crate's trampoline defines).
    pub symbol: String,
    /// `cuGetProcAddress`'s base name and ABI version; `None`: `dlsym(symbol)`.
    pub proc: Option<(String, u32)>,
}

/// `("cuMemAdvise_v2", false, Some(2))`: the base, per-thread suffix, `_vN`.
fn split_symbol(symbol: &str) -> (&str, Option<&'static str>, u32) {
    let (rest, ptds) = match (symbol.strip_suffix("_ptds"), symbol.strip_suffix("_ptsz")) {
        (Some(r), _) => (r, Some("_ptds")),
        (_, Some(r)) => (r, Some("_ptsz")),
        _ => (symbol, None),
    };
    if let Some((base, n)) = rest.rsplit_once("_v") {
        if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            return (base, ptds, n.parse().unwrap_or(1));
        }
    }
    (rest, ptds, 1)
}

/// `wrapper` with `cudaTypedefs.h`, and the profiler's typedefs where
/// `wrapper.h` read the profiler's header (`cudaTypedefs.h` leaves them out).
fn with_typedefs(wrapper: &str) -> String {
    format!(
        "{wrapper}#include <cudaTypedefs.h>\n\
         #if __has_include(<cudaProfiler.h>) && __has_include(<cudaProfilerTypedefs.h>)\n\
         #include <cudaProfilerTypedefs.h>\n\
         #endif\n"
    )
}

/// The typedef headers [`typedef_names`] reads (for the headers read).
pub const TYPEDEF_HEADERS: [&str; 2] = ["cudaTypedefs.h", "cudaProfilerTypedefs.h"];

/// The `PFN_cu*` typedefs of `cudaTypedefs.h` after `wrapper`, from the C
/// preprocessor (it needs nothing from bindgen: the generator asks it
/// beside bindgen's run). Headers without `cudaTypedefs.h`: none, and every
/// driver symbol is found by `dlsym`.
pub fn typedef_names(pp: &Preprocessor, wrapper: &str) -> BTreeSet<String> {
    match pp.preprocess("cuda_mem_sys_typedefs.c", &with_typedefs(wrapper)) {
        Ok(text) => text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("PFN_cu"))
            .map(str::to_string)
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// The driver symbols' (base, version), asked of the C compiler: which
/// `PFN_` typedefs of `cudaTypedefs.h` ([`typedef_names`]) have each
/// symbol's type.
pub fn driver_entries(
    pp: &Preprocessor,
    wrapper: &str,
    typedefs: &BTreeSet<String>,
    symbols: &BTreeSet<String>,
) -> Result<Vec<Entry>, String> {
    let with_typedefs = with_typedefs(wrapper);
    // (symbol, version, typedef) candidates: same base, same per-thread suffix.
    let mut candidates: BTreeMap<&str, Vec<(u32, String)>> = BTreeMap::new();
    for s in symbols {
        let (base, ptds, _) = split_symbol(s);
        let prefix = format!("PFN_{base}_v");
        for t in typedefs.iter().filter(|t| t.starts_with(&prefix)) {
            let rest = &t[prefix.len()..];
            let (digits, suffix) = rest.split_at(rest.find('_').unwrap_or(rest.len()));
            let suffix_ok = match ptds {
                Some(p) => suffix == p,
                None => suffix.is_empty(),
            };
            if let (true, Ok(v)) = (suffix_ok, digits.parse::<u32>()) {
                candidates.entry(s).or_default().push((v, t.clone()));
            }
        }
    }
    let mut asserts = String::new();
    for (s, list) in &candidates {
        for (v, t) in list {
            asserts.push_str(&format!(
                "_Static_assert(__builtin_types_compatible_p(__typeof__(&{s}), {t}), \"{s} {v}\");\n"
            ));
        }
    }
    let failing: BTreeSet<String> = pp
        .failing_asserts(&with_typedefs, &asserts)?
        .into_iter()
        .collect();
    let mut out = vec![];
    for s in symbols {
        let (base, _, n) = split_symbol(s);
        let fits: Vec<u32> = candidates
            .get(s.as_str())
            .into_iter()
            .flatten()
            .filter(|(v, _)| !failing.contains(&format!("{s} {v}")))
            .map(|(v, _)| *v)
            .collect();
        let version = version_of(fits, n);
        out.push(Entry {
            symbol: s.clone(),
            proc: version.map(|v| (base.to_string(), v)),
        });
    }
    Ok(out)
}

/// The ABI version asked for a symbol whose `_vN` suffix is `n`, of the
/// versions whose typedef fits its type: the `n`-th (the headers' `_v2`
/// is the second typedef of that type), the last where there are fewer, the
/// only one where one fits; `None` where none fits (`dlsym` then).
fn version_of(mut fits: Vec<u32>, n: u32) -> Option<u32> {
    fits.sort_unstable();
    match fits.len() {
        0 => None,
        len => Some(fits[(n as usize).clamp(1, len) - 1]),
    }
}

/// The prefix of the private C name of a trampoline the crate's own C
/// calls (without the feature `export-c-names`).
pub const PRIVATE_PREFIX: &str = "cuda_mem_sys_";
/// Defined when the `static inline` copies are compiled for a loaded build
/// without `export-c-names`: their calls go to the private names.
pub const PRIVATE_DEFINE: &str = "CUDA_MEM_SYS_PRIVATE_TRAMPOLINES";

/// What a `static inline` function's copy (`<symbol>__extern`) calls, if it
/// calls a linked symbol: the headers' per-thread redirects call the symbol
/// without the suffix (`cuGetProcAddress_v2_ptsz` calls `cuGetProcAddress_v2`).
fn inline_copy_calls(symbol: &str) -> Option<&str> {
    let inline = symbol.strip_suffix("__extern")?;
    inline
        .strip_suffix("_ptsz")
        .or_else(|| inline.strip_suffix("_ptds"))
}

/// The symbols the headers' `static inline` copies call (`cuGetProcAddress_v2`
/// under the per-thread default stream): the C compiled into the crate needs
/// a trampoline with a C name for each.
pub fn c_callees(file: &syn::File) -> BTreeSet<String> {
    foreign_fns(file)
        .filter(|f| f.sig.variadic.is_none())
        .filter_map(|f| inline_copy_calls(&link_name(&f.attrs)?).map(str::to_string))
        .collect()
}

/// C to put before the `static inline` copies: under [`PRIVATE_DEFINE`],
/// each of `callees` is called by its private name.
pub fn private_names_c(callees: &BTreeSet<String>) -> String {
    if callees.is_empty() {
        return String::new();
    }
    let mut c = format!(
        "/* A loaded build without `export-c-names`: the crate's trampolines for these have private C names. */\n#ifdef {PRIVATE_DEFINE}\n"
    );
    for s in callees {
        c.push_str(&format!("#define {s} {PRIVATE_PREFIX}{s}\n"));
    }
    c.push_str("#endif\n");
    c
}

/// Every linked symbol once, with the first declaration that links it, and
/// (documented name or symbol) → symbol. The `static inline` copies are the
/// crate's own; what they call is not.
fn linked(
    file: &syn::File,
) -> (
    BTreeMap<String, &syn::ForeignItemFn>,
    BTreeMap<String, String>,
) {
    let mut by_symbol: BTreeMap<String, &syn::ForeignItemFn> = BTreeMap::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for f in foreign_fns(file) {
        let name = f.sig.ident.to_string();
        let symbol = link_name(&f.attrs).unwrap_or_else(|| name.clone());
        if f.sig.variadic.is_some() {
            continue;
        }
        if symbol.ends_with("__extern") {
            if let Some(called) = inline_copy_calls(&symbol) {
                by_symbol.entry(called.to_string()).or_insert(f);
            }
            continue;
        }
        names.insert(name, symbol.clone());
        names.insert(symbol.clone(), symbol.clone());
        by_symbol.entry(symbol).or_insert(f);
    }
    (by_symbol, names)
}

/// The driver symbols the loader finds (for [`driver_entries`]).
pub fn driver_symbols(file: &syn::File) -> BTreeSet<String> {
    linked(file)
        .0
        .into_keys()
        .filter(|s| !s.starts_with("cuda"))
        .collect()
}

/// Appends the loader tables (always) and the trampolines (under the
/// loading cfgs) to the generated file; `driver`: [`driver_entries`] of
/// its [`driver_symbols`].
pub fn add(driver: Vec<Entry>, file: &mut syn::File, lap: &dyn Fn(&str)) -> Result<(), String> {
    let (by_symbol, names) = linked(file);
    let by_symbol: BTreeMap<String, syn::Signature> = by_symbol
        .into_iter()
        .map(|(s, f)| (s, f.sig.clone()))
        .collect();
    let callees = c_callees(file);
    let runtime: BTreeSet<String> = by_symbol
        .keys()
        .filter(|s| s.starts_with("cuda"))
        .cloned()
        .collect();
    if driver
        .iter()
        .map(|e| &e.symbol)
        .ne(by_symbol.keys().filter(|s| !s.starts_with("cuda")))
    {
        return Err("the loader's driver entries are not those of the bindings".to_string());
    }
    let runtime: Vec<Entry> = runtime
        .into_iter()
        .map(|symbol| Entry { symbol, proc: None })
        .collect();

    let slots = Slots::new(&driver, &runtime);
    // Elements as tokens: the module around them is parsed once, as a whole.
    let table = |entries: &[Entry]| -> Vec<proc_macro2::TokenStream> {
        entries
            .iter()
            .map(|e| {
                let symbol = syn::LitByteStr::new(
                    format!("{}\0", e.symbol).as_bytes(),
                    proc_macro2::Span::call_site(),
                );
                let (base, version) = match &e.proc {
                    Some((b, v)) => (format!("{b}\0"), *v),
                    None => ("\0".to_string(), 0),
                };
                let base = syn::LitByteStr::new(base.as_bytes(), proc_macro2::Span::call_site());
                quote::quote!(crate::loader::Entry { symbol: #symbol, base: #base, version: #version })
            })
            .collect()
    };
    let driver_table = table(&driver);
    let runtime_table = table(&runtime);
    let (n_driver, n_runtime) = (driver.len(), runtime.len());
    let name_rows: Vec<proc_macro2::TokenStream> = names
        .iter()
        .map(|(name, symbol)| {
            let (api, i) = slots.get(symbol).unwrap();
            let api = match api {
                "driver" => quote::quote!(crate::loader::Api::Driver),
                _ => quote::quote!(crate::loader::Api::Runtime),
            };
            quote::quote!((#name, #api, #i))
        })
        .collect();
    file.items.push(syn::parse_quote! {
        /// How `dynamic-loading` finds each function (generated from the
        /// headers: `cuGetProcAddress` base name and ABI version, or `dlsym`).
        #[doc(hidden)]
        #[cfg(cuda_mem_sys_load_driver)]
        pub mod loader_table {
            /// How many driver and runtime symbols there are.
            pub const N_DRIVER: usize = #n_driver;
            pub const N_RUNTIME: usize = #n_runtime;
            /// Driver symbols, by slot.
            pub static DRIVER: [crate::loader::Entry; #n_driver] = [#(#driver_table),*];
            /// Runtime symbols, by slot.
            pub static RUNTIME: [crate::loader::Entry; #n_runtime] = [#(#runtime_table),*];
            /// Documented names and symbols, sorted: (name, library, slot).
            pub static NAMES: &[(&str, crate::loader::Api, usize)] = &[#(#name_rows),*];
        }
    });
    lap("loader table");
    direct_calls(file, &slots);
    lap("loaded calls");
    for (api, entries) in [("driver", &driver), ("runtime", &runtime)] {
        let mut fns: Vec<proc_macro2::TokenStream> = vec![];
        for (i, e) in entries.iter().enumerate() {
            let c_name = callees
                .contains(&e.symbol)
                .then(|| format!("{PRIVATE_PREFIX}{}", e.symbol));
            fns.push(trampoline(
                &by_symbol[&e.symbol],
                &e.symbol,
                c_name.as_deref(),
                api,
                i,
            ));
        }
        let cfg = syn::Ident::new(
            &format!("cuda_mem_sys_load_{api}"),
            proc_macro2::Span::call_site(),
        );
        let m = syn::Ident::new(&format!("loaded_{api}"), proc_macro2::Span::call_site());
        let doc = format!(
            " The {api} symbols the declarations link, defined by the crate: each \
             calls through its loader slot."
        );
        file.items.push(syn::parse_quote! {
            #[doc = #doc]
            #[cfg(#cfg)]
            mod #m {
                use super::*;
                #(#fns)*
            }
        });
    }
    lap("trampolines");
    Ok(())
}

/// In a loaded build Rust code calls each documented name through
/// `crate::loader::call!` (inlined: the slot, a compare, an indirect call),
/// not through its declaration, which is compiled out there; the trampolines
/// stay for everything else that links the symbol (the headers' `static
/// inline` copies, C code in the same program). The declaration keeps the
/// full documentation; the loaded build's function gets its first paragraph.
fn direct_calls(file: &mut syn::File, slots: &Slots) {
    let mut calls = proc_macro2::TokenStream::new();
    for item in &mut file.items {
        let syn::Item::ForeignMod(m) = item else {
            continue;
        };
        for i in &mut m.items {
            let syn::ForeignItem::Fn(f) = i else { continue };
            let symbol = link_name(&f.attrs).unwrap_or_else(|| f.sig.ident.to_string());
            let Some((api, n)) = slots.get(&symbol).filter(|_| f.sig.variadic.is_none()) else {
                continue;
            };
            let cfg = syn::Ident::new(
                &format!("cuda_mem_sys_load_{api}"),
                proc_macro2::Span::call_site(),
            );
            f.attrs.push(syn::parse_quote!(#[cfg(not(#cfg))]));
            let doc = first_paragraph(&f.attrs);
            let api = syn::Ident::new(api, proc_macro2::Span::call_site());
            let n = syn::LitInt::new(&n.to_string(), proc_macro2::Span::call_site());
            let ident = &f.sig.ident;
            let target = syn::Ident::new(&symbol, proc_macro2::Span::call_site());
            let inputs = &f.sig.inputs;
            let output = &f.sig.output;
            calls.extend(quote::quote! {
                #[cfg(#cfg)]
                crate::loader::call!(#api #n #doc #ident(#inputs) #output => #target);
            });
        }
    }
    // Parsed once, all together.
    let calls: syn::File = syn::parse2(calls).expect("the loaded calls parse");
    file.items.extend(calls.items);
}

/// Each linked symbol's library and slot.
struct Slots(std::collections::HashMap<String, (&'static str, usize)>);

impl Slots {
    fn new(driver: &[Entry], runtime: &[Entry]) -> Self {
        let mut map = std::collections::HashMap::new();
        // A symbol in both tables (none today) keeps its driver slot, as a search of the driver's first would.
        for (i, e) in runtime.iter().enumerate() {
            map.insert(e.symbol.clone(), ("runtime", i));
        }
        for (i, e) in driver.iter().enumerate() {
            map.insert(e.symbol.clone(), ("driver", i));
        }
        Slots(map)
    }

    fn get(&self, symbol: &str) -> Option<(&'static str, usize)> {
        self.0.get(symbol).copied()
    }
}

/// The first paragraph of an item's doc comment, on one line.
fn first_paragraph(attrs: &[syn::Attribute]) -> String {
    let mut text = String::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &a.meta {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                text.push_str(&lit_value(s));
                text.push('\n');
            }
        }
    }
    let para = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ");
    if para.is_empty() {
        "A CUDA function.".to_string()
    } else {
        para
    }
}

/// `crate::loader::trampoline!(api slot ["c name"] symbol(params) -> R)`: the
/// macro in `src/loader/slots.rs` expands it to `unsafe extern "C" fn
/// <symbol>(<params>) -> R` (exported as `<symbol>` with `export-c-names`;
/// else, where the crate's own C calls it, as the private `c name`), which
/// calls the function in `slot` of `api`'s library or returns the documented
/// "missing" value of `R` (one hand-written body for every function; the
/// generated text stays short).
fn trampoline(
    sig: &syn::Signature,
    symbol: &str,
    c_name: Option<&str>,
    api: &str,
    slot: usize,
) -> proc_macro2::TokenStream {
    let name = syn::Ident::new(symbol, proc_macro2::Span::call_site());
    let api = syn::Ident::new(api, proc_macro2::Span::call_site());
    let slot = syn::LitInt::new(&slot.to_string(), proc_macro2::Span::call_site());
    let c_name = c_name.map(|c| syn::LitStr::new(c, proc_macro2::Span::call_site()));
    let inputs = &sig.inputs;
    let output = &sig.output;
    quote::quote! {
        crate::loader::trampoline!(#api #slot #c_name #name(#inputs) #output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn splits() {
        assert_eq!(split_symbol("cuMemAdvise_v2"), ("cuMemAdvise", None, 2));
        assert_eq!(
            split_symbol("cuMemcpyHtoD_v2_ptds"),
            ("cuMemcpyHtoD", Some("_ptds"), 2)
        );
        assert_eq!(
            split_symbol("cuGetProcAddress_v2_ptsz"),
            ("cuGetProcAddress", Some("_ptsz"), 2)
        );
        assert_eq!(
            split_symbol("cuMemcpy_ptds"),
            ("cuMemcpy", Some("_ptds"), 1)
        );
        assert_eq!(split_symbol("cuInit"), ("cuInit", None, 1));
        // `_v` before no number, or before letters, is part of the name.
        assert_eq!(split_symbol("cuThing_v"), ("cuThing_v", None, 1));
        assert_eq!(split_symbol("cuThing_vram"), ("cuThing_vram", None, 1));
    }

    #[test]
    fn the_nth_fitting_version_is_asked() {
        assert_eq!(version_of(vec![], 1), None);
        assert_eq!(version_of(vec![3020], 1), Some(3020));
        assert_eq!(version_of(vec![3020], 2), Some(3020));
        // Sorted first: `_v2` is the second of the fitting versions.
        assert_eq!(version_of(vec![12020, 3020, 8000], 2), Some(8000));
        assert_eq!(version_of(vec![12020, 3020, 8000], 1), Some(3020));
        assert_eq!(version_of(vec![12020, 3020, 8000], 9), Some(12020));
        assert_eq!(version_of(vec![12020, 3020], 0), Some(3020));
    }

    #[test]
    fn the_inline_copies_callees_get_private_names_in_c() {
        assert_eq!(private_names_c(&BTreeSet::new()), "");
        let callees: BTreeSet<String> = ["cuGetProcAddress_v2".to_string()].into();
        let c = private_names_c(&callees);
        assert!(c.contains(&format!("#ifdef {PRIVATE_DEFINE}\n")), "{c}");
        assert!(
            c.contains("#define cuGetProcAddress_v2 cuda_mem_sys_cuGetProcAddress_v2\n#endif\n"),
            "{c}"
        );
        assert_eq!(
            inline_copy_calls("cuGetProcAddress_v2_ptsz__extern"),
            Some("cuGetProcAddress_v2")
        );
        assert_eq!(inline_copy_calls("cuMemcpy_ptds__extern"), Some("cuMemcpy"));
        assert_eq!(inline_copy_calls("cuMemcpy__extern"), None);
        assert_eq!(inline_copy_calls("cuMemcpy_ptds"), None);
    }
}
