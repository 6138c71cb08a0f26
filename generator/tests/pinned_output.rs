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
        let out = tools::committed_output(&dirs, &crate_dir(), work.path(), ptds)?;
        let files = tools::files_of(&out, &dirs, &crate_dir(), ptds)?;
        compare(&files, |p| std::fs::read_to_string(p).unwrap_or_default())?;
        // What the build script writes to OUT_DIR: the same tree as tokens.
        token_text_faults(&out.tokens(), &out.header, &files[0].1)
            .map_err(|e| format!("Output::tokens (ptds {ptds}): {e}"))?;
    }
    Ok(Completion::Completed)
}

/// Why `tokens` (the build script's text) is not `pretty`'s tree (the
/// committed text) written one item, attribute, field or statement a line
/// (`Output::tokens`): it must start with the header, read back to the same
/// tree, end with a line break, hold no line with space at either end, and
/// leave nothing long on one line but a doc attribute (one string literal).
fn token_text_faults(tokens: &str, header: &str, pretty: &str) -> Result<(), String> {
    let body = tokens
        .strip_prefix(header)
        .ok_or("the text does not start with the header comment")?;
    let file = syn::parse_file(body).map_err(|e| format!("it does not parse: {e}"))?;
    let again = header.to_string() + &prettyplease::unparse(&file);
    if let Some(diff) = first_difference(&again, pretty) {
        return Err(format!("it reads back to another tree: {diff}"));
    }
    if !body.ends_with('\n') {
        return Err("it does not end with a line break".into());
    }
    let count = body.lines().count();
    for (n, line) in body.lines().enumerate() {
        if line.is_empty() && n + 1 < count {
            return Err(format!("line {} is empty", n + 1 + header.lines().count()));
        }
        let n = n + 1 + header.lines().count();
        if line.trim() != line {
            return Err(format!("line {n} has space at an end: {line:?}"));
        }
        // An attribute, and a brace group, ends its line.
        // `# [` as tokens space it (`#[` as a person would).
        let attribute = line.strip_prefix("# [").or_else(|| line.strip_prefix("#["));
        if attribute.is_some() && !line.ends_with(']') {
            return Err(format!(
                "line {n} holds more than its attribute: {line:.120}"
            ));
        }
        if line.starts_with('}') && !line.chars().all(|c| "}]) ,;".contains(c)) {
            return Err(format!("line {n} holds more after its brace: {line:.120}"));
        }
        // A parenthesised group is never broken; a brace group that holds
        // anything starts a line of its own.
        let code = outside_strings(line);
        if code.matches('(').count() != code.matches(')').count() {
            return Err(format!(
                "line {n} breaks a parenthesised group: {line:.120}"
            ));
        }
        if code
            .match_indices('{')
            .any(|(at, _)| !matches!(code[at + 1..].trim_start().chars().next(), None | Some('}')))
        {
            return Err(format!(
                "line {n} goes on after an opening brace: {line:.120}"
            ));
        }
        let doc = attribute.is_some_and(|a| a.starts_with("doc = \"")) && line.ends_with("\"]");
        if line.len() > LONG && !doc {
            let start: String = line.chars().take(120).collect();
            return Err(format!(
                "line {n} holds {} bytes and is no doc attribute: {start}...",
                line.len()
            ));
        }
    }
    Ok(())
}

/// What a user's build writes (`Docs::Headers`: NVIDIA's comments from the
/// headers, turned into Markdown) is the committed tree but for its doc
/// attributes, and none of its docs is left in Doxygen. The text is read in
/// memory only: the project keeps none of NVIDIA's.
fn the_headers_own_comments_change_only_the_docs() -> Result<Completion, Failed> {
    let dirs = match pinned_dirs() {
        Ok(d) => d,
        Err(why) => return Ok(Completion::ignored_with(why)),
    };
    let work = test_support::scratch("pinned-output-docs");
    let links = tools::committed_output(&dirs, &crate_dir(), work.path(), false)?;
    let headers = tools::output_with(
        &dirs,
        &crate_dir(),
        work.path(),
        false,
        codegen::Docs::Headers,
    )?;
    let (links, headers) = (links.tokens(), headers.tokens());
    if let Some(diff) = first_difference(&without_docs(&headers), &without_docs(&links)) {
        return Err(format!("the two documentations' trees differ beyond docs: {diff}").into());
    }
    doxygen_left(&headers, HEADERS_LINKS).map_err(|e| format!("Docs::Headers: {e}"))?;
    // Without the header comment, which names the folders read.
    let body: String = headers.lines().filter(|l| !l.starts_with("//")).collect();
    let print = generator::release::fnv1a64(body.as_bytes());
    if print != HEADERS_PRINT {
        return Err(format!(
            "a user's build from the pinned headers is no longer what it was (FNV-1a 64 \
             {print:#018x}, not {HEADERS_PRINT:#018x}): its docs changed. If the change is \
             meant, set HEADERS_PRINT in generator/tests/pinned_output.rs to {print:#018x}"
        )
        .into());
    }
    Ok(Completion::Completed)
}

