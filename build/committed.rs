//! The committed bindings of every known release, target family and stream
//! mode ([`Variant`]), and how a build reads one back ([`expand`]).
//!
//! Contract:
//! - Every release of `KNOWN_RELEASES` has committed bindings for each
//!   family (`tools::FAMILIES`) that NVIDIA ships it for ([`Family::releases`]), in
//!   both stream modes: the generator's output for that release's wheel
//!   headers on that target, exactly (`cargo xtask regen` writes them;
//!   `cargo xtask regen --check` regenerates and compares each).
//! - Two are kept whole: [`PINNED_RELEASE`] on x86_64 Linux, in both modes
//!   (`src/generated/cuda-13.0.rs`, `cuda-13.0-ptds.rs`). Each other
//!   variant is kept as its changes to a [`Variant::parent`] (a neighbouring
//!   release, the other stream mode, or a sibling target), so the package
//!   holds each line once: `src/generated/<release>/<family>[-ptds].rs.delta`
//!   (and `.symbols.delta`), with its headers' fingerprints whole beside
//!   them (`.inputs`).
//! - A delta is a unified diff without context or file names (`@@ -a,b +c,d
//!   @@`, then the `-` lines, then the `+` lines), after two comment lines:
//!   what it is, and `# result <FNV-1a 64>` of the text it gives. [`expand`]
//!   checks every removed line and the result's fingerprint: a damaged delta
//!   is an error naming the file, never other bindings.
//!
//! Needs nothing but `std`: the build without the `bindgen` feature reads it.

use super::release::{fnv1a64, KNOWN_RELEASES, PINNED_RELEASE};
use std::path::{Path, PathBuf};

/// A target family the committed bindings are made for: one set of bindings
/// serves every Rust target of the family (the C types and the headers are
/// the same).
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, Hash)]
pub enum Family {
    X86_64Linux,
    Aarch64Linux,
    X86_64WindowsGnu,
    X86_64WindowsMsvc,
    Aarch64WindowsMsvc,
}

/// The first release NVIDIA ships for Windows on Arm (`lib\arm64`).
pub const WINDOWS_ARM64_FIRST: &str = "13.4";

impl Family {
    /// The family of a build's target (cargo's `CARGO_CFG_TARGET_*`), or
    /// `None` for a target no bindings are committed for.
    pub fn of(target_os: &str, target_arch: &str, target_env: &str) -> Option<Family> {
        Some(match (target_os, target_arch, target_env) {
            ("linux", "x86_64", _) => Family::X86_64Linux,
            ("linux", "aarch64", _) => Family::Aarch64Linux,
            ("windows", "x86_64", "gnu" | "gnullvm") => Family::X86_64WindowsGnu,
            ("windows", "x86_64", "msvc") => Family::X86_64WindowsMsvc,
            ("windows", "aarch64", "msvc") => Family::Aarch64WindowsMsvc,
            _ => return None,
        })
    }

    /// The family whose committed bindings a build for this target takes, and
    /// whether they are proven for it: another target takes x86_64 Linux's
    /// (the C types the headers use are the same on every 64-bit target),
    /// never as the output for its very headers.
    pub fn for_target(target_os: &str, target_arch: &str, target_env: &str) -> (Family, bool) {
        match Family::of(target_os, target_arch, target_env) {
            Some(f) => (f, true),
            None => (Family::X86_64Linux, false),
        }
    }

    /// Its name in file names (`x86_64-linux`).
    pub fn name(self) -> &'static str {
        match self {
            Family::X86_64Linux => "x86_64-linux",
            Family::Aarch64Linux => "aarch64-linux",
            Family::X86_64WindowsGnu => "x86_64-windows-gnu",
            Family::X86_64WindowsMsvc => "x86_64-windows-msvc",
            Family::Aarch64WindowsMsvc => "aarch64-windows-msvc",
        }
    }

    /// The releases NVIDIA ships for it, oldest first.
    pub fn releases(self) -> impl Iterator<Item = &'static str> {
        let first = match self {
            Family::Aarch64WindowsMsvc => WINDOWS_ARM64_FIRST,
            _ => KNOWN_RELEASES[0],
        };
        let from = KNOWN_RELEASES.iter().position(|r| *r == first).unwrap_or(0);
        KNOWN_RELEASES[from..].iter().copied()
    }
}

/// One set of committed bindings: a release, a target family, a stream mode.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, Hash)]
pub struct Variant {
    pub release: &'static str,
    pub family: Family,
    /// `per-thread-default-stream`.
    pub ptds: bool,
}

