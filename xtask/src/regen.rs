//! `cargo xtask regen [--check] [<release>...]`: the committed bindings of
//! every release, target family and stream mode (`build/committed.rs`),
//! generated from each release's wheel headers for each family's target by
//! the same code `build/main.rs` runs, documented by links to NVIDIA's online
//! reference ([`codegen::Docs::Links`]).
//!
//! - Each variant is generated in a process of its own
//!   (`cargo xtask regen-variant`), as a build script on that target would:
//!   `TARGET` for bindgen, the target's C compiler for the preprocessor
//!   (aarch64's and MinGW's gcc, clang in MSVC mode with stand-in C library
//!   headers); as many at once as there are cores.
//! - Without `--check` it writes the pinned variants whole and each other one
//!   as its delta to its parent, with its headers' fingerprints.
//! - With `--check` it writes nothing: every committed variant, expanded from
//!   the committed files, must equal what the generator writes now, byte for
//!   byte; a difference names the variant and its first differing line.
//!
//! `--reuse` takes the texts of the last run from `target/xtask-regen/`
//! instead of generating them (after a change to how they are kept).
//!
//! Release names restrict either to those releases (a delta's parent is then
//! read from the committed files, expanded).

use crate::cmd::{run_cmd, step, write_file};
use crate::headers;
use generator::committed::{self, Family, Part, Variant};
use generator::{locate, tools};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The three texts of a variant: bindings, symbols, inputs.
pub type Texts = [String; 3];

/// `regen [--check | --reuse] [<release>...]`: (check, reuse, releases).
pub fn parse<'a>(args: &[&'a str]) -> Result<(bool, bool, Vec<&'a str>), String> {
    let check = args.first() == Some(&"--check");
    let reuse = args.first() == Some(&"--reuse");
    let releases: Vec<&str> = args[usize::from(check || reuse)..].to_vec();
    if let Some(bad) = releases.iter().find(|r| !crate::releases::ALL.contains(r)) {
        return Err(format!(
            "regen: {bad:?} is no release (known: {})",
            crate::releases::ALL.join(" ")
        ));
    }
    Ok((check, reuse, releases))
}

pub fn run(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let (check, reuse, releases) = parse(args)?;
    let variants: Vec<Variant> = tools::variants()
        .into_iter()
        .filter(|v| releases.is_empty() || releases.contains(&v.release))
        .collect();
    let started = std::time::Instant::now();
    let made = if reuse {
        last_run(workspace, &variants)?
    } else {
        generate(workspace, &variants)?
    };
    println!(
        "generated {} variants in {:.0} s",
        made.len(),
        started.elapsed().as_secs_f64()
    );
    if check {
        return compare(workspace, &made);
    }
    for (v, texts) in &made {
        write_variant(workspace, *v, texts, &made)?;
    }
    // A committed file no variant has is stale.
    let known: Vec<PathBuf> = tools::variants()
        .into_iter()
        .flat_map(|v| {
            [
                v.path(workspace, Part::Rust),
                v.path(workspace, Part::Symbols),
                v.inputs_path(workspace),
            ]
        })
        .collect();
    for f in committed_files(workspace)? {
        if !known.contains(&f) {
            std::fs::remove_file(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            println!("removed {}", f.display());
        }
    }
    Ok(())
}

/// Every file under `src/generated/`.
fn committed_files(workspace: &Path) -> Result<Vec<PathBuf>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                walk(&p, out)?;
            } else {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = vec![];
    walk(&workspace.join("src/generated"), &mut out).map_err(|e| e.to_string())?;
    out.sort();
    Ok(out)
}

/// The text `v`'s parent has: generated in this run, or else the committed one.
fn parent_text(
    workspace: &Path,
    parent: Variant,
    part: Part,
    made: &BTreeMap<Variant, Texts>,
) -> Result<String, String> {
    match made.get(&parent) {
        Some(t) => Ok(t[index(part)].clone()),
        None => committed::expand(workspace, parent, part),
    }
}

fn index(part: Part) -> usize {
    match part {
        Part::Rust => 0,
        Part::Symbols => 1,
    }
}

