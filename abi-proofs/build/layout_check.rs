//! The ABI check of the generated bindings, derived from their final Rust text
//! alone (so it serves the bindings generated at build time and the committed
//! fallback alike, whatever names the anonymous members carry).
//!
//! [`generate`] writes two programs that record the same facts under the same
//! keys, one line per fact (`kind key values...`):
//!
//! * a Rust table (`size_of`, `align_of`, `offset_of!`, the constants' values,
//!   the bytes a bitfield setter writes), compiled into `tests/abi_layout.rs`.
//!   Fields of nested types are located by raw-pointer projection
//!   (`addr_of!((*p).a.b)`: `offset_of!` takes nested fields only from Rust
//!   1.82, past the crate's MSRV);
//! * a C program (`sizeof`, `_Alignof`, `offsetof`, the headers' constants, the
//!   bytes a bitfield assignment writes), which the test compiles with the
//!   platform's C compiler against the same headers and runs.
//!
//! The test compares the two line by line; every difference is named.
//!
//! What is recorded:
//! * `type NAME size align` for every struct, union and enum newtype with a C
//!   name, and every other type alias (`CUdeviceptr`, `CUstream`...);
//! * `field NAME.path offset size align` for every field, also inside nested
//!   types that have no C name of their own (C reaches them through the parent
//!   with nested designators: `offsetof(T, a.b)`). An anonymous member has no
//!   C name: C gives its offset (that of its first field) but not its size or
//!   alignment (`?`); its fields are all checked;
//! * `bits NAME.path.field bytes value` for every bitfield: the struct's bytes
//!   after setting that one bitfield to all ones in a zeroed struct (through
//!   bindgen's setter in Rust, by assignment in C), and the value read back.
//!   bindgen's storage units (`_bitfield_N`) have no C name; these bytes prove
//!   where each bitfield sits inside them;
//! * `const NAME value` for every constant (enum values, macros), by value.
//!
//! C spells a type by the first of these that the headers declare: a typedef
//! named by a Rust alias (`pub type CUmemLocation = CUmemLocation_st;`, or
//! `pub use self::CUmemLocationType_enum as CUmemLocationType;` for enums), the
//! tag (`struct CUmemLocation_st`), the Rust name as a typedef (a struct with
//! no tag), an alias that C defines as a macro. Which ones the headers declare
//! is not in the Rust text: the C program includes `lc_names.h`, which the test
//! writes from the preprocessed headers (`LC_ID_x`: identifier `x` occurs;
//! `LC_STRUCT_x`, `LC_UNION_x`, `LC_ENUM_x`: tag `x` exists).

pub mod constant_table;
pub mod field_types;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The two programs.
pub struct Artefacts {
    /// Rust: `pub fn entries() -> Vec<Entry>` and lists of what is skipped.
    pub rust: String,
    /// C: includes `lc_prelude.h` (the headers) and `lc_names.h`, prints lines.
    pub c: String,
}

/// `crate_path` is how the table reaches the bindings (`::cuda_mem_sys`).
pub fn generate(rust: &str, crate_path: &str) -> Result<Artefacts, String> {
    let file =
        syn::parse_file(rust).map_err(|e| format!("layout check: parsing the bindings: {e}"))?;
    Ok(generate_from(&file, crate_path))
}

/// [`generate`] for bindings already parsed (the build script's one tree).
pub fn generate_from(file: &syn::File, crate_path: &str) -> Artefacts {
    let mut model = Model::default();
    model.collect(&file.items, &[]);
    model.classify();
    Gen::new(&model, crate_path).run()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Struct,
    Union,
    /// `#[repr(transparent)] struct X(pub u32)`: a C enum.
    Newtype,
    /// `struct X { _unused: [u8; 0] }`: declared but not defined in C.
    Opaque,
}

struct Record {
    name: String,
    /// Module path below the crate root (`""` or `"m::"`).
    module: String,
    kind: Kind,
    fields: Vec<(String, syn::Type)>,
}

struct Const {
    name: String,
    module: String,
    ty: syn::Type,
}

#[derive(Default)]
struct Model {
    records: BTreeMap<String, Record>,
    /// Alias name → (module, target type), in file order.
    aliases: Vec<(String, String, syn::Type)>,
    consts: Vec<Const>,
    /// Record name → (getter, setter argument type) of bindgen's bitfield accessors.
    bitfields: BTreeMap<String, Vec<(String, syn::Type)>>,
    methods: BTreeMap<String, Vec<syn::ImplItemFn>>,
    /// Nested record (no C name) → its parent.
    nested: BTreeMap<String, String>,
    /// `use X as Y` items: (Y, module, X).
    renames: Vec<(String, String, String)>,
}

