//! `cargo xtask patches`: whether every patch version of a release gives
//! the bindings committed for it (`docs/patch-versions.md`).
//!
//! The committed bindings of a release are generated from one set of its
//! wheels (`cargo xtask headers`: the newest patch). A user's toolkit may be
//! another patch of the same release: the build takes the committed
//! bindings there where it cannot generate, by `CUDA_VERSION` alone. This
//! measures whether that is exact: every runtime wheel version the package
//! index lists for each release, with the crt (12.x: nvcc) and profiler
//! wheels of the nearest patch number, generated for x86_64 Linux in both
//! stream modes and compared with the committed bindings, byte for byte.
//! The table names, for each patch, "same" or the items that differ.

use crate::cmd::{step, write_file};
use crate::headers;
use crate::regen::{generate_jobs, Job};
use generator::committed::{self, Family, Part};
use generator::tools;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The versions the package index lists for `package`, newest first.
fn versions(package: &str) -> Result<Vec<String>, String> {
    let out = Command::new("python3")
        .args(["-m", "pip", "index", "versions", package])
        .output()
        .map_err(|e| format!("python3 -m pip index versions {package}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Available versions: "))
        .ok_or_else(|| format!("pip index versions {package} listed none:\n{text}"))?;
    Ok(line.split(", ").map(str::to_string).collect())
}

/// The patch number of `version` (`12.4.127`: 127).
fn patch(version: &str) -> u64 {
    version
        .rsplit('.')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

/// Of `candidates`, the version of `release` whose patch number is nearest `to`.
fn nearest<'a>(candidates: &'a [String], release: &str, to: &str) -> Option<&'a String> {
    let prefix = format!("{release}.");
    candidates
        .iter()
        .filter(|v| v.starts_with(&prefix))
        .min_by_key(|v| patch(v).abs_diff(patch(to)))
}

