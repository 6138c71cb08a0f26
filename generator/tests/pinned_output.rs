//! The generator makes, from the pinned release's headers, exactly the
//! committed fallback files (`src/generated/`: the bindings, their inputs,
//! their symbols), byte for byte, in both stream modes: what `cargo xtask
//! regen` writes (`tools::committed_files`, the one function both call).
//!
//! abi-proofs' `fallback` proves the same of the bindings the build script
//! compiles, as tokens; this one needs no nested build, so a change to
//! `build/codegen/` that alters any byte of the output fails within seconds
//! (`cargo xtask mutants` runs it first for `build/`).

use generator::{codegen, tools};
use libtest_mimic::{Completion, Failed};
use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The first line where `a` and `b` differ (1-based), both lines shown.
fn first_difference(a: &str, b: &str) -> Option<String> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => {}
            (x, y) => {
                return Some(format!(
                    "line {n}: generated {:?}, committed {:?}",
                    x.unwrap_or("(end)"),
                    y.unwrap_or("(end)")
                ))
            }
        }
    }
    unreachable!()
}

/// Where the differences are, or `Ok` where every file is as committed.
fn compare(files: &[(PathBuf, String)], read: impl Fn(&Path) -> String) -> Result<(), String> {
    let mut wrong = vec![];
    for (path, text) in files {
        let committed = read(path);
        if *text != committed {
            let diff = first_difference(text, &committed)
                .unwrap_or_else(|| "they differ only in line endings".into());
            wrong.push(format!("{}: {diff}", path.display()));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the generator's output differs from the committed files (run `cargo xtask regen` \
             if the change is meant):\n{}",
            wrong.join("\n")
        ))
    }
}

/// The pinned release's header folders, or why these are other headers.
fn pinned_dirs() -> Result<Vec<PathBuf>, String> {
    let dirs = test_support::include_dirs()?;
    let pinned = format!("cuda-headers/{}/", codegen::PINNED_RELEASE);
    if !dirs.iter().all(|d| d.to_string_lossy().contains(&pinned)) {
        return Err(format!(
            "built against {dirs:?}, not the pinned headers of `cargo xtask headers {}`",
            codegen::PINNED_RELEASE
        ));
    }
    Ok(dirs)
}

fn the_generator_makes_the_committed_files_from_the_pinned_headers() -> Result<Completion, Failed> {
    let dirs = match pinned_dirs() {
        Ok(d) => d,
        Err(why) => return Ok(Completion::ignored_with(why)),
    };
    let work = test_support::scratch("pinned-output");
    for ptds in [false, true] {
        let files = tools::committed_files(&dirs, &crate_dir(), work.path(), ptds)?;
        compare(&files, |p| std::fs::read_to_string(p).unwrap_or_default())?;
    }
    Ok(Completion::Completed)
}

/// The wrong twin: one token changed in a committed file, or a line more,
/// is named with its line.
fn a_changed_committed_file_is_caught() -> Result<Completion, Failed> {
    let files = [(
        PathBuf::from("cuda-13.0.rs"),
        "pub const A: u32 = 1;\npub const B: u32 = 2;\n".to_string(),
    )];
    compare(&files, |_| files[0].1.clone())?;
    let changed = compare(&files, |_| files[0].1.replace("2;", "3;"));
    match changed {
        Err(e) if e.contains("line 2:") && e.contains("cuda-13.0.rs") => {}
        other => return Err(format!("a changed token was not named: {other:?}").into()),
    }
    let longer = compare(&files, |_| files[0].1.clone() + "pub const C: u32 = 3;\n");
    match longer {
        Err(e) if e.contains("line 3:") && e.contains("(end)") => {}
        other => return Err(format!("a line more was not named: {other:?}").into()),
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        the_generator_makes_the_committed_files_from_the_pinned_headers,
        a_changed_committed_file_is_caught,
    ]);
}