/// bindgen appends `_` to C names that are Rust keywords (`type` → `type_`).
const KEYWORDS: [&str; 52] = [
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Members bindgen adds that C does not have: bitfield storage units and their
/// alignment, explicit padding, an empty struct's placeholder, opaque blobs.
fn rust_only(field: &str) -> bool {
    field.starts_with("_bitfield_")
        || field.starts_with("__bindgen_padding_")
        || field == "_address"
        || field.starts_with("_bindgen_opaque_blob")
}

/// The C name of a Rust field: bindgen's `_` after a keyword taken off.
pub(crate) fn c_field_name(rust: &str) -> String {
    let rust = rust.strip_prefix("r#").unwrap_or(rust);
    match rust.strip_suffix('_') {
        Some(stem) if KEYWORDS.contains(&stem) => stem.to_string(),
        _ => rust.to_string(),
    }
}

/// The last path segment of a type, looking through arrays and groups.
fn type_ident(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => Some(p.path.segments.last()?.ident.to_string()),
        syn::Type::Array(a) => type_ident(&a.elem),
        syn::Type::Group(g) => type_ident(&g.elem),
        syn::Type::Paren(p) => type_ident(&p.elem),
        _ => None,
    }
}

/// Array lengths from the outside in (`[[T; 2]; 3]` → `[3, 2]`); `None` if one
/// is not a literal.
fn array_dims(ty: &syn::Type) -> Option<Vec<u64>> {
    let mut dims = vec![];
    let mut t = ty;
    while let syn::Type::Array(a) = t {
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) = &a.len
        else {
            return None;
        };
        dims.push(n.base10_parse().ok()?);
        t = &a.elem;
    }
    Some(dims)
}

fn has_repr(attrs: &[syn::Attribute], word: &str) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split([',', ' ']).any(|w| w == word))
    })
}

