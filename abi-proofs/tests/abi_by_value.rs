//! Every struct or union a declared function takes or returns by value
//! (`CUmemLocation` for `cuMemAdvise`/`cuMemPrefetchAsync`, `cudaMemLocation`
//! for `cudaMemAdvise`/`cudaMemPrefetchAsync`, `cudaExtent`, the IPC handles,
//! ...; found from the signatures by `abi-proofs/build/by_value.rs`) passed
//! between Rust and C code compiled by the target's C compiler, both ways:
//!
//! - **Rust → C → Rust**: Rust fills two values (every leaf field its own
//!   bytes) and calls `T cms_bv_echo_T(T a, u64 k0..k4, T b)`; C checks
//!   each field of `a` and `b` and the five integers between them, and
//!   returns a third value, which Rust checks field by field;
//! - **C → Rust → C**: C calls a Rust `extern "C" fn` of the same shape with
//!   values it filled; Rust checks them, returns a value, C checks it.
//!
//! Every difference is named (`CUmemLocation: C read a.type_ ...`). Every
//! (function, parameter or return, type) the signatures pass by value,
//! listed by the build script apart from the cases, must be run by a case.
//! The wrong twins: for C → Rust → C, a Rust function returning its first
//! argument, every field of which C must name; for Rust → C → Rust, for each
//! type, Rust mirrors with the same field names fed through the same harness
//! (C reads, never follows, what it gets):
//! the fields reversed and an extra member in its union must fail naming the
//! type. The type over-aligned (`repr(C, align(128))`) must fail too, except
//! where the ABI passes the real type by reference (AAPCS64 above 16 bytes,
//! Win64 unless 1, 2, 4 or 8 bytes): there a pointer to a copy with the same
//! offsets reads the same, and the test asserts it passes. A
//! `repr(C, packed)` mirror is passed differently only where packing moves a
//! field (none of these types has padding): it must fail exactly then.
//!
//! Reported ignored, with the reason, where the build had no headers or no
//! libclang to make the C half.
// With the committed bindings standing in there is no C half: the harness
// is compiled, and unused.
#![cfg_attr(cuda_mem_sys_fallback, allow(dead_code))]

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::sync::Mutex;

/// One field: its Rust path, offset and size in this type, and the unions
/// (index, member) it sits in.
pub struct Leaf {
    name: &'static str,
    at: usize,
    len: usize,
    guards: &'static [(usize, usize)],
}

impl Leaf {
    fn new(
        name: &'static str,
        (at, len): (usize, usize),
        guards: &'static [(usize, usize)],
    ) -> Leaf {
        Leaf {
            name,
            at,
            len,
            guards,
        }
    }
}

/// The offset and size of the field at `field` in the value at `p`.
fn span<T, F>(p: *const T, field: *const F) -> (usize, usize) {
    (field as usize - p as usize, std::mem::size_of::<F>())
}

/// A type passed by value (or a wrong mirror of one).
pub trait Case: Copy + 'static {
    const NAME: &'static str;
    /// The functions that pass it.
    const FUNCTIONS: &'static str;
    const UNIONS: usize;
    /// Why the harness cannot cover a part of it.
    const UNCOVERED: &'static [&'static str];
    fn leaves() -> Vec<Leaf>;
}

fn pattern(seed: usize, leaf: usize, byte: usize) -> u8 {
    (seed * 59 + leaf * 17 + byte * 7 + 33) as u8
}

const fn marker(n: u64) -> u64 {
    0x1111_1111_1111_1111 * (n + 1) + 0x0102_0304_0506_0708
}
const K: [u64; 5] = [marker(0), marker(1), marker(2), marker(3), marker(4)];

/// In each union, the member whose leaves span the most bytes (as C chooses).
fn chosen(leaves: &[Leaf], unions: usize) -> Vec<usize> {
    (0..unions)
        .map(|u| {
            let (mut best, mut best_span) = (0, 0);
            for member in 0..64 {
                let (mut lo, mut hi) = (usize::MAX, 0);
                for l in leaves.iter().filter(|l| l.guards.contains(&(u, member))) {
                    lo = lo.min(l.at);
                    hi = hi.max(l.at + l.len);
                }
                if hi > lo && hi - lo > best_span {
                    (best, best_span) = (member, hi - lo);
                }
            }
            best
        })
        .collect()
}

