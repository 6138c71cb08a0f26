//! What a slot holds: a state, or a function's address. Defined here, apart
//! from the slots (`slots.rs`, which store and read them) and the libraries
//! (`library.rs`, whose lookups produce them), so neither module imports the
//! other's definitions.

use core::ffi::c_void;

/// The state `n` as a slot holds it: a pointer with that address and no
/// provenance, never dereferenced or called, only compared by address (what
/// `core::ptr::without_provenance_mut(n)` makes, written so for the crate's
/// `rust-version`, which predates it).
const fn state(n: usize) -> *mut c_void {
    core::ptr::null_mut::<c_void>().wrapping_byte_add(n)
}

// Slot states up to LAST_STATE; anything above is the function's address, the
// pointer the library gave (its provenance kept, never made from an integer).
// An address is stored only where it is at least LOWEST_ADDRESS, so no
// library's answer can be read as a state. Pointers compare by address.
pub(super) const UNRESOLVED: *mut c_void = state(0);
pub(super) const NO_LIBRARY: *mut c_void = state(1);
pub(super) const TOO_OLD: *mut c_void = state(2);
pub(super) const NOT_FOUND: *mut c_void = state(3);
pub(super) const BELOW_INTRODUCTION: *mut c_void = state(4);
pub(super) const LAST_STATE: *mut c_void = BELOW_INTRODUCTION;

/// The lowest address taken for a function: none is in the first page, which
/// is never mapped (Linux's `vm.mmap_min_addr`, Windows' and macOS' null
/// page); a library answering success with a lower "address" (a state's
/// value, or garbage) gets [`Unavailable::NotFound`](super::Unavailable::NotFound),
/// never a call.
pub(super) const LOWEST_ADDRESS: usize = 4096;