impl Model {
    fn collect(&mut self, items: &[syn::Item], module: &[String]) {
        let prefix: String = module.iter().map(|m| format!("{m}::")).collect();
        for item in items {
            match item {
                syn::Item::Struct(s) if s.generics.params.is_empty() => {
                    let name = s.ident.to_string();
                    let (kind, fields) = match &s.fields {
                        syn::Fields::Unnamed(u)
                            if u.unnamed.len() == 1 && has_repr(&s.attrs, "transparent") =>
                        {
                            (Kind::Newtype, vec![])
                        }
                        syn::Fields::Named(n) => {
                            let fields: Vec<(String, syn::Type)> = n
                                .named
                                .iter()
                                .map(|f| (f.ident.as_ref().unwrap().to_string(), f.ty.clone()))
                                .collect();
                            if fields.len() == 1 && fields[0].0 == "_unused" {
                                (Kind::Opaque, vec![])
                            } else {
                                (Kind::Struct, fields)
                            }
                        }
                        _ => continue,
                    };
                    self.add_record(name, prefix.clone(), kind, fields);
                }
                syn::Item::Union(u) if u.generics.params.is_empty() => {
                    let fields = u
                        .fields
                        .named
                        .iter()
                        .map(|f| (f.ident.as_ref().unwrap().to_string(), f.ty.clone()))
                        .collect();
                    self.add_record(u.ident.to_string(), prefix.clone(), Kind::Union, fields);
                }
                syn::Item::Type(t) if t.generics.params.is_empty() => {
                    self.aliases
                        .push((t.ident.to_string(), prefix.clone(), (*t.ty).clone()));
                }
                // bindgen writes a typedef of an enum as `pub use self::X_enum as X;`.
                syn::Item::Use(u) => {
                    let mut renames = vec![];
                    generator::tools::use_renames(&u.tree, &mut renames);
                    self.renames.extend(
                        renames
                            .into_iter()
                            .map(|(from, to)| (to, prefix.clone(), from)),
                    );
                }
                syn::Item::Const(c) => self.consts.push(Const {
                    name: c.ident.to_string(),
                    module: prefix.clone(),
                    ty: (*c.ty).clone(),
                }),
                syn::Item::Impl(i) if i.trait_.is_none() && i.generics.params.is_empty() => {
                    if let Some(name) = type_ident(&i.self_ty) {
                        let fns = i.items.iter().filter_map(|m| match m {
                            syn::ImplItem::Fn(f) => Some(f.clone()),
                            _ => None,
                        });
                        self.methods.entry(name).or_default().extend(fns);
                    }
                }
                // A module under `#[cfg]` (the run-time loader's tables) holds
                // no C item, and may not exist in this build.
                syn::Item::Mod(m) if m.attrs.iter().any(|a| a.path().is_ident("cfg")) => {}
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        let mut path = module.to_vec();
                        path.push(m.ident.to_string());
                        self.collect(items, &path);
                    }
                }
                _ => {}
            }
        }
    }

    fn add_record(
        &mut self,
        name: String,
        module: String,
        kind: Kind,
        fields: Vec<(String, syn::Type)>,
    ) {
        self.records.entry(name.clone()).or_insert(Record {
            name,
            module,
            kind,
            fields,
        });
    }

    fn classify(&mut self) {
        // A rename of a local type is an alias of it.
        for (to, module, from) in std::mem::take(&mut self.renames) {
            let local =
                self.records.contains_key(&from) || self.aliases.iter().any(|(n, _, _)| *n == from);
            if local {
                if let Ok(ty) = syn::parse_str::<syn::Type>(&from) {
                    self.aliases.push((to, module, ty));
                }
            }
        }
        let aliased: BTreeSet<String> = self
            .aliases
            .iter()
            .filter_map(|(_, _, t)| type_ident(t))
            .collect();
        // bindgen names a type declared inside another after its parent
        // (`Parent__bindgen_ty_1`, `Parent_Tag`; renamed `Parent__anon_x`).
        for r in self.records.values() {
            for (_, ty) in &r.fields {
                let Some(t) = type_ident(ty) else { continue };
                if t != r.name
                    && t.starts_with(&format!("{}_", r.name))
                    && self.records.contains_key(&t)
                    && !aliased.contains(&t)
                {
                    self.nested.insert(t, r.name.clone());
                }
            }
        }
        // Bitfield accessors: `fn x(&self) -> T` with `fn set_x(&mut self, val: T)`.
        for (rec, fns) in &self.methods {
            let Some(r) = self.records.get(rec) else {
                continue;
            };
            if !r.fields.iter().any(|(n, _)| n.starts_with("_bitfield_")) {
                continue;
            }
            let getters: BTreeMap<String, &syn::ImplItemFn> = fns
                .iter()
                .filter(|f| {
                    f.sig.inputs.len() == 1
                        && matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(r)) if r.mutability.is_none())
                })
                .map(|f| (f.sig.ident.to_string(), f))
                .collect();
            let mut found = vec![];
            for f in fns {
                let name = f.sig.ident.to_string();
                let Some(field) = name.strip_prefix("set_") else {
                    continue;
                };
                if field.ends_with("_raw")
                    || !getters.contains_key(field)
                    || f.sig.inputs.len() != 2
                {
                    continue;
                }
                let Some(syn::FnArg::Typed(arg)) = f.sig.inputs.iter().nth(1) else {
                    continue;
                };
                found.push((field.to_string(), (*arg.ty).clone()));
            }
            self.bitfields.insert(rec.clone(), found);
        }
    }

    fn alias(&self, name: &str) -> Option<&syn::Type> {
        self.aliases
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, _, t)| t)
    }

    /// How a value of this type becomes an integer (or bytes) for comparison.
    fn value_kind(&self, ty: &syn::Type, depth: u32) -> ValueKind {
        if depth > 16 {
            return ValueKind::Other("alias cycle");
        }
        match ty {
            syn::Type::Ptr(_) => ValueKind::Pointer,
            syn::Type::Group(g) => self.value_kind(&g.elem, depth),
            syn::Type::Paren(p) => self.value_kind(&p.elem, depth),
            syn::Type::Reference(r) => match &*r.elem {
                syn::Type::Array(a) if type_ident(&a.elem).as_deref() == Some("u8") => {
                    ValueKind::Bytes
                }
                t if type_ident(t).as_deref() == Some("CStr") => ValueKind::CStr,
                _ => ValueKind::Other("reference"),
            },
            syn::Type::Path(_) => {
                let Some(name) = type_ident(ty) else {
                    return ValueKind::Other("type");
                };
                if generator::codegen::INTEGERS.contains(&name.as_str()) {
                    ValueKind::Int
                } else if name == "bool" {
                    ValueKind::Bool
                } else if ["f32", "f64", "c_float", "c_double"].contains(&name.as_str()) {
                    ValueKind::Other("floating point")
                } else if self
                    .records
                    .get(&name)
                    .is_some_and(|r| r.kind == Kind::Newtype)
                {
                    ValueKind::Newtype
                } else if let Some(t) = self.alias(&name) {
                    self.value_kind(t, depth + 1)
                } else {
                    ValueKind::Other("type")
                }
            }
            _ => ValueKind::Other("type"),
        }
    }

    /// Resolves aliases down to a record name, if the type is one.
    fn record_of(&self, ty: &syn::Type) -> Option<&Record> {
        let mut name = type_ident(ty)?;
        for _ in 0..16 {
            if let Some(r) = self.records.get(&name) {
                return Some(r);
            }
            name = type_ident(self.alias(&name)?)?;
        }
        None
    }

    /// Rust aliases that resolve to this record (`CUmemLocation`, `CUmemLocation_v1`).
    fn aliases_of(&self, record: &str) -> Vec<&str> {
        self.aliases
            .iter()
            .filter(|(_, _, t)| {
                matches!(t, syn::Type::Path(_))
                    && self.record_of(t).is_some_and(|r| r.name == record)
            })
            .map(|(n, _, _)| n.as_str())
            .collect()
    }

    /// The anonymous members: bindgen's `__bindgen_anon_N`, or the stable name
    /// the generator gives them (`anon_<one of its fields>`) when its type is
    /// one with no C name of its own.
    fn is_anonymous(&self, field: &str, ty: &syn::Type) -> bool {
        if field.starts_with("__bindgen_anon_") {
            return true;
        }
        let Some(rest) = field.strip_prefix("anon_") else {
            return false;
        };
        let Some(t) = type_ident(ty) else {
            return false;
        };
        self.nested.contains_key(&t)
            && self
                .records
                .get(&t)
                .is_some_and(|r| r.fields.iter().any(|(name, _)| name == rest))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ValueKind {
    Int,
    Bool,
    Newtype,
    Pointer,
    Bytes,
    CStr,
    Other(&'static str),
}

/// One step of a path to a field: Rust name, C name (`None`: anonymous member),
/// and the number of `[0]` that follow (arrays of nested types).
#[derive(Clone)]
struct Step {
    rust: String,
    c: Option<String>,
    index: usize,
}

/// `steps` and one more: the field `name`, `c` its C name (`None`: an
/// anonymous member, or one C does not have).
fn then_field(steps: &[Step], name: &str, c: Option<String>) -> Vec<Step> {
    let mut path = steps.to_vec();
    path.push(Step {
        rust: name.to_string(),
        c,
        index: 0,
    });
    path
}

fn rust_path(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("{}{}", s.rust, "[0]".repeat(s.index)))
        .collect::<Vec<_>>()
        .join(".")
}

fn c_path(steps: &[Step]) -> String {
    steps
        .iter()
        .filter_map(|s| Some(format!("{}{}", s.c.as_ref()?, "[0]".repeat(s.index))))
        .collect::<Vec<_>>()
        .join(".")
}

fn c_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

struct Gen<'a> {
    m: &'a Model,
    krate: &'a str,
    rust: String,
    c: String,
    c_calls: Vec<String>,
    rust_calls: Vec<String>,
    records: Vec<String>,
    enums: Vec<String>,
    typedefs: Vec<String>,
    opaque: Vec<String>,
    rust_only: Vec<String>,
    uncompared: Vec<(String, String)>,
}