fn active(leaves: &[Leaf], unions: usize) -> impl Iterator<Item = (usize, &Leaf)> {
    let chosen = chosen(leaves, unions);
    leaves
        .iter()
        .enumerate()
        .filter(move |(_, l)| l.guards.iter().all(|&(u, m)| chosen[u] == m))
}

fn fill<T: Case>(seed: usize) -> T {
    let mut x = std::mem::MaybeUninit::<T>::zeroed();
    let bytes = x.as_mut_ptr() as *mut u8;
    let leaves = T::leaves();
    for (i, l) in active(&leaves, T::UNIONS) {
        for j in 0..l.len {
            // SAFETY: inside the value (the leaf's span is measured on this type).
            unsafe { bytes.add(l.at + j).write(pattern(seed, i, j)) };
        }
    }
    // SAFETY: every field of these types is an integer, a pointer or an array
    // of them: any bytes are a value.
    unsafe { x.assume_init() }
}

/// The fields of `x` that do not hold `seed`'s bytes, as `what.field`.
fn differing<T: Case>(x: &T, seed: usize, what: &str) -> Vec<String> {
    let bytes = x as *const T as *const u8;
    let leaves = T::leaves();
    active(&leaves, T::UNIONS)
        .filter(|(i, l)| {
            // SAFETY: inside the value.
            (0..l.len).any(|j| unsafe { bytes.add(l.at + j).read() } != pattern(seed, *i, j))
        })
        .map(|(_, l)| format!("{what}.{}", l.name))
        .collect()
}

/// The C half keeps one report: one call at a time.
static C_SIDE: Mutex<()> = Mutex::new(());
/// What the Rust callback found (C → Rust).
static SEEN: Mutex<Vec<String>> = Mutex::new(vec![]);

/// The C half's report of its last call: (slot, leaf) pairs that differed.
fn c_report(leaves: &[Leaf]) -> [Vec<String>; 3] {
    // SAFETY: the C half's static array of 3 × 64 bytes.
    let r = unsafe { std::slice::from_raw_parts(generated::cms_bv_report(), 3 * 64) };
    let names = |slot: usize| -> Vec<String> {
        (0..64)
            .filter(|&k| r[slot * 64 + k] != 0)
            .map(|k| {
                leaves
                    .get(k)
                    .map_or(format!("leaf {k}"), |l| l.name.to_string())
            })
            .collect()
    };
    let ints = (0..5)
        .filter(|&k| r[2 * 64 + k] != 0)
        .map(|k| format!("k{k}"))
        .collect();
    [names(0), names(1), ints]
}

type Echo<T> = unsafe extern "C" fn(T, u64, u64, u64, u64, u64, T) -> T;
type Callback<T> = extern "C" fn(T, u64, u64, u64, u64, u64, T) -> T;
type Call<T> = unsafe extern "C" fn(Callback<T>);

/// Rust → C → Rust; `Err` names every field (and integer) that differed.
fn rust_to_c<T: Case>(echo: Echo<T>) -> Result<(), String> {
    let _one = C_SIDE.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = (fill::<T>(1), fill::<T>(2));
    // SAFETY: the C half's function for this type (or, for a wrong twin,
    // deliberately not: C reads what it is given and follows no pointer).
    let r = unsafe { echo(a, K[0], K[1], K[2], K[3], K[4], b) };
    let [ca, cb, ints] = c_report(&T::leaves());
    let mut bad = vec![];
    let mut say = |who: &str, what: &str, list: Vec<String>| {
        if !list.is_empty() {
            let list: Vec<String> = list.iter().map(|l| format!("{what}{l}")).collect();
            bad.push(format!("{who} {}", list.join(", ")));
        }
    };
    say("C read differently:", "a.", ca);
    say("C read differently the integers after a:", "", ints);
    say("C read differently:", "b.", cb);
    say(
        "Rust read differently what C returned:",
        "",
        differing(&r, 3, "returned"),
    );
    verdict::<T>("Rust → C → Rust", bad)
}

