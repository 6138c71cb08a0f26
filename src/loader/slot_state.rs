//! What a slot holds: a state, or a function's address. Defined here, apart
//! from the slots (`slots.rs`, which store and read them) and the libraries
//! (`library.rs`, whose lookups produce them), so neither module imports the
//! other's definitions.

// Slot states up to LAST_STATE; anything above is the function's address.
// An address is stored only where it is at least LOWEST_ADDRESS, so no
// library's answer can be read as a state.
pub(super) const UNRESOLVED: usize = 0;
pub(super) const NO_LIBRARY: usize = 1;
pub(super) const TOO_OLD: usize = 2;
pub(super) const NOT_FOUND: usize = 3;
pub(super) const BELOW_INTRODUCTION: usize = 4;
pub(super) const LAST_STATE: usize = BELOW_INTRODUCTION;

/// The lowest address taken for a function: none is in the first page, which
/// is never mapped (Linux's `vm.mmap_min_addr`, Windows' and macOS' null
/// page); a library answering success with a lower "address" (a state's
/// value, or garbage) gets [`Unavailable::NotFound`](super::Unavailable::NotFound),
/// never a call.
pub(super) const LOWEST_ADDRESS: usize = 4096;