impl<'a> Gen<'a> {
    fn new(m: &'a Model, krate: &'a str) -> Self {
        Gen {
            m,
            krate,
            rust: String::new(),
            c: String::new(),
            c_calls: vec![],
            rust_calls: vec![],
            records: vec![],
            enums: vec![],
            typedefs: vec![],
            opaque: vec![],
            rust_only: vec![],
            uncompared: vec![],
        }
    }

    fn run(mut self) -> Artefacts {
        let m = self.m;
        for r in m.records.values() {
            if m.nested.contains_key(&r.name) {
                continue;
            }
            match r.kind {
                Kind::Opaque => self.opaque.push(r.name.clone()),
                Kind::Newtype => {
                    self.enums.push(r.name.clone());
                    self.record(r);
                }
                Kind::Struct | Kind::Union => {
                    self.records.push(r.name.clone());
                    self.record(r);
                }
            }
        }
        self.typedefs_and_consts();
        self.finish()
    }

    /// The C spelling of a record, chosen by the preprocessor: `LC_T_<name>`.
    fn c_spelling(&mut self, r: &Record) -> String {
        let macro_name = format!("LC_T_{}", r.name);
        let aliases = self.m.aliases_of(&r.name);
        let tag = match r.kind {
            Kind::Struct | Kind::Opaque => "STRUCT",
            Kind::Union => "UNION",
            Kind::Newtype => "ENUM",
        };
        let mut branches: Vec<(String, String)> = aliases
            .iter()
            .map(|a| (format!("defined(LC_ID_{a})"), a.to_string()))
            .collect();
        branches.push((
            format!("defined(LC_{tag}_{})", r.name),
            format!("{} {}", tag.to_ascii_lowercase(), r.name),
        ));
        branches.push((format!("defined(LC_ID_{})", r.name), r.name.clone()));
        branches.extend(
            aliases
                .iter()
                .map(|a| (format!("defined({a})"), a.to_string())),
        );
        for (i, (cond, spelling)) in branches.iter().enumerate() {
            let kw = if i == 0 { "#if" } else { "#elif" };
            let _ = writeln!(self.c, "{kw} {cond}\n#define {macro_name} {spelling}");
        }
        self.c.push_str("#endif\n");
        macro_name
    }