/// Which file of a variant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    /// The bindings (`.rs`).
    Rust,
    /// The symbols they link (`.symbols`).
    Symbols,
}

impl Part {
    fn extension(self) -> &'static str {
        match self {
            Part::Rust => "rs",
            Part::Symbols => "symbols",
        }
    }
}

/// The committed variant of `release` (any spelling of a known one), or `None`.
pub fn find(release: &str, family: Family, ptds: bool) -> Option<Variant> {
    let release = *KNOWN_RELEASES.iter().find(|r| **r == release)?;
    family.releases().any(|r| r == release).then_some(Variant {
        release,
        family,
        ptds,
    })
}

impl Variant {
    /// Kept whole, not as a delta.
    pub fn is_whole(self) -> bool {
        self.release == PINNED_RELEASE && self.family == Family::X86_64Linux
    }

    /// The variant whose text this one's delta changes: for x86_64 Linux the
    /// next release towards the pinned one (the other mode's whole text for
    /// none: both pinned variants are whole); for another family the same
    /// release and mode on the family it differs least from.
    pub fn parent(self) -> Option<Variant> {
        if self.is_whole() {
            return None;
        }
        let family = match self.family {
            Family::X86_64Linux => {
                let at = KNOWN_RELEASES.iter().position(|r| *r == self.release)?;
                let pinned = KNOWN_RELEASES.iter().position(|r| *r == PINNED_RELEASE)?;
                let next = if at < pinned { at + 1 } else { at - 1 };
                return Some(Variant {
                    release: KNOWN_RELEASES[next],
                    ..self
                });
            }
            Family::Aarch64Linux | Family::X86_64WindowsMsvc => Family::X86_64Linux,
            Family::X86_64WindowsGnu | Family::Aarch64WindowsMsvc => Family::X86_64WindowsMsvc,
        };
        Some(Variant { family, ..self })
    }

    fn stem(self, generated: &Path) -> PathBuf {
        let suffix = if self.ptds { "-ptds" } else { "" };
        if self.is_whole() {
            generated.join(format!("cuda-{}{suffix}", self.release))
        } else {
            generated
                .join(self.release)
                .join(format!("{}{suffix}", self.family.name()))
        }
    }

    /// The committed file of `part`: the text itself for a whole variant,
    /// its delta (`.rs.delta`, `.symbols.delta`) for another.
    pub fn path(self, crate_dir: &Path, part: Part) -> PathBuf {
        let ext = part.extension();
        let delta = if self.is_whole() { "" } else { ".delta" };
        self.file(crate_dir, &format!("{ext}{delta}"))
    }

    /// The fingerprints of the headers it was generated from (always whole).
    pub fn inputs_path(self, crate_dir: &Path) -> PathBuf {
        self.file(crate_dir, "inputs")
    }

    /// `<stem>.<extension>` (a release's own dots are no extension).
    fn file(self, crate_dir: &Path, extension: &str) -> PathBuf {
        let stem = self.stem(&crate_dir.join("src/generated"));
        let mut name = stem.file_name().unwrap_or_default().to_os_string();
        name.push(".");
        name.push(extension);
        stem.with_file_name(name)
    }

    /// Every committed file [`expand`] reads for it (for `rerun-if-changed`).
    pub fn files(self, crate_dir: &Path, part: Part) -> Vec<PathBuf> {
        let mut out = vec![];
        let mut v = Some(self);
        while let Some(x) = v {
            out.push(x.path(crate_dir, part));
            v = x.parent();
        }
        out
    }
}

/// The text of `variant`'s `part`, read from the committed files: the whole
/// text at the root of its chain, each delta applied in turn.
pub fn expand(crate_dir: &Path, variant: Variant, part: Part) -> Result<String, String> {
    let path = variant.path(crate_dir, part);
    let read =
        |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let Some(parent) = variant.parent() else {
        return read(&path);
    };
    let base = expand(crate_dir, parent, part)?;
    apply(&base, &read(&path)?).map_err(|e| format!("{}: {e}", path.display()))
}

