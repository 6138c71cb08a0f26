// The Rust side of tests/abi_fixture/bad.h, in bindgen's style, with the
// mistakes a generator that parsed the header differently from the C compiler
// would make (marked WRONG). tests/abi_bad_input.rs proves the layout check
// names exactly these.

/// WRONG: the header packs this struct (`#pragma pack(1)`); no `packed` here.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct lc_packed_st {
    pub tag: ::core::ffi::c_char,
    pub value: ::core::ffi::c_int,
}
pub type lc_packed = lc_packed_st;

/// WRONG: `long` read as 32 bits (LLP64), where the C compiler has 64 (LP64).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct lc_long_st {
    pub count: i32,
    pub flags: ::core::ffi::c_int,
}
pub type lc_long = lc_long_st;

#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct lc_bits_st {
    pub _bitfield_align_1: [u32; 0],
    pub _bitfield_1: [u8; 1],
    pub __bindgen_padding_0: [u8; 3],
    pub rest: ::core::ffi::c_uint,
}
impl lc_bits_st {
    /// Bits 0..3: right.
    pub fn low(&self) -> ::core::ffi::c_uint {
        (self._bitfield_1[0] & 0x07) as ::core::ffi::c_uint
    }
    pub fn set_low(&mut self, val: ::core::ffi::c_uint) {
        self._bitfield_1[0] = (self._bitfield_1[0] & !0x07) | (val as u8 & 0x07);
    }
    /// WRONG: bits 4..9 (what fits of them in the unit), where C has 3..8.
    pub fn high(&self) -> ::core::ffi::c_uint {
        ((self._bitfield_1[0] >> 4) & 0x1f) as ::core::ffi::c_uint
    }
    pub fn set_high(&mut self, val: ::core::ffi::c_uint) {
        let bits = ((val & 0x1f) << 4) as u8;
        self._bitfield_1[0] = (self._bitfield_1[0] & 0x0f) | bits;
    }
}

#[repr(C)]
#[derive(Copy, Clone)]
pub struct lc_anon_st {
    pub kind: ::core::ffi::c_int,
    pub __bindgen_anon_1: lc_anon_st__bindgen_ty_1,
    pub inner: [lc_anon_st_lc_inner_st; 2usize],
}
#[repr(C)]
#[derive(Copy, Clone)]
pub union lc_anon_st__bindgen_ty_1 {
    pub id: ::core::ffi::c_int,
    pub wide: ::core::ffi::c_longlong,
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct lc_anon_st_lc_inner_st {
    pub a: ::core::ffi::c_short,
    pub b: f64,
}
pub type lc_anon = lc_anon_st;

#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct lc_untagged {
    pub bytes: [::core::ffi::c_uchar; 3usize],
}

#[repr(C)]
#[derive(Copy, Clone)]
pub struct lc_renamed_st {
    pub anon_handle: lc_renamed_st__anon_handle,
    pub tail: ::core::ffi::c_int,
}
#[repr(C)]
#[derive(Copy, Clone)]
pub union lc_renamed_st__anon_handle {
    pub ptr: *mut ::core::ffi::c_void,
    pub handle: ::core::ffi::c_int,
}
pub type lc_renamed = lc_renamed_st;

#[repr(transparent)]
#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
pub struct lc_kind_enum(pub ::core::ffi::c_uint);
pub const LC_KIND_A: lc_kind_enum = lc_kind_enum(1);
pub const LC_KIND_B: lc_kind_enum = lc_kind_enum(2147483647);
pub type lc_kind = lc_kind_enum;

pub const LC_RIGHT: u32 = 7;
/// WRONG: the header says 7.
pub const LC_WRONG: u32 = 8;
/// WRONG: the header has no such constant.
pub const LC_ONLY_IN_RUST: u32 = 1;

/// Right for x86_64 Linux only (SysV `va_list`: `__va_list_tag[1]`, 24 bytes,
/// aligned 8); WRONG on aarch64 Linux (32 bytes) and Windows (8).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct lc_target_st {
    pub first: ::core::ffi::c_int,
    pub args: [u64; 3usize],
    pub last: ::core::ffi::c_int,
}
pub type lc_target = lc_target_st;

/// Right where plain `char` is signed (x86_64); WRONG on aarch64 Linux, where
/// C's `(char)-1` is 255.
pub const LC_PLAIN_CHAR_ONES: i8 = -1;