fn write_variant(
    workspace: &Path,
    v: Variant,
    texts: &Texts,
    made: &BTreeMap<Variant, Texts>,
) -> Result<(), String> {
    for part in [Part::Rust, Part::Symbols] {
        let path = v.path(workspace, part);
        let text = match v.parent() {
            None => texts[index(part)].clone(),
            Some(p) => {
                let base = parent_text(workspace, p, part, made)?;
                let what = match part {
                    Part::Rust => "the bindings",
                    Part::Symbols => "the symbols",
                };
                tools::delta(
                    &format!(
                        "@generated by cuda-mem-sys's generator (`cargo xtask regen`): {what} of {}, \
                         as changes to those of {} (build/committed.rs reads it).",
                        tools::describe(v),
                        tools::describe(p)
                    ),
                    &base,
                    &texts[index(part)],
                )
            }
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        write_file(&path, text)?;
    }
    write_file(&v.inputs_path(workspace), &texts[2])?;
    Ok(())
}

/// `--check`: every variant made equals the committed one, expanded.
fn compare(workspace: &Path, made: &BTreeMap<Variant, Texts>) -> Result<(), String> {
    let mut wrong = vec![];
    for (v, texts) in made {
        for part in [Part::Rust, Part::Symbols] {
            let committed = committed::expand(workspace, *v, part);
            match committed {
                Ok(c) if c == texts[index(part)] => {}
                Ok(c) => wrong.push(format!(
                    "{} ({}): {}",
                    tools::describe(*v),
                    v.path(workspace, part).display(),
                    first_difference(&texts[index(part)], &c)
                )),
                Err(e) => wrong.push(format!("{}: {e}", tools::describe(*v))),
            }
        }
        let inputs = std::fs::read_to_string(v.inputs_path(workspace)).unwrap_or_default();
        if inputs != texts[2] {
            wrong.push(format!(
                "{}: {} differs from the headers' fingerprints",
                tools::describe(*v),
                v.inputs_path(workspace).display()
            ));
        }
    }
    if wrong.is_empty() {
        println!(
            "every committed variant ({}) is the generator's output, byte for byte",
            made.len()
        );
        Ok(())
    } else {
        Err(format!(
            "{} committed files differ from the generator's output (run `cargo xtask regen`):\n{}",
            wrong.len(),
            wrong.join("\n")
        ))
    }
}

/// Where two texts first differ: the line and both versions of it.
pub fn first_difference(generated: &str, committed: &str) -> String {
    let (mut a, mut b) = (generated.lines(), committed.lines());
    for n in 1.. {
        match (a.next(), b.next()) {
            (None, None) => break,
            (x, y) if x == y => continue,
            (x, y) => {
                return format!(
                    "line {n}: generated {:?}, committed {:?}",
                    x.unwrap_or("(end)"),
                    y.unwrap_or("(end)")
                )
            }
        }
    }
    "they differ only in line ends".into()
}

/// `--reuse`: the texts the last run generated, from `target/xtask-regen/`
/// (after a change to how they are kept, not to what is generated).
fn last_run(workspace: &Path, variants: &[Variant]) -> Result<BTreeMap<Variant, Texts>, String> {
    let mut made = BTreeMap::new();
    for v in variants {
        let out = out_dir(workspace, *v);
        let read = |n: &str| {
            std::fs::read_to_string(out.join(n))
                .map_err(|e| format!("{}/{n}: {e} (run `cargo xtask regen` first)", out.display()))
        };
        made.insert(
            *v,
            [read("bindings.rs")?, read("symbols")?, read("inputs")?],
        );
    }
    Ok(made)
}

/// Where a variant's generator writes its texts.
fn out_dir(workspace: &Path, v: Variant) -> PathBuf {
    workspace.join("target/xtask-regen").join(format!(
        "{}-{}{}",
        v.release,
        v.family.name(),
        if v.ptds { "-ptds" } else { "" }
    ))
}

/// Generates `variants`, each in a process of its own, as many at once as
/// there are cores.
fn generate(workspace: &Path, variants: &[Variant]) -> Result<BTreeMap<Variant, Texts>, String> {
    let mut jobs = vec![];
    for v in variants {
        let include = headers::fetch_for(workspace, v.release, tools::triple(v.family))?;
        jobs.push(Job {
            variant: *v,
            include,
            out: out_dir(workspace, *v),
            name: tools::describe(*v),
        });
    }
    let texts = generate_jobs(workspace, &jobs)?;
    Ok(variants.iter().copied().zip(texts).collect())
}

/// One generator run: a variant's release, family and mode, from the
/// headers in `include`, into `out`.
pub struct Job {
    pub variant: Variant,
    pub include: PathBuf,
    pub out: PathBuf,
    /// What the progress lines call it.
    pub name: String,
}

/// Runs `jobs`, each in a process of its own, as many at once as there are
/// cores: their texts, in their order.
pub fn generate_jobs(workspace: &Path, jobs: &[Job]) -> Result<Vec<Texts>, String> {
    crate::cmd::ensure_libclang()?;
    let families: Vec<Family> = jobs.iter().map(|j| j.variant.family).collect();
    if families.contains(&Family::Aarch64Linux) {
        crate::cmd::ensure_target(crate::cmd::AARCH64)?;
    }
    if families.contains(&Family::X86_64WindowsGnu) {
        crate::cmd::ensure_target(crate::cmd::WINDOWS)?;
    }
    if families
        .iter()
        .any(|f| matches!(f, Family::X86_64WindowsMsvc | Family::Aarch64WindowsMsvc))
    {
        crate::cmd::ensure_clang()?;
    }
    let at_once = std::thread::available_parallelism().map_or(2, |n| n.get());
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut next = 0;
    let mut running: std::collections::VecDeque<(&Job, std::process::Child)> = Default::default();
    let mut made = vec![];
    step(&format!(
        "generating {} variants ({at_once} at once)",
        jobs.len()
    ));
    while next < jobs.len() || !running.is_empty() {
        while running.len() < at_once && next < jobs.len() {
            let job = &jobs[next];
            next += 1;
            let v = job.variant;
            std::fs::create_dir_all(&job.out).map_err(|e| e.to_string())?;
            let mut cmd = Command::new(&exe);
            cmd.arg("regen-variant")
                .arg(v.release)
                .arg(tools::triple(v.family))
                .arg(if v.ptds { "ptds" } else { "plain" })
                .arg(&job.include)
                .arg(&job.out)
                .current_dir(workspace);
            environment(workspace, v.family, &mut cmd)?;
            let child = cmd
                .spawn()
                .map_err(|e| format!("starting the generator for {}: {e}", job.name))?;
            running.push_back((job, child));
        }
        // Wait for the oldest; the others go on meanwhile.
        let Some((job, mut child)) = running.pop_front() else {
            break;
        };
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("generating {} failed ({status})", job.name));
        }
        let out = &job.out;
        let read = |n: &str| {
            std::fs::read_to_string(out.join(n)).map_err(|e| format!("{}/{n}: {e}", out.display()))
        };
        made.push([read("bindings.rs")?, read("symbols")?, read("inputs")?]);
        println!("  {}", job.name);
    }
    Ok(made)
}

