//! The inputs of the ABI checks by type and by presence, from the bindings
//! the crate compiles and from a copy with bugs planted (each check's wrong
//! twin, which it must name):
//!
//! - `field_types.c`, `field_types_wrong.c`, `field_types_planted.txt`:
//!   every field's type for the C compiler (`tests/abi_field_types.rs`);
//! - `constants.rs`, `constants_planted.rs`, `constants_planted_table.rs`,
//!   `constants_planted.txt`: every constant's value and type as rustc has
//!   it, and the same over a copy with bugs planted (`tests/abi_constants.rs`).

use crate::layout_check::{constant_table, field_types};
use crate::write_if_changed;
use std::path::Path;

pub fn write(dir: &Path, file: &syn::File) -> Result<(), String> {
    let fields = field_types::generate(file);
    write_if_changed(&dir.join("field_types.c"), &fields.c)?;
    let mut wrong = file.clone();
    let planted = field_types::plant(&mut wrong)?;
    write_if_changed(
        &dir.join("field_types_wrong.c"),
        &field_types::generate(&wrong).c,
    )?;
    let mut list = format!("checked {}\n", fields.checked);
    for (key, what) in planted {
        list.push_str(&format!("{key}\t{what}\n"));
    }
    write_if_changed(&dir.join("field_types_planted.txt"), &list)?;

    write_if_changed(
        &dir.join("constants.rs"),
        &constant_table::generate(file, "::cuda_mem_sys"),
    )?;
    let (copy, planted) = constant_table::planted_copy(file)?;
    write_if_changed(
        &dir.join("constants_planted.rs"),
        &quote::ToTokens::to_token_stream(&copy).to_string(),
    )?;
    write_if_changed(
        &dir.join("constants_planted_table.rs"),
        &constant_table::generate(&copy, "crate::planted"),
    )?;
    let list: String = planted
        .iter()
        .map(|(name, what)| format!("{name}\t{what}\n"))
        .collect();
    write_if_changed(&dir.join("constants_planted.txt"), &list)
}