    fn record(&mut self, r: &Record) {
        let t = self.c_spelling(r);
        let key = &r.name;
        let rty = format!("{}::{}{}", self.krate, r.module, r.name);
        let fname = format!("check_{}", r.name);
        // C
        let _ = writeln!(self.c, "static void {fname}(void) {{\n#ifdef {t}");
        let _ = writeln!(self.c, "  LC_TYPE({}, {t});", c_str(key));
        // Rust
        let _ = writeln!(
            self.rust,
            "#[allow(unused_unsafe, unused_variables, clippy::all)]\nfn {fname}(out: &mut Vec<Entry>) {{\n    \
             let u = ::core::mem::MaybeUninit::<{rty}>::uninit();\n    let p = u.as_ptr();\n    \
             out.push(Entry::new(\"type\", {}, format!(\"{{}} {{}}\", ::core::mem::size_of::<{rty}>(), \
             ::core::mem::align_of::<{rty}>())));",
            c_str(key)
        );
        self.fields(r, &[], &t, &rty, key);
        self.rust.push_str("}\n");
        let _ = writeln!(
            self.c,
            "#else\n  LC_NODECL(\"type\", {});\n#endif\n}}",
            c_str(key)
        );
        self.c_calls.push(fname.clone());
        self.rust_calls.push(fname);
    }

    /// The fields of `r` reached from the top-level type through `steps`.
    fn fields(&mut self, r: &Record, steps: &[Step], t: &str, rty: &str, top: &str) {
        let m = self.m;
        for (name, ty) in &r.fields {
            let nested = type_ident(ty).and_then(|n| m.nested.get(&n).map(|_| n));
            if rust_only(name) {
                let s = then_field(steps, name, None);
                self.rust_only.push(format!("{top}.{}", rust_path(&s)));
                continue;
            }
            let anonymous = m.is_anonymous(name, ty);
            let dims = array_dims(ty).unwrap_or_default();
            let mut here = then_field(steps, name, (!anonymous).then(|| c_field_name(name)));
            let key = format!("{top}.{}", rust_path(&here));
            let rpath = rust_path(&here);
            let incomplete = type_ident(ty).as_deref() == Some("__IncompleteArrayField");
            // Rust: offset_of! for direct fields, pointer projection below.
            let offset = if steps.is_empty() {
                format!("::core::mem::offset_of!({rty}, {name})")
            } else {
                format!("unsafe {{ ::core::ptr::addr_of!((*p).{rpath}) }} as usize - p as usize")
            };
            let _ = writeln!(
                self.rust,
                "    field(out, {}, {offset}, unsafe {{ ::core::ptr::addr_of!((*p).{rpath}) }});",
                c_str(&key)
            );
            if anonymous {
                match self.first_c_designator(ty) {
                    Some(first) => {
                        let mut to_first = c_path(&here);
                        if !to_first.is_empty() {
                            to_first.push('.');
                        }
                        to_first.push_str(&first);
                        let _ = writeln!(self.c, "  LC_ANON({}, {t}, {to_first});", c_str(&key));
                    }
                    None => {
                        let _ = writeln!(self.c, "  LC_UNCHECKED({});", c_str(&key));
                    }
                }
            } else if incomplete {
                let _ = writeln!(
                    self.c,
                    "  LC_FLEX({}, {t}, {});",
                    c_str(&key),
                    c_path(&here)
                );
            } else {
                let _ = writeln!(
                    self.c,
                    "  LC_FIELD({}, {t}, {});",
                    c_str(&key),
                    c_path(&here)
                );
            }
            if let Some(n) = nested {
                if dims.iter().all(|&d| d > 0) {
                    here.last_mut().unwrap().index = dims.len();
                    let inner = &m.records[&n];
                    self.fields(inner, &here, t, rty, top);
                }
            }
        }
        self.bitfields(r, steps, t, rty, top);
    }