/// What a build script for `family`'s target would have: `TARGET` (bindgen
/// reads it), the C compiler and bindgen's extra arguments.
fn environment(workspace: &Path, family: Family, cmd: &mut Command) -> Result<(), String> {
    let triple = tools::triple(family);
    let under = triple.replace('-', "_");
    cmd.env("TARGET", triple);
    match family {
        Family::X86_64Linux => {}
        Family::Aarch64Linux => {
            cmd.env(format!("CC_{under}"), "aarch64-linux-gnu-gcc");
        }
        Family::X86_64WindowsGnu => {
            cmd.env(format!("CC_{under}"), "x86_64-w64-mingw32-gcc")
                .env(
                    format!("BINDGEN_EXTRA_CLANG_ARGS_{under}"),
                    "-isystem /usr/lib/llvm-19/lib/clang/19/include",
                );
        }
        Family::X86_64WindowsMsvc | Family::Aarch64WindowsMsvc => {
            let dir = workspace.join("target/xtask-regen/msvc");
            let include = dir.join("include");
            std::fs::create_dir_all(&include).map_err(|e| format!("{}: {e}", include.display()))?;
            // Written once: another generator may be running the script.
            let once = |path: &Path, text: &str| -> Result<bool, String> {
                if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
                    return Ok(false);
                }
                write_file(path, text)?;
                Ok(true)
            };
            for (name, text) in crate::abi::msvc::STAND_IN_HEADERS {
                once(&include.join(name), text)?;
            }
            let cc = dir.join(format!("clang-{triple}"));
            let script = format!(
                "#!/bin/sh\nexec /usr/lib/llvm-19/bin/clang --target={triple} -isystem {} \"$@\"\n",
                include.display()
            );
            if once(&cc, &script)? {
                run_cmd(Command::new("chmod").arg("+x").arg(&cc))?;
            }
            cmd.env(format!("CC_{under}"), &cc).env(
                format!("BINDGEN_EXTRA_CLANG_ARGS_{under}"),
                format!("-isystem {}", include.display()),
            );
        }
    }
    Ok(())
}

/// `cargo xtask regen-variant <release> <triple> plain|ptds <include> <out>`:
/// one variant's texts into `<out>` (what [`generate`] starts).
pub fn variant(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let [release, triple, mode, include, out] = args else {
        return Err("regen-variant <release> <triple> plain|ptds <include> <out>".into());
    };
    let family =
        tools::family_of_triple(triple).ok_or_else(|| format!("no family for {triple}"))?;
    let arch = triple.split('-').next().unwrap_or_default();
    let cuda = locate::at_root(Path::new(include), arch, format!("CUDA {release} headers"))
        .ok_or_else(|| format!("{include} holds no cuda.h"))??;
    let out = Path::new(out);
    let work = out.join("work");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let texts = tools::variant_texts(
        &cuda.include_dirs,
        workspace,
        &work,
        *mode == "ptds",
        tools::cc_for(tools::triple(family)),
    )?;
    for (name, text) in ["bindings.rs", "symbols", "inputs"].iter().zip(texts) {
        write_file(&out.join(name), text)?;
    }
    Ok(())
}