extern "C" fn callback<T: Case>(a: T, k0: u64, k1: u64, k2: u64, k3: u64, k4: u64, b: T) -> T {
    let mut seen = differing(&a, 1, "a");
    for (n, (k, want)) in [k0, k1, k2, k3, k4].iter().zip(K).enumerate() {
        if *k != want {
            seen.push(format!("k{n}"));
        }
    }
    seen.extend(differing(&b, 2, "b"));
    SEEN.lock().unwrap_or_else(|e| e.into_inner()).extend(seen);
    fill::<T>(3)
}

/// The wrong twin of [`callback`] for C → Rust → C: it returns its first
/// argument (filled with C's seed 1), not a value of its own (seed 3), so
/// every field C checks of what came back differs.
extern "C" fn returns_its_argument<T: Case>(
    a: T,
    _k0: u64,
    _k1: u64,
    _k2: u64,
    _k3: u64,
    _k4: u64,
    _b: T,
) -> T {
    a
}

/// C → Rust → C.
fn c_to_rust<T: Case>(call: Call<T>) -> Result<(), String> {
    c_to_rust_through(call, callback::<T>)
}

/// C → Rust → C through the Rust function `f` (the callback, or its twin).
fn c_to_rust_through<T: Case>(call: Call<T>, f: Callback<T>) -> Result<(), String> {
    let _one = C_SIDE.lock().unwrap_or_else(|e| e.into_inner());
    SEEN.lock().unwrap_or_else(|e| e.into_inner()).clear();
    // SAFETY: the C half's caller for this type, with a callback of its type.
    unsafe { call(f) };
    let seen = std::mem::take(&mut *SEEN.lock().unwrap_or_else(|e| e.into_inner()));
    let [returned, _, _] = c_report(&T::leaves());
    let mut bad = vec![];
    if !seen.is_empty() {
        bad.push(format!("Rust read differently: {}", seen.join(", ")));
    }
    if !returned.is_empty() {
        bad.push(format!(
            "C read differently what Rust returned: returned.{}",
            returned.join(", returned.")
        ));
    }
    verdict::<T>("C → Rust → C", bad)
}

fn verdict<T: Case>(way: &str, bad: Vec<String>) -> Result<(), String> {
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{} ({way}): {}", T::NAME, bad.join("; ")))
    }
}

/// What a wrong twin must do.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    Fails,
    /// Fails where its layout moves a field or changes the size; otherwise
    /// it is passed as the real type is.
    FailsIfMoved,
    /// Fails unless this ABI passes the real type by reference (a pointer
    /// to a copy): then a mirror with the same offsets reads the same.
    FailsUnlessIndirect,
}

/// Whether this target's C ABI passes a struct of `size` bytes by
/// reference: AAPCS64 above 16 bytes, Win64 unless 1, 2, 4 or 8 bytes;
/// never on x86_64 System V (a large struct is copied onto the stack).
fn indirect(size: usize) -> bool {
    if cfg!(target_arch = "aarch64") {
        size > 16
    } else if cfg!(all(windows, target_arch = "x86_64")) {
        !matches!(size, 1 | 2 | 4 | 8)
    } else {
        false
    }
}

pub struct Twin {
    what: &'static str,
    expect: Expect,
    moved: bool,
    real_size: usize,
    run: Box<dyn Fn() -> Result<(), String> + Send + Sync>,
}

impl Twin {
    fn of<R: Case, W: Case>(what: &'static str, expect: Expect, echo: Echo<R>) -> Twin {
        let (real, twin) = (R::leaves(), W::leaves());
        let moved = std::mem::size_of::<R>() != std::mem::size_of::<W>()
            || real
                .iter()
                .zip(&twin)
                .any(|(r, w)| r.at != w.at || r.len != w.len);
        // SAFETY: a function pointer of another signature, on purpose: the
        // wrong twin is the C function called with a mirror C passes otherwise.
        let echo: Echo<W> = unsafe { std::mem::transmute::<Echo<R>, Echo<W>>(echo) };
        Twin {
            what,
            expect,
            moved,
            real_size: std::mem::size_of::<R>(),
            run: Box::new(move || rust_to_c::<W>(echo)),
        }
    }
}