    /// The C designator of the first named field inside an anonymous member.
    fn first_c_designator(&self, ty: &syn::Type) -> Option<String> {
        let r = self.m.records.get(&type_ident(ty)?)?;
        let (name, fty) = r.fields.first()?;
        if rust_only(name) {
            return None;
        }
        if self.m.is_anonymous(name, fty) {
            self.first_c_designator(fty)
        } else {
            Some(c_field_name(name))
        }
    }

    fn bitfields(&mut self, r: &Record, steps: &[Step], t: &str, rty: &str, top: &str) {
        let Some(bits) = self.m.bitfields.get(&r.name) else {
            return;
        };
        for (name, ty) in bits.clone() {
            let prefix = rust_path(steps);
            let here = then_field(steps, &name, Some(c_field_name(&name)));
            let key = format!("{top}.{}", rust_path(&here));
            let recv = if prefix.is_empty() {
                "s".to_string()
            } else {
                format!("s.{prefix}")
            };
            let kind = self.m.value_kind(&ty, 0);
            let ones = if kind == ValueKind::Bool {
                "true"
            } else {
                "ones()"
            };
            let value = match kind {
                ValueKind::Int | ValueKind::Bool => "v as i128".to_string(),
                ValueKind::Newtype => "v.0 as i128".to_string(),
                _ => "\"?\"".to_string(),
            };
            let _ = writeln!(
                self.rust,
                "    {{\n        let mut z = ::core::mem::MaybeUninit::<{rty}>::zeroed();\n        \
                 let s = unsafe {{ &mut *z.as_mut_ptr() }};\n        \
                 let v = unsafe {{ {recv}.set_{name}({ones}); {recv}.{name}() }};\n        \
                 out.push(Entry::new(\"bits\", {}, format!(\"{{}} {{}}\", hex(&z), {value})));\n    }}",
                c_str(&key)
            );
            let all_ones = if kind == ValueKind::Bool { "1" } else { "-1" };
            let value_c = if matches!(kind, ValueKind::Int | ValueKind::Bool | ValueKind::Newtype) {
                "1"
            } else {
                "0"
            };
            let _ = writeln!(
                self.c,
                "  LC_BITS({}, {t}, {}, {all_ones}, {value_c});",
                c_str(&key),
                c_path(&here)
            );
        }
    }

