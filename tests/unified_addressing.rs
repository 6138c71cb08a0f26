//! Device tests (placeholder until filled in).
mod common;

fn main() {
    common::main(vec![], &[]);
}
