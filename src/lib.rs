#![no_std]
#![doc = include_str!("../README.md")]
// docs.rs (nightly, `--cfg docsrs`): each loader item says it needs
// `dynamic-loading` (Cargo.toml, `[package.metadata.docs.rs]`). The cfgs the
// build script sets (build/config.rs, `CFGS`) are its own, not the user's:
// no badge names them (`cargo xtask ci`'s docs.rs step fails if one does).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    docsrs,
    doc(auto_cfg(hide(
        cuda_mem_sys_load_driver,
        cuda_mem_sys_load_runtime,
        cuda_mem_sys_fallback
    )))
)]

/// `|`, `&`, `|=`, `&=` for the flag newtypes of the generated bindings.
#[doc(hidden)]
#[macro_export]
macro_rules! flag_operators {
    ($($t:ty),* $(,)?) => {$(
        impl ::core::ops::BitOr for $t {
            type Output = Self;
            #[inline]
            fn bitor(self, rhs: Self) -> Self { Self(self.0 | rhs.0) }
        }
        impl ::core::ops::BitOrAssign for $t {
            #[inline]
            fn bitor_assign(&mut self, rhs: Self) { self.0 |= rhs.0; }
        }
        impl ::core::ops::BitAnd for $t {
            type Output = Self;
            #[inline]
            fn bitand(self, rhs: Self) -> Self { Self(self.0 & rhs.0) }
        }
        impl ::core::ops::BitAndAssign for $t {
            #[inline]
            fn bitand_assign(&mut self, rhs: Self) { self.0 &= rhs.0; }
        }
    )*};
}

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    clippy::all
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));
}
pub use generated::*;

mod build_info;
pub use build_info::{Bindings, Build, Reach, BUILD};

#[cfg(feature = "dynamic-loading")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
pub mod loader;
