//! Every struct and union field's type against C's: the build script
//! (`abi-proofs/build/layout_check/field_types.rs`) spells each field's Rust
//! type in C and asserts `__builtin_types_compatible_p(__typeof__(((T *)0)->field), C)`,
//! and, where the field is an enum or a plain `int`/`unsigned`, which of the
//! two; the C compiler judges against the headers the bindings were made
//! from. Width, signedness, pointer or integer or floating point, an array's
//! element and length, a struct's tag and which enum: what `abi_layout`'s
//! sizes and offsets cannot see (`c_ushort` for `short`, one enum newtype for
//! another).
//!
//! The wrong twin: the same generator over a copy of the bindings with bugs
//! planted (`field_types::plant`) must fail on exactly those fields, each
//! named.

mod c_asserts;
mod layout_support;

use libtest_mimic::{Completion, Failed};
use std::collections::BTreeSet;

const ABI_DIR: &str = concat!(env!("OUT_DIR"), "/abi");
const MARKER: &str = "ABI-FIELD ";

/// The keys of the failed asserts of `file`, each with its messages.
fn failing(file: &str) -> Result<Result<(Vec<String>, String), String>, Failed> {
    let dirs = match c_asserts::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    let source = std::fs::read_to_string(format!("{ABI_DIR}/{file}"))
        .map_err(|e| format!("reading {file}: {e}"))?;
    let name = file.trim_end_matches(".c");
    let verdict = c_asserts::judge(
        &dirs,
        &format!("abi_{name}"),
        include_str!("../../wrapper.h"),
        &source,
        MARKER,
    )?;
    Ok(Ok((verdict.failed, verdict.compiler)))
}

fn key(message: &str) -> &str {
    message.split_once(':').map_or(message, |(k, _)| k)
}

fn every_field_has_its_c_type() -> Result<Completion, Failed> {
    let (failed, compiler) = match failing("field_types.c")? {
        Ok(f) => f,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let summary = std::fs::read_to_string(format!("{ABI_DIR}/field_types_planted.txt")).unwrap();
    let checked: usize = summary
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("checked "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    println!(
        "field types: {checked} fields checked by {compiler}, {} mismatched",
        failed.len()
    );
    if !failed.is_empty() {
        return Err(format!(
            "{} fields whose Rust type differs from C's:\n  {}",
            failed.len(),
            failed.join("\n  ")
        )
        .into());
    }
    if checked < 300 {
        return Err(format!("only {checked} fields checked").into());
    }
    Ok(Completion::Completed)
}

/// The planted bugs (a same-size signedness change, another enum newtype, an
/// enum's integer type, an integer for a pointer, an enum newtype on a plain
/// integer: only the "C declares a plain integer" assert names that one) are
/// each named, and nothing else.
fn each_planted_field_type_is_named() -> Result<Completion, Failed> {
    let (failed, _) = match failing("field_types_wrong.c")? {
        Ok(f) => f,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let summary = std::fs::read_to_string(format!("{ABI_DIR}/field_types_planted.txt")).unwrap();
    let planted: BTreeSet<&str> = summary
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once('\t').map(|(k, _)| k))
        .collect();
    let named: BTreeSet<&str> = failed.iter().map(|m| key(m)).collect();
    println!("planted: {planted:?}\nnamed:\n  {}", failed.join("\n  "));
    if named != planted {
        return Err(format!(
            "the check named {named:?} for the planted {planted:?}:\n  {}",
            failed.join("\n  ")
        )
        .into());
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_field_has_its_c_type,
        each_planted_field_type_is_named,
    ]);
}