/// The names of the items a line declares (`pub fn cuMemAdvise(`: cuMemAdvise).
fn declared(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let rest = [
        "pub fn ",
        "pub const ",
        "pub struct ",
        "pub type ",
        "pub union ",
        "pub static ",
    ]
    .iter()
    .find_map(|p| t.strip_prefix(p))?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// "same", or the items whose lines differ between `committed` and `made`.
fn difference(committed: &str, made: &str) -> String {
    if committed == made {
        return "same".into();
    }
    let delta = tools::delta("", committed, made);
    let changed: Vec<&str> = delta
        .lines()
        .filter(|l| l.starts_with('-') || l.starts_with('+'))
        .map(|l| &l[1..])
        .collect();
    let names: BTreeSet<&str> = changed.iter().filter_map(|l| declared(l)).collect();
    if names.is_empty() {
        return format!("{} lines differ, no declaration among them", changed.len());
    }
    let list: Vec<&str> = names.into_iter().collect();
    format!("{} lines differ: {}", changed.len(), list.join(", "))
}

pub fn run(workspace: &Path) -> Result<(), String> {
    let started = std::time::Instant::now();
    let mut rows = vec![];
    let mut jobs = vec![];
    let mut listed: Vec<[String; 4]> = vec![];
    for release in crate::releases::ALL {
        let names = headers::package_names(release)?;
        let runtime = versions(names[0])?;
        let crt = versions(names[1])?;
        let profiler = versions(names[2])?;
        let committed_from = headers::wheel_names(workspace, release);
        for v in runtime
            .iter()
            .filter(|v| v.starts_with(&format!("{release}.")))
        {
            let c =
                nearest(&crt, release, v).ok_or_else(|| format!("no {} {release}", names[1]))?;
            let p = nearest(&profiler, release, v)
                .ok_or_else(|| format!("no {} {release}", names[2]))?;
            let root = workspace.join("target/cuda-patches").join(v);
            let specs = [
                format!("{}=={v}", names[0]),
                format!("{}=={c}", names[1]),
                format!("{}=={p}", names[2]),
            ];
            if headers::include_dir(&root).is_none() || !root.join("wheels.txt").is_file() {
                headers::unpack(
                    &root,
                    &specs,
                    headers::platforms(headers::HOST_TARGET)?,
                    false,
                )?;
            }
            let include = headers::include_dir(&root)
                .ok_or_else(|| format!("the wheels {specs:?} held no cuda.h"))?;
            // The runtime wheel's own name (the crt's may share the version).
            let committed =
                committed_from.contains(&format!("{}-{v}-", names[0].replace('-', "_")));
            for ptds in [false, true] {
                let variant = committed::find(release, Family::X86_64Linux, ptds)
                    .ok_or_else(|| format!("no committed bindings of {release}"))?;
                jobs.push(Job {
                    variant,
                    include: include.clone(),
                    out: root.join(if ptds { "out-ptds" } else { "out" }),
                    name: format!("{} {v}", tools::describe(variant)),
                });
            }
            listed.push([
                release.to_string(),
                v.clone(),
                format!("{c}, {p}"),
                if committed { "yes" } else { "" }.to_string(),
            ]);
        }
    }
    step("generating every patch version");
    let texts = generate_jobs(workspace, &jobs)?;
    for (i, row) in listed.iter().enumerate() {
        let mut cells = vec![];
        for (j, ptds) in [false, true].into_iter().enumerate() {
            let job = &jobs[2 * i + j];
            let t = &texts[2 * i + j];
            let rust = committed::expand(workspace, job.variant, Part::Rust)?;
            let symbols = committed::expand(workspace, job.variant, Part::Symbols)?;
            let mut d = difference(&rust, &t[0]);
            if symbols != t[1] {
                d.push_str("; the symbols differ");
            }
            let _ = ptds;
            cells.push(d);
        }
        rows.push(format!(
            "| {} | {} | {} | {} | {} | {} |",
            row[0], row[1], row[2], row[3], cells[0], cells[1]
        ));
    }
    let same = rows
        .iter()
        .filter(|r| r.ends_with("| same | same |"))
        .count();
    let text = format!(
        "# Patch versions: does each give the committed bindings?\n\n\
         Measured by `cargo xtask patches` (x86_64 Linux, both stream modes; {} s). \
         Each runtime wheel version the package index lists for a release, with the crt \
         (12.x: `nvidia-cuda-nvcc-cu12`) and profiler wheels of the nearest patch number, \
         generated by the generator of this tree and compared with the committed bindings \
         of its release, byte for byte. \"committed\": the patch the committed bindings \
         were generated from (`cargo xtask headers`, the newest).\n\n\
         {same} of {} patch versions give the committed bindings exactly, in both modes.\n\n\
         | release | runtime wheel | crt, profiler wheels | committed | bindings | per-thread default stream |\n\
         |---|---|---|---|---|---|\n{}\n",
        started.elapsed().as_secs(),
        rows.len(),
        rows.join("\n")
    );
    write_file(&workspace.join("docs/patch-versions.md"), &text)?;
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_patch_and_the_declared_names() {
        let c: Vec<String> = ["12.4.131", "12.4.99", "12.3.107"]
            .map(String::from)
            .to_vec();
        assert_eq!(nearest(&c, "12.4", "12.4.127").unwrap(), "12.4.131");
        assert_eq!(nearest(&c, "12.4", "12.4.99").unwrap(), "12.4.99");
        assert_eq!(nearest(&c, "12.5", "12.5.1"), None);
        assert_eq!(declared("    pub fn cuMemAdvise("), Some("cuMemAdvise"));
        assert_eq!(
            declared("pub const CUDA_VERSION: u32 = 1;"),
            Some("CUDA_VERSION")
        );
        assert_eq!(declared("/// a doc"), None);
        assert_eq!(difference("a\n", "a\n"), "same");
        assert_eq!(
            difference("pub const A: u32 = 1;\n", "pub const A: u32 = 2;\n"),
            "2 lines differ: A"
        );
    }
}
