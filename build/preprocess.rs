//! Questions answered by the C preprocessor (through `cc`), never by reading
//! header text with patterns: the release, the macros, what a name expands to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The C preprocessor as configured for one header set.
pub struct Preprocessor<'a> {
    pub cc: cc::Build,
    pub include_dirs: &'a [PathBuf],
    pub defines: Vec<&'static str>,
    pub work_dir: &'a Path,
}

/// One `#define` seen while preprocessing `wrapper.h`.
#[derive(Debug, Clone)]
pub struct MacroDef {
    pub name: String,
    pub body: String,
    pub function_like: bool,
    pub file: PathBuf,
}

impl Preprocessor<'_> {
    fn run(&self, file_name: &str, source: &str, flags: &[&str]) -> Result<String, String> {
        let path = self.work_dir.join(file_name);
        std::fs::write(&path, source).map_err(|e| format!("writing {}: {e}", path.display()))?;
        let mut b = self.cc.clone();
        b.file(&path)
            .includes(self.include_dirs)
            .include(self.work_dir);
        for d in &self.defines {
            b.define(d, None);
        }
        for f in flags {
            b.flag(f);
        }
        let out = b
            .try_expand()
            .map_err(|e| format!("the C preprocessor failed on {}: {e}", path.display()))?;
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    /// `source` preprocessed (no extra flags).
    pub fn preprocess(&self, file_name: &str, source: &str) -> Result<String, String> {
        self.run(file_name, source, &[])
    }

    /// `CUDA_VERSION` as the preprocessor sees it after `#include <cuda.h>`:
    /// its last definition among `macros` where a [`Preprocessor::macros`]
    /// run gave them, else from a run of its own over `cuda.h`. The one place
    /// the headers' release is read (the build script's choice, the
    /// generator); [`super::release::check_release`] then refuses those too old.
    pub fn cuda_version(&self, macros: Option<&[MacroDef]>) -> Result<u32, String> {
        let number = match macros {
            Some(macros) => macros
                .iter()
                .rev()
                .find(|m| m.name == "CUDA_VERSION" && !m.function_like)
                .and_then(|m| m.body.trim().parse().ok()),
            None => {
                let out = self.run(
                    "cuda_mem_sys_version.c",
                    "#include <cuda.h>\ncuda_mem_sys_version = CUDA_VERSION;\n",
                    &[],
                )?;
                out.lines()
                    .rev()
                    .find_map(|l| l.trim().strip_prefix("cuda_mem_sys_version ="))
                    .and_then(|v| v.trim().trim_end_matches(';').trim().parse().ok())
            }
        };
        number.ok_or_else(|| "cuda.h does not define CUDA_VERSION as a number".to_string())
    }

    /// Every `#define` of `wrapper.h` (after conditionals are resolved), with
    /// the header it stands in, plus every header file that was read.
    pub fn macros(&self, wrapper: &str) -> Result<(Vec<MacroDef>, Vec<PathBuf>, String), String> {
        let out = self.run("cuda_mem_sys_macros.c", wrapper, &["-dD"])?;
        let mut file = PathBuf::new();
        let mut files = vec![];
        let mut defs = vec![];
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix("# ") {
                if let Some(name) = rest.split('"').nth(1) {
                    file = PathBuf::from(name);
                    if !files.contains(&file) {
                        files.push(file.clone());
                    }
                }
            } else if let Some(name) = line.strip_prefix("#undef ") {
                // A macro the headers undefine again is not there for C either.
                defs.retain(|d: &MacroDef| d.name != name.trim());
            } else if let Some(def) = line.strip_prefix("#define ") {
                let name_end = def
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(def.len());
                let (name, rest) = def.split_at(name_end);
                defs.push(MacroDef {
                    name: name.to_string(),
                    function_like: rest.starts_with('('),
                    body: rest.trim().to_string(),
                    file: file.clone(),
                });
            }
        }
        Ok((defs, files, out))
    }

    /// What each name expands to after `wrapper.h`: the left side is a string
    /// literal, so only the right side is expanded (`"cuMemAdvise" cuMemAdvise_v2`).
    pub fn expand(
        &self,
        wrapper: &str,
        names: &[&str],
    ) -> Result<BTreeMap<String, String>, String> {
        let mut src = format!("{wrapper}\ncuda_mem_sys_expansions_begin\n");
        for n in names {
            src.push_str(&format!("\"{n}\" {n}\n"));
        }
        let out = self.run("cuda_mem_sys_expand.c", &src, &[])?;
        let body = out
            .split("cuda_mem_sys_expansions_begin")
            .nth(1)
            .ok_or("preprocessor output lost its marker")?;
        let mut map = BTreeMap::new();
        for line in body.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix('"') {
                if let Some((name, expansion)) = rest.split_once('"') {
                    map.insert(name.to_string(), expansion.trim().to_string());
                }
            }
        }
        Ok(map)
    }

    /// The messages of the `_Static_assert`s of `source` (after `wrapper`)
    /// that fail when the C compiler checks it. Each assert of `source` is
    /// `_Static_assert(<condition>, "<message>");` on a line of its own, its
    /// message without `"` or `: `.
    ///
    /// Read from gcc's diagnostics (`static assertion failed: "<message>"`)
    /// or clang's (`static assertion failed due to requirement '...':
    /// <message>`), with no error limit (gcc's `-fmax-errors=0`, clang's
    /// `-ferror-limit=0`: clang stops at 20 by default). The compiler's exit
    /// status is checked: where it fails, every error must be one of these
    /// asserts, and anything else (the headers do not compile, a compiler
    /// that is neither) is an error, never "nothing failed".
    pub fn failing_asserts(&self, wrapper: &str, source: &str) -> Result<Vec<String>, String> {
        self.failing_asserts_in("cuda_mem_sys_asserts.c", wrapper, source)
    }

    /// [`Preprocessor::failing_asserts`], its source in the work folder's
    /// `file_name` (checks that run side by side each have their own).
    pub fn failing_asserts_in(
        &self,
        file_name: &str,
        wrapper: &str,
        source: &str,
    ) -> Result<Vec<String>, String> {
        let path = self.work_dir.join(file_name);
        std::fs::write(&path, format!("{wrapper}\n{source}")).map_err(|e| e.to_string())?;
        let mut b = self.cc.clone();
        b.includes(self.include_dirs).include(self.work_dir);
        for d in &self.defines {
            b.define(d, None);
        }
        let tool = b.try_get_compiler().map_err(|e| e.to_string())?;
        let no_limit = if tool.is_like_clang() {
            "-ferror-limit=0"
        } else {
            "-fmax-errors=0"
        };
        let out = tool
            .to_command()
            .args(["-fsyntax-only", no_limit])
            .arg(&path)
            // The diagnostics in English, as they are read.
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| format!("running the C compiler {}: {e}", tool.path().display()))?;
        if out.status.success() {
            return Ok(vec![]);
        }
        let messages: std::collections::BTreeSet<&str> =
            source.lines().filter_map(assert_message).collect();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut failing = vec![];
        let mut other = vec![];
        for line in stderr.lines() {
            if !(line.contains("error:") || line.contains("error :")) {
                continue;
            }
            match failed_assert_message(line).filter(|m| messages.contains(m)) {
                Some(m) => failing.push(m.to_string()),
                None => other.push(line),
            }
        }
        if failing.is_empty() || !other.is_empty() {
            return Err(format!(
                "the type check of the loader table ({}) failed with errors other than its \
                 static assertions ({}, {}; the check needs gcc or clang):\n{}",
                path.display(),
                out.status,
                tool.path().display(),
                if other.is_empty() {
                    stderr.to_string()
                } else {
                    other.join("\n")
                }
            ));
        }
        Ok(failing)
    }

    /// `wrapper.h` preprocessed with its comments kept (for the doxygen groups).
    pub fn with_comments(&self, wrapper: &str) -> Result<String, String> {
        self.run("cuda_mem_sys_comments.c", wrapper, &["-C"])
    }
}

/// The message of a line `_Static_assert(<condition>, "<message>");`.
fn assert_message(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("_Static_assert(")?;
    let rest = rest.strip_suffix("\");")?;
    Some(&rest[rest.rfind('"')? + 1..])
}

/// The message of a failed static assertion in a compiler's diagnostic line:
/// gcc's `error: static assertion failed: "<message>"`, clang's
/// `error: static assertion failed due to requirement '<condition>': <message>`
/// (or, without a condition to show, `static assertion failed: <message>`).
fn failed_assert_message(line: &str) -> Option<&str> {
    let rest = line.split_once("static assertion failed")?.1;
    if let Some(quoted) = rest.strip_prefix(": \"") {
        return quoted.rsplit_once('"').map(|(m, _)| m);
    }
    rest.rsplit_once(": ").map(|(_, m)| m.trim())
}
