//! The inputs of the ABI checks by type and by presence, from the bindings
//! the crate compiles and from a copy with bugs planted (each check's wrong
//! twin, which it must name):
//!
//! - `field_types.c`, `field_types_wrong.c`, `field_types_planted.txt`:
//!   every field's type for the C compiler (`tests/abi_field_types.rs`).

use crate::layout_check::field_types;
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
    write_if_changed(&dir.join("field_types_planted.txt"), &list)
}