    fn typedefs_and_consts(&mut self) {
        let m = self.m;
        // Aliases of non-record types: scalars, pointers, function pointers.
        let mut c_body = String::new();
        let mut rust_body = String::new();
        let mut n = 0;
        let flush = |g: &mut Self, c_body: &mut String, rust_body: &mut String, n: &mut usize| {
            if c_body.is_empty() {
                return;
            }
            let fname = format!("check_part_{n}");
            *n += 1;
            let _ = writeln!(g.c, "static void {fname}(void) {{\n{c_body}}}");
            let _ = writeln!(
                g.rust,
                "#[allow(unused_unsafe, clippy::all)]\nfn {fname}(out: &mut Vec<Entry>) {{\n{rust_body}}}"
            );
            g.c_calls.push(fname.clone());
            g.rust_calls.push(fname);
            c_body.clear();
            rust_body.clear();
        };
        for (i, (name, module, ty)) in m.aliases.iter().enumerate() {
            if m.record_of(ty).is_some() && matches!(ty, syn::Type::Path(_)) {
                continue;
            }
            self.typedefs.push(name.clone());
            let rty = format!("{}::{module}{name}", self.krate);
            let _ = writeln!(
                rust_body,
                "    out.push(Entry::new(\"type\", {k}, format!(\"{{}} {{}}\", ::core::mem::size_of::<{rty}>(), \
                 ::core::mem::align_of::<{rty}>())));",
                k = c_str(name)
            );
            let _ = writeln!(
                c_body,
                "#if defined(LC_ID_{name}) || defined({name})\n  LC_TYPE({k}, {name});\n#else\n  \
                 LC_NODECL(\"type\", {k});\n#endif",
                k = c_str(name)
            );
            if i % 200 == 199 {
                flush(self, &mut c_body, &mut rust_body, &mut n);
            }
        }
        flush(self, &mut c_body, &mut rust_body, &mut n);
        for (i, c) in m.consts.iter().enumerate() {
            let path = format!("{}::{}{}", self.krate, c.module, c.name);
            let k = c_str(&c.name);
            let (rust_value, c_macro) = match m.value_kind(&c.ty, 0) {
                ValueKind::Int | ValueKind::Bool => {
                    (format!("({path} as i128).to_string()"), "LC_INT")
                }
                ValueKind::Newtype => (format!("({path}.0 as i128).to_string()"), "LC_INT"),
                ValueKind::Pointer => (format!("({path} as usize as i128).to_string()"), "LC_PTR"),
                ValueKind::Bytes => (format!("hex_bytes(&{path}[..])"), "LC_BYTES"),
                ValueKind::CStr => (format!("hex_bytes({path}.to_bytes_with_nul())"), "LC_BYTES"),
                ValueKind::Other(why) => {
                    self.uncompared
                        .push((c.name.clone(), format!("{why} constant")));
                    continue;
                }
            };
            let _ = writeln!(
                rust_body,
                "    out.push(Entry::new(\"const\", {k}, {rust_value}));"
            );
            let _ = writeln!(
                c_body,
                "#if defined({n}) || defined(LC_ID_{n})\n  {c_macro}({k}, {n});\n#else\n  \
                 LC_NODECL(\"const\", {k});\n#endif",
                n = c.name
            );
            if i % 300 == 299 {
                flush(self, &mut c_body, &mut rust_body, &mut n);
            }
        }
        flush(self, &mut c_body, &mut rust_body, &mut n);
    }

    fn finish(self) -> Artefacts {
        let list = |v: &[String]| v.iter().map(|s| c_str(s)).collect::<Vec<_>>().join(", ");
        let mut rust = String::from(RUST_PRELUDE);
        let _ = writeln!(
            rust,
            "/// Structs and unions with a C name.\npub const RECORDS: &[&str] = &[{}];",
            list(&self.records)
        );
        let _ = writeln!(
            rust,
            "/// Enum newtypes.\npub const ENUMS: &[&str] = &[{}];",
            list(&self.enums)
        );
        let _ = writeln!(rust, "/// Aliases of scalars, pointers and function pointers.\npub const TYPEDEFS: &[&str] = &[{}];", list(&self.typedefs));
        let _ = writeln!(
            rust,
            "/// Declared, never defined in C: no layout.\npub const OPAQUE: &[&str] = &[{}];",
            list(&self.opaque)
        );
        let nested: Vec<String> = self.m.nested.keys().cloned().collect();
        let _ = writeln!(rust, "/// Types with no C name, checked through their parents' fields.\npub const NESTED: &[&str] = &[{}];", list(&nested));
        let _ = writeln!(rust, "/// Members only Rust has (bitfield storage units, padding): checked through the bitfields' bytes and the parent's layout.\npub const RUST_ONLY: &[&str] = &[{}];", list(&self.rust_only));
        let uncompared = self
            .uncompared
            .iter()
            .map(|(n, w)| format!("({}, {})", c_str(n), c_str(w)))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(rust, "/// Constants whose type has no integer value to compare.\npub const UNCOMPARED: &[(&str, &str)] = &[{uncompared}];");
        let _ = writeln!(
            rust,
            "/// Every fact, keyed as the C program prints it.\npub fn entries() -> Vec<Entry> {{\n    let mut out = Vec::new();\n{}    out\n}}",
            self.rust_calls.iter().map(|f| format!("    {f}(&mut out);\n")).collect::<String>()
        );
        rust.push_str(&self.rust);
        let mut c = String::from(C_PRELUDE);
        c.push_str(&self.c);
        let _ = writeln!(
            c,
            "int main(void) {{\n  printf(\"info cuda_version %lld\\n\", (long long)LC_CUDA_VERSION);\n{}  return 0;\n}}",
            self.c_calls.iter().map(|f| format!("  {f}();\n")).collect::<String>()
        );
        Artefacts { rust, c }
    }
}