/// `base` with `delta` applied (the format of the module's contract).
pub fn apply(base: &str, delta: &str) -> Result<String, String> {
    let old: Vec<&str> = base.lines().collect();
    let mut lines = delta.lines().peekable();
    let mut result: Option<u64> = None;
    while let Some(l) = lines.next_if(|l| l.starts_with('#')) {
        if let Some(h) = l.strip_prefix("# result ") {
            result = u64::from_str_radix(h.trim(), 16).ok();
        }
    }
    let expected = result.ok_or("the delta has no `# result <fingerprint>` line")?;
    let mut out = String::with_capacity(base.len() + delta.len());
    let mut at = 0usize; // lines of `old` taken so far
    while let Some(hunk) = lines.next() {
        let (start, count) = hunk_range(hunk)
            .ok_or_else(|| format!("a delta line {hunk:?} is no `@@ -a,b +c,d @@` hunk"))?;
        // Unified diffs name the line before an empty range.
        let first = if count == 0 {
            start
        } else {
            start.saturating_sub(1)
        };
        if first < at || first + count > old.len() {
            return Err(format!(
                "the hunk {hunk:?} lies outside the text it changes"
            ));
        }
        for l in &old[at..first] {
            out.push_str(l);
            out.push('\n');
        }
        for (i, want) in old[first..first + count].iter().enumerate() {
            match lines.next().and_then(|l| l.strip_prefix('-')) {
                Some(l) if l == *want => {}
                _ => {
                    return Err(format!(
                        "the hunk {hunk:?} removes a line the text it changes does not hold \
                         there (line {})",
                        first + i + 1
                    ))
                }
            }
        }
        while let Some(l) = lines.next_if(|l| l.starts_with('+')) {
            out.push_str(&l[1..]);
            out.push('\n');
        }
        at = first + count;
    }
    for l in &old[at..] {
        out.push_str(l);
        out.push('\n');
    }
    if fnv1a64(out.as_bytes()) != expected {
        return Err(format!(
            "the text the delta gives has the fingerprint {:016x}, not {expected:016x}",
            fnv1a64(out.as_bytes())
        ));
    }
    Ok(out)
}

/// `(a, b)` of `@@ -a,b +c,d @@` (`b` is 1 where it is left out).
fn hunk_range(line: &str) -> Option<(usize, usize)> {
    let old = line.strip_prefix("@@ -")?.split(' ').next()?;
    Some(match old.split_once(',') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => (old.parse().ok()?, 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(result: &str, body: &str) -> String {
        format!(
            "# test\n# result {:016x}\n{body}",
            fnv1a64(result.as_bytes())
        )
    }

    #[test]
    fn a_delta_replaces_inserts_and_removes_lines() {
        let base = "a\nb\nc\nd\n";
        let want = "x\na\nc\nd\ne\n";
        let d = delta(
            want,
            "@@ -0,0 +1 @@\n+x\n@@ -2 +2,0 @@\n-b\n@@ -4,0 +5 @@\n+e\n",
        );
        assert_eq!(apply(base, &d).unwrap(), want);
    }

    #[test]
    fn a_delta_removing_a_line_the_text_lacks_is_refused() {
        let d = delta("a\nc\n", "@@ -2 +2,0 @@\n-z\n");
        let e = apply("a\nb\nc\n", &d).unwrap_err();
        assert!(e.contains("does not hold"), "{e}");
    }

    #[test]
    fn a_delta_giving_another_fingerprint_is_refused() {
        let d = delta("a\nX\n", "@@ -2 +2 @@\n-b\n+Y\n");
        let e = apply("a\nb\n", &d).unwrap_err();
        assert!(e.contains("fingerprint"), "{e}");
    }

    #[test]
    fn a_delta_without_its_fingerprint_or_past_the_text_is_refused() {
        assert!(apply("a\n", "@@ -1 +1 @@\n-a\n+b\n").is_err());
        let d = delta("a\n", "@@ -5 +5 @@\n-a\n+b\n");
        assert!(apply("a\n", &d).unwrap_err().contains("outside"));
        let d = delta("a\n", "junk\n");
        assert!(apply("a\n", &d).unwrap_err().contains("no `@@"));
    }

    #[test]
    fn families_of_targets() {
        assert_eq!(
            Family::of("linux", "x86_64", "gnu"),
            Some(Family::X86_64Linux)
        );
        assert_eq!(
            Family::of("windows", "aarch64", "msvc"),
            Some(Family::Aarch64WindowsMsvc)
        );
        assert_eq!(
            Family::of("windows", "x86_64", "gnu"),
            Some(Family::X86_64WindowsGnu)
        );
        assert_eq!(Family::of("macos", "aarch64", ""), None);
        assert_eq!(find("12.4", Family::Aarch64WindowsMsvc, false), None);
        assert!(find("13.4", Family::Aarch64WindowsMsvc, true).is_some());
        assert_eq!(find("12.7", Family::X86_64Linux, false), None);
    }
}
