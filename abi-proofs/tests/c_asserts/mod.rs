//! Shared by the checks whose C half is a file of `_Static_assert`s that the
//! C compiler judges against the headers (`abi_field_types`,
//! `abi_constants`): the file includes `lc_prelude.h` (the headers) and
//! `lc_names.h` (which names and tags they declare, written here from the
//! preprocessed headers as for the layout check), and is compiled with
//! `-fsyntax-only` and no error limit. Each failed assertion's message
//! carries a marker and the item's name; any other compiler error fails the
//! check (a file that does not compile proves nothing).
#![allow(dead_code)]

use super::layout_support;
use std::path::PathBuf;
use std::process::Command;

/// What the compiler said of one file.
pub struct Verdict {
    /// The text after the marker of every failed assertion, in order.
    pub failed: Vec<String>,
    /// The compiler's first line of `--version`.
    pub compiler: String,
}

/// `Err(reason)`: nothing to compile against here (reported ignored).
pub fn include_dirs() -> Result<Vec<PathBuf>, String> {
    let dirs = test_support::include_dirs()?;
    if let Some(missing) = dirs.iter().find(|d| !d.is_dir()) {
        return Err(format!(
            "the headers the bindings were generated from are not on this machine ({})",
            missing.display()
        ));
    }
    Ok(dirs)
}

/// Compiles `source` (named `name` in a scratch folder) against the headers
/// and returns the failed assertions' messages after `marker`.
pub fn judge(
    dirs: &[PathBuf],
    name: &str,
    prelude: &str,
    source: &str,
    marker: &str,
) -> Result<Verdict, String> {
    let tool = layout_support::compiler();
    let work = test_support::scratch_under_target(name);
    let dir = work.path();
    let write = |file: &str, text: &str| {
        std::fs::write(dir.join(file), text).map_err(|e| format!("writing {file}: {e}"))
    };
    write("lc_prelude.h", prelude)?;
    write("lc_names.h", "")?;
    let c_file = format!("{name}.c");
    write(&c_file, source)?;
    let command = || {
        let mut cmd = tool.to_command();
        cmd.arg(format!("-I{}", dir.display()));
        for d in dirs {
            cmd.arg(format!("-I{}", d.display()));
        }
        cmd
    };
    let mut pp = command();
    pp.arg("-E").arg(dir.join("lc_prelude.h"));
    let out = run(&mut pp, "preprocessing the headers")?;
    if !out.status.success() {
        return Err(format!(
            "preprocessing the headers failed ({}): {pp:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    write(
        "lc_names.h",
        &layout_support::names_header(&String::from_utf8_lossy(&out.stdout)),
    )?;
    // No error limit, no source lines echoed: gcc's flags, or clang's.
    let flags = if tool.is_like_clang() {
        ["-ferror-limit=0", "-fno-caret-diagnostics"]
    } else {
        ["-fmax-errors=0", "-fno-diagnostics-show-caret"]
    };
    let mut cc = command();
    cc.args(["-fsyntax-only", "-std=gnu11", "-w"])
        .args(flags)
        .arg(dir.join(&c_file));
    let out = run(&mut cc, "compiling the asserts")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut failed = vec![];
    let mut other = vec![];
    for line in stderr.lines().filter(|l| l.contains("error: ")) {
        match line.rsplit_once(marker) {
            Some((_, m)) if line.contains("static assert") => {
                failed.push(m.trim().trim_end_matches('"').to_string())
            }
            _ => other.push(line),
        }
    }
    if !other.is_empty() || (!out.status.success() && failed.is_empty()) {
        let head: Vec<&str> = other.iter().take(30).copied().collect();
        return Err(format!(
            "the C compiler did not compile {c_file} ({}), errors other than the asserts':\n{}",
            out.status,
            if head.is_empty() { stderr.as_ref() } else { "" }.to_string() + &head.join("\n")
        ));
    }
    Ok(Verdict {
        failed,
        compiler: layout_support::compiler_version(&tool),
    })
}

/// Runs the C compiler (a program of the build machine, see
/// [`test_support::host_output`]).
fn run(cmd: &mut Command, what: &str) -> Result<std::process::Output, String> {
    test_support::host_output(cmd).map_err(|e| format!("{what}: running {cmd:?}: {e}"))
}