/// The fingerprint (FNV-1a 64) of a user's build's token text from the
/// pinned headers, `Docs::Headers`, per-thread default stream off: the
/// project keeps none of NVIDIA's text, so what the converter makes of it
/// is pinned by this number (the committed files pin `Docs::Links`).
const HEADERS_PRINT: u64 = 0x1ee1_c6c1_60fe_f104;

/// The token text (one attribute a line) without its doc attributes and
/// header comment, and with the loader's macro calls' strings (each
/// function's summary line) emptied.
fn without_docs(tokens: &str) -> String {
    tokens
        .lines()
        .filter(|l| {
            !(l.starts_with("//") || l.starts_with("# [doc = ") || l.starts_with("# ! [doc = "))
        })
        .map(|l| {
            if l.starts_with("crate :: loader :: ") {
                outside_strings(l)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// At least this many intra-doc links in a user's build from the pinned
/// headers: CUDA 13.0's comments make 14,960; with the names of the
/// bindings' own items unknown (only the renamed functions'), 3,727.
const HEADERS_LINKS: usize = 10_000;

/// Doxygen that `docs::convert` should have turned into Markdown, or that
/// it should have dropped, named with its line.
fn doxygen_left(tokens: &str, min_links: usize) -> Result<(), String> {
    const DOXYGEN: [&str; 7] = [
        "\\\\brief ",
        "\\\\param",
        "\\\\return",
        "\\\\sa ",
        "\\\\notefnerr",
        "___MANBRIEF___",
        "\\\\defgroup",
    ];
    for (n, line) in tokens.lines().enumerate() {
        // A command the converter escaped (Markdown's `\\` before it: four
        // backslashes in the literal) is shown as text, not left as Doxygen.
        let raw = |d: &str| {
            line.match_indices(d)
                .any(|(at, _)| !line[..at].ends_with("\\\\"))
        };
        if let Some(d) = DOXYGEN.iter().find(|d| raw(d)) {
            return Err(format!("line {} holds Doxygen ({d}): {line:.160}", n + 1));
        }
    }
    if !tokens.contains("# Returns") {
        return Err("no `# Returns` heading: no \\returns was converted".into());
    }
    let links = tokens.matches("](crate::").count();
    if links < min_links {
        return Err(format!(
            "{links} intra-doc links, fewer than {min_links}: `::name`s of the bindings' items \
             were not linked"
        ));
    }
    Ok(())
}

/// The wrong twins: a doc left in Doxygen, a tree that differs beyond its
/// docs, and docs with nothing converted.
fn doxygen_and_trees_that_differ_are_caught() -> Result<Completion, Failed> {
    let converted =
        "# [doc = \" Maps [`f`](crate::f).\\n # Returns\\n CUDA_SUCCESS\"]\npub fn f () ;";
    if doxygen_left(&converted.replace("(crate::f)", ""), 1).is_ok() {
        return Err("docs with no intra-doc link were not caught".into());
    }
    doxygen_left(converted, 1).map_err(|e| format!("the right text: {e}"))?;
    let raw = "# [doc = \" \\\\brief Maps.\\n # Returns\"]\npub fn f () ;";
    if doxygen_left(raw, 1).is_ok() {
        return Err("a \\brief left in a doc was not caught".into());
    }
    let escaped = "# [doc = \" a \\\\\\\\param b\\n # Returns [`f`](crate::f)\"]\npub fn f () ;";
    doxygen_left(escaped, 1).map_err(|e| format!("an escaped command taken for Doxygen: {e}"))?;
    if doxygen_left("# [doc = \" Maps.\"]\npub fn f () ;", 1).is_ok() {
        return Err("docs with no converted heading were not caught".into());
    }
    let a = "// header a\n# [doc = \" a\"]\n# ! [doc = \" m\"]\npub fn f () ;";
    let b = "// header b\n# [doc = \" b\"]\npub fn f () ;";
    if without_docs(a) != without_docs(b) {
        return Err("docs alone were taken for a difference".into());
    }
    if without_docs(a) == without_docs(&b.replace("f ()", "g ()")) {
        return Err("another item was not taken for a difference".into());
    }
    let call = |doc: &str, f: &str| format!("crate :: loader :: call ! (driver 1 \"{doc}\" {f}) ;");
    if without_docs(&call("Maps", "f")) != without_docs(&call("Links", "f")) {
        return Err("a loader call's summary was taken for a difference".into());
    }
    if without_docs(&call("Maps", "f")) == without_docs(&call("Maps", "g")) {
        return Err("a loader call of another function was not taken for a difference".into());
    }
    Ok(Completion::Completed)
}

/// `line` with each string literal's contents taken out (`"..."` becomes
/// `""`, escapes honoured).
fn outside_strings(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '"' {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => {
                        out.push('"');
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// Longer than any line `tokens` writes that is no doc attribute: in CUDA
/// 13.0's bindings the longest is a macro call naming every flag enum
/// (`flag_operators!`, 1,238 bytes; a parenthesised group is never broken),
/// while a text with no line breaks is one line of megabytes.
const LONG: usize = 2000;

/// The wrong twins of the token text's check: another tree, one line for
/// two items, space at a line's end, no header.
fn a_token_text_of_another_layout_is_caught() -> Result<Completion, Failed> {
    let header = "// @generated\n";
    let pretty = "// @generated\npub const A: u32 = 1;\npub const B: u32 = 2;\n";
    let good = "// @generated\npub const A : u32 = 1 ;\npub const B : u32 = 2 ;\n";
    token_text_faults(good, header, pretty).map_err(|e| format!("the right text: {e}"))?;
    // A long doc attribute, spelt as tokens space it, is one line.
    let text = "x".repeat(LONG * 2);
    let long_doc = format!("{header}# [doc = \"{text}\"]\npub const A : u32 = 1 ;\n");
    let long_doc_pretty = format!("{header}///{text}\npub const A: u32 = 1;\n");
    token_text_faults(&long_doc, header, &long_doc_pretty)
        .map_err(|e| format!("a long doc attribute: {e}"))?;
    // Parentheses and braces inside a string literal (a doc line) are text.
    let quoted = format!("{header}pub const S : & str = \"(\\\" {{ x\" ;\n");
    let quoted_pretty = format!("{header}pub const S: &str = \"(\\\" {{ x\";\n");
    token_text_faults(&quoted, header, &quoted_pretty)
        .map_err(|e| format!("a string's brackets taken for code: {e}"))?;
    let long_line = format!(
        "{header}pub const A : [u32; 1] = [{}1] ;\n",
        "1, ".repeat(LONG / 3)
    );
    let long_pretty = header.to_string()
        + &prettyplease::unparse(&syn::parse_file(&long_line[header.len()..]).unwrap());
    let cases = [
        (
            "another tree",
            good.replace("2 ;", "3 ;"),
            pretty.to_string(),
            "another tree",
        ),
        (
            "no header",
            good.replace("// @generated\n", ""),
            pretty.into(),
            "header",
        ),
        (
            "space at an end",
            good.replace("1 ;", "1 ; "),
            pretty.into(),
            "space at an end",
        ),
        (
            "no last break",
            good.trim_end().to_string(),
            pretty.into(),
            "line break",
        ),
        ("a long line", long_line, long_pretty, "no doc attribute"),
        (
            "an item after an attribute",
            good.replace("pub const B", "# [doc = \"b\"] pub const B"),
            pretty.replace("pub const B", "///b\npub const B"),
            "more than its attribute",
        ),
        (
            "an empty line",
            good.replace("1 ;\n", "1 ;\n\n"),
            pretty.into(),
            "is empty",
        ),
        (
            "a parenthesised group broken",
            format!("{header}pub const A : u32 = f (\n1) ;\n"),
            format!("{header}pub const A: u32 = f(1);\n"),
            "breaks a parenthesised group",
        ),
        (
            "a field after an opening brace",
            format!("{header}pub struct S {{ pub a : u32 ,\n}}\n"),
            format!("{header}pub struct S {{\n    pub a: u32,\n}}\n"),
            "after an opening brace",
        ),
        (
            "an item after a brace",
            format!("{header}pub struct S {{\n}} pub const A : u32 = 1 ;\n"),
            format!("{header}pub struct S {{}}\npub const A: u32 = 1;\n"),
            "more after its brace",
        ),
    ];
    for (what, text, pretty, said) in cases {
        match token_text_faults(&text, header, &pretty) {
            Err(e) if e.contains(said) => {}
            other => return Err(format!("{what}: not caught as {said:?}: {other:?}").into()),
        }
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
        a_token_text_of_another_layout_is_caught,
        the_headers_own_comments_change_only_the_docs,
        doxygen_and_trees_that_differ_are_caught,
    ]);
}