/// One type's checks.
pub struct Cases {
    name: &'static str,
    /// The struct or union it names (through aliases).
    record: &'static str,
    functions: &'static str,
    uncovered: &'static [&'static str],
    leaves: usize,
    rust_to_c: Box<dyn Fn() -> Result<(), String> + Send + Sync>,
    c_to_rust: Box<dyn Fn() -> Result<(), String> + Send + Sync>,
    /// C → Rust → C with a Rust function returning the wrong value.
    c_to_rust_wrong_return: Box<dyn Fn() -> Result<(), String> + Send + Sync>,
    /// The active leaves' names (what C must name of a wrong return).
    active: Vec<&'static str>,
    twins: Vec<Twin>,
}

impl Cases {
    fn of<T: Case>(record: &'static str, echo: Echo<T>, call: Call<T>, twins: Vec<Twin>) -> Cases {
        let leaves = T::leaves();
        Cases {
            name: T::NAME,
            record,
            functions: T::FUNCTIONS,
            uncovered: T::UNCOVERED,
            leaves: leaves.len(),
            rust_to_c: Box::new(move || rust_to_c::<T>(echo)),
            c_to_rust: Box::new(move || c_to_rust::<T>(call)),
            c_to_rust_wrong_return: Box::new(move || {
                c_to_rust_through::<T>(call, returns_its_argument::<T>)
            }),
            active: active(&leaves, T::UNIONS).map(|(_, l)| l.name).collect(),
            twins,
        }
    }
}

#[allow(non_snake_case, dead_code, unused_imports, clippy::all)]
mod generated {
    use super::{span, Case, Cases, Expect, Leaf, Twin};
    include!(concat!(env!("OUT_DIR"), "/abi/by_value.rs"));
}

/// The (function, where, record) entries of `passed` that no case of
/// `run` (record, its functions) covers, each named.
fn not_run(passed: &[(&str, &str, &str)], run: &[(&str, Vec<&str>)]) -> Vec<String> {
    passed
        .iter()
        .filter(|(f, _, r)| !run.iter().any(|(rr, fs)| rr == r && fs.contains(f)))
        .map(|(f, at, r)| format!("{f}'s {at}: {r}, run by no case"))
        .collect()
}

