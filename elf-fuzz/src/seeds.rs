//! Writes the seed corpus (`elf_fuzz::seeds`) into the folder named by the
//! first argument, one file per seed.

use std::path::PathBuf;

fn main() {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: elf_seeds <folder>");
        std::process::exit(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(1);
    }
    for (name, bytes) in elf_fuzz::seeds() {
        let file = dir.join(name);
        if let Err(e) = std::fs::write(&file, bytes) {
            eprintln!("{}: {e}", file.display());
            std::process::exit(1);
        }
    }
}