/// The Rust half's opening. Its helpers (`ones`, `hex`, `hex_bytes`) serve
/// only the tables that need them (bit-fields, byte values): the tests that
/// include a table do so in a module that allows what it leaves unused
/// (`tests/abi_layout.rs`, `tests/abi_bad_input.rs`).
const RUST_PRELUDE: &str = r#"// @generated by abi-proofs/build/layout_check.rs from the bindings' Rust text.
// The Rust half of the ABI check: one entry per fact, compared with the C half.

/// One fact: `kind` (type, field, bits, const), the Rust name, the values.
#[derive(Debug, Clone)]
pub struct Entry {
    pub kind: &'static str,
    pub key: &'static str,
    pub values: String,
}

impl Entry {
    fn new(kind: &'static str, key: &'static str, values: String) -> Self {
        Entry { kind, key, values }
    }
}

fn field<F>(out: &mut Vec<Entry>, key: &'static str, offset: usize, _at: *const F) {
    let values = format!("{} {} {}", offset, ::core::mem::size_of::<F>(), ::core::mem::align_of::<F>());
    out.push(Entry::new("field", key, values));
}

fn ones<T>() -> T {
    let mut v = ::core::mem::MaybeUninit::<T>::uninit();
    unsafe {
        ::core::ptr::write_bytes(v.as_mut_ptr(), 0xff, 1);
        v.assume_init()
    }
}

fn hex<T>(v: &::core::mem::MaybeUninit<T>) -> String {
    let bytes = unsafe { ::core::slice::from_raw_parts(v.as_ptr() as *const u8, ::core::mem::size_of::<T>()) };
    hex_bytes(bytes)
}

fn hex_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

"#;

const C_PRELUDE: &str = r#"/* @generated by abi-proofs/build/layout_check.rs from the bindings' Rust text.
 * The C half of the ABI check: prints one line per fact, compared with the Rust half. */
#include "lc_prelude.h"
#include "lc_names.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef CUDA_VERSION
#define LC_CUDA_VERSION CUDA_VERSION
#else
#define LC_CUDA_VERSION 0
#endif

#define LC_TYPE(key, T) printf("type %s %llu %llu\n", key, (unsigned long long)sizeof(T), (unsigned long long)_Alignof(T))
#define LC_FIELD(key, T, d) printf("field %s %llu %llu %llu\n", key, \
  (unsigned long long)offsetof(T, d), (unsigned long long)sizeof(((T *)0)->d), \
  (unsigned long long)_Alignof(__typeof__(((T *)0)->d)))
/* A flexible array member: offset and element alignment, no size. */
#define LC_FLEX(key, T, d) printf("field %s %llu ? %llu\n", key, \
  (unsigned long long)offsetof(T, d), (unsigned long long)_Alignof(__typeof__(((T *)0)->d[0])))
/* An anonymous member: its offset is its first field's; it has no name to take sizeof of. */
#define LC_ANON(key, T, first) printf("field %s %llu ? ?\n", key, (unsigned long long)offsetof(T, first))
#define LC_UNCHECKED(key) printf("field %s ? ? ?\n", key)
#define LC_NODECL(kind, key) printf("nodecl %s %s\n", kind, key)
#define LC_INT(key, v) do { if ((v) < 0) printf("const %s %lld\n", key, (long long)(v)); \
  else printf("const %s %llu\n", key, (unsigned long long)(v)); } while (0)
#define LC_PTR(key, v) printf("const %s %llu\n", key, (unsigned long long)(uintptr_t)(v))
#define LC_BYTES(key, v) lc_bytes("const", key, (const unsigned char *)(v), sizeof(v), 0, 0)
#define LC_BITS(key, T, d, all_ones, has_value) do { T s; memset(&s, 0, sizeof s); s.d = all_ones; \
  lc_bytes("bits", key, (const unsigned char *)&s, sizeof s, has_value, (long long)s.d); } while (0)

static void lc_bytes(const char *kind, const char *key, const unsigned char *p, size_t n, int has_value,
                     long long value) {
  size_t i;
  printf("%s %s ", kind, key);
  for (i = 0; i < n; i++) printf("%02x", p[i]);
  if (has_value) printf(" %lld", value);
  else if (kind[0] == 'b') printf(" ?");
  printf("\n");
}

"#;