fn trial(name: String, f: impl FnOnce() -> Result<Completion, Failed> + Send + 'static) -> Trial {
    Trial::ignorable_test(name, f)
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![];
    if let Some(reason) = generated::UNAVAILABLE {
        trials.push(trial("by_value".into(), move || {
            Ok(Completion::ignored_with(reason))
        }));
        libtest_mimic::run(&args, trials).exit();
    }
    let cases = generated::cases();
    if !args.list {
        println!(
            "abi_by_value: {} types passed by value, C compiler of the target {}:",
            cases.len(),
            generated::TARGET
        );
        for c in &cases {
            println!("  {} ({} fields): {}", c.name, c.leaves, c.functions);
        }
    }
    // Every struct or union a signature passes by value (a parameter or the
    // return), derived from the signatures apart from the cases: each is run
    // by a case of its record that lists the function.
    let run: Vec<(&str, Vec<&str>)> = cases
        .iter()
        .map(|c| (c.record, c.functions.split(", ").collect()))
        .collect();
    trials.push(trial(
        "every_type_a_signature_passes_by_value_is_run".into(),
        move || {
            let missing = not_run(generated::PASSED_BY_VALUE, &run);
            if !missing.is_empty() {
                return Err(format!(
                    "passed by value in the signatures, run by no case:\n  {}",
                    missing.join("\n  ")
                )
                .into());
            }
            if generated::PASSED_BY_VALUE.len() < 10 {
                return Err(format!(
                    "only {} by-value parameters and returns found",
                    generated::PASSED_BY_VALUE.len()
                )
                .into());
            }
            Ok(Completion::Completed)
        },
    ));
    trials.push(trial(
        "a_type_passed_by_value_and_run_by_no_case_is_named".into(),
        move || {
            // The wrong twin: the cases without the return types (the
            // cudaChannelFormatDesc case, returned by cudaCreateChannelDesc,
            // gone), and one function missing from a case's list.
            let passed = [
                ("cudaCreateChannelDesc", "return", "cudaChannelFormatDesc"),
                ("cuMemAdvise", "parameter 4", "CUmemLocation_st"),
                ("cuMemPrefetchAsync", "parameter 3", "CUmemLocation_st"),
            ];
            let run = [("CUmemLocation_st", vec!["cuMemAdvise"])];
            let missing = not_run(&passed, &run);
            let want = [
                "cudaCreateChannelDesc's return: cudaChannelFormatDesc, run by no case",
                "cuMemPrefetchAsync's parameter 3: CUmemLocation_st, run by no case",
            ];
            if missing != want {
                return Err(format!("named {missing:?}, not {want:?}").into());
            }
            Ok(Completion::Completed)
        },
    ));
    // The named types, wherever the signatures pass them (12.2 on).
    let names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    trials.push(trial("the_by_value_types_are_found".into(), move || {
        let mut want = vec!["cudaExtent", "cudaPitchedPtr", "cudaChannelFormatDesc"];
        if cuda_mem_sys::CUDA_VERSION >= 12020 {
            want.extend(["CUmemLocation", "cudaMemLocation"]);
        }
        let missing: Vec<&&str> = want.iter().filter(|w| !names.contains(w)).collect();
        if missing.is_empty() {
            Ok(Completion::Completed)
        } else {
            Err(format!("not found passed by value: {missing:?} (found {names:?})").into())
        }
    }));
    for c in cases {
        let Cases {
            name,
            uncovered,
            rust_to_c,
            c_to_rust,
            c_to_rust_wrong_return,
            active,
            twins,
            ..
        } = c;
        trials.push(trial(format!("{name}::rust_to_c_to_rust"), move || {
            if !uncovered.is_empty() {
                return Err(format!("not covered: {uncovered:?}").into());
            }
            rust_to_c()
                .map(|()| Completion::Completed)
                .map_err(Failed::from)
        }));
        trials.push(trial(format!("{name}::c_to_rust_to_c"), move || {
            c_to_rust()
                .map(|()| Completion::Completed)
                .map_err(Failed::from)
        }));
        // The C → Rust → C leg's wrong twin: C must name every field of the
        // wrong value Rust returned.
        trials.push(trial(
            format!("{name}::wrong_twin_wrong_return_is_caught"),
            move || match c_to_rust_wrong_return() {
                Ok(()) => Err(format!(
                    "{name}: a Rust function returning its argument went through unnoticed (C → Rust → C)"
                )
                .into()),
                Err(e) => {
                    let want = format!(
                        "{name} (C → Rust → C): C read differently what Rust returned: returned.{}",
                        active.join(", returned.")
                    );
                    if e == want {
                        println!("  caught: {e}");
                        Ok(Completion::Completed)
                    } else {
                        Err(format!("said {e:?}, not {want:?}").into())
                    }
                }
            },
        ));
        for t in twins {
            let title = format!("{name}::wrong_twin_{}_is_caught", t.what);
            trials.push(trial(title, move || {
                let must_fail = match t.expect {
                    Expect::Fails => true,
                    Expect::FailsIfMoved => t.moved,
                    Expect::FailsUnlessIndirect => !indirect(t.real_size),
                };
                match ((t.run)(), must_fail) {
                    (Err(e), true) if e.starts_with(&format!("{name} ")) => {
                        println!("  caught: {e}");
                        Ok(Completion::Completed)
                    }
                    (Err(e), true) => Err(format!("failed without naming {name}: {e}").into()),
                    (Ok(()), true) => Err(format!(
                        "the wrong twin `{}` of {name} went through unnoticed",
                        t.what
                    )
                    .into()),
                    (Ok(()), false) => Ok(Completion::Completed),
                    (Err(e), false) => Err(format!(
                        "`{}` moves no field of {name} ({} bytes, passed by reference: {}), \
                         and should be passed alike, yet: {e}",
                        t.what,
                        t.real_size,
                        indirect(t.real_size)
                    )
                    .into()),
                }
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
