//! A memory image for the ELF reader's tests and its fuzz target: bytes
//! placed at an address, read through [`Memory`] with every read checked
//! against the mapping the image's own headers declare, parsed here apart
//! from the reader (in 128-bit arithmetic). A read outside the header table
//! and the readable `PT_LOAD` segments panics: a bug of the reader. Mapped
//! bytes the image does not hold read as zeros (as a segment's tail does).

extern crate alloc;

use super::*;
use alloc::vec::Vec;

/// The bytes `bytes` at `base`, and the object `dl_iterate_phdr` would
/// describe there.
pub(crate) struct Image {
    pub(crate) base: usize,
    pub(crate) bytes: Vec<u8>,
    pub(crate) bias: usize,
    pub(crate) headers: usize,
    pub(crate) count: u16,
}

impl Image {
    /// The byte at `address`: the image's, or 0.
    pub(crate) fn byte(&self, address: u128) -> u8 {
        let base = self.base as u128;
        if address >= base && address < base + self.bytes.len() as u128 {
            self.bytes[(address - base) as usize]
        } else {
            0
        }
    }

    /// `len` bytes at `address`, as [`byte`](Self::byte) reads them.
    pub(crate) fn raw(&self, address: usize, len: usize) -> Vec<u8> {
        (0..len as u128)
            .map(|k| self.byte(address as u128 + k))
            .collect()
    }

    fn number(&self, address: u128, len: usize) -> u128 {
        let mut v = 0u128;
        for k in 0..len as u128 {
            let b = u128::from(self.byte(address + k));
            v |= if cfg!(target_endian = "little") {
                b << (8 * k)
            } else {
                b << (8 * (len as u128 - 1 - k))
            };
        }
        v
    }

    /// Whether `[address, address + len)` lies whole in the header table or
    /// in one readable `PT_LOAD` segment the headers declare.
    pub(crate) fn mapped(&self, address: usize, len: usize) -> bool {
        let (a, end) = (address as u128, address as u128 + len as u128);
        let table = self.headers as u128;
        let size = phdr::SIZE as u128;
        if a >= table && end <= table + u128::from(self.count) * size {
            return true;
        }
        (0..u128::from(self.count)).any(|i| {
            let h = table + i * size;
            let kind = self.number(h + phdr::TYPE as u128, 4) as u32;
            let flags = self.number(h + phdr::FLAGS as u128, 4) as u32;
            let start = self.bias as u128 + self.number(h + phdr::VADDR as u128, WORD);
            let stop = start + self.number(h + phdr::MEMSZ as u128, WORD);
            kind == PT_LOAD && flags & PF_R != 0 && a >= start && end <= stop
        })
    }

    /// The reader over this image.
    pub(crate) fn object(&self) -> Object<'_, Image> {
        // SAFETY: the image's `copy` is safe for any range (it checks the
        // mapping itself, and panics outside it).
        unsafe { Object::new(self, self.bias, self.headers, self.count) }
    }

    /// The reader's answer for the dynamic section at `ld`, the name copied.
    pub(crate) fn soname(&self, ld: usize) -> Result<Option<Vec<u8>>, Malformed> {
        let place = self.object().soname(ld)?;
        Ok(place.map(|p| {
            assert!(
                self.mapped(p.address, p.len + 1),
                "the name and its NUL lie outside the mapping: {p:?}"
            );
            let name = self.raw(p.address, p.len + 1);
            assert_eq!(name[p.len], 0, "the name is not followed by its NUL");
            assert!(!name[..p.len].contains(&0), "the name holds a NUL");
            name[..p.len].to_vec()
        }))
    }
}

impl Memory for Image {
    unsafe fn copy(&self, address: usize, out: &mut [u8]) {
        assert!(
            self.mapped(address, out.len()),
            "the reader read {} bytes at {address:#x}, outside the mapping",
            out.len()
        );
        for (k, b) in out.iter_mut().enumerate() {
            *b = self.byte(address as u128 + k as u128);
        }
    }
}

/// An ELF object laid out in an image: its program headers, its dynamic
/// section and its string table, each at an offset of the image.
#[derive(Clone)]
pub(crate) struct Layout {
    pub(crate) size: usize,
    pub(crate) bias: usize,
    /// Where the program header table is (an offset of the image).
    pub(crate) headers_at: usize,
    /// (p_type, p_flags, p_vaddr, p_memsz).
    pub(crate) headers: Vec<(u32, u32, usize, usize)>,
    /// Where the dynamic section is (an offset) and its entries.
    pub(crate) dynamic_at: usize,
    pub(crate) dynamic: Vec<(usize, usize)>,
    /// Where the string table is (an offset) and its bytes.
    pub(crate) strings_at: usize,
    pub(crate) strings: Vec<u8>,
}

impl Layout {
    /// A library as linkers make it: one readable `PT_LOAD` segment of
    /// 0x2000 bytes at the bias, the headers at 0x40, `PT_DYNAMIC` at 0x400
    /// (4 entries), the string table (`"\0libcuda.so.1\0"`) at 0x800,
    /// `DT_STRTAB` as the linker wrote it (not relocated).
    pub(crate) fn library() -> Layout {
        let strings = b"\0libcuda.so.1\0".to_vec();
        Layout {
            size: 0x2000,
            bias: 0x7000_0000,
            headers_at: 0x40,
            headers: alloc::vec![
                (PT_LOAD, PF_R, 0, 0x2000),
                (PT_DYNAMIC, PF_R, 0x400, 4 * DYN_SIZE),
            ],
            dynamic_at: 0x400,
            dynamic: alloc::vec![
                (DT_STRTAB, 0x800),
                (DT_STRSZ, strings.len()),
                (DT_SONAME, 1),
                (DT_NULL, 0),
            ],
            strings_at: 0x800,
            strings,
        }
    }

    /// The dynamic section's address (`l_ld`).
    pub(crate) fn ld(&self) -> usize {
        self.bias + self.dynamic_at
    }

    pub(crate) fn image(&self) -> Image {
        let mut bytes = alloc::vec![0u8; self.size];
        let mut put = |at: usize, b: &[u8]| bytes[at..at + b.len()].copy_from_slice(b);
        for (i, &(kind, flags, vaddr, memsz)) in self.headers.iter().enumerate() {
            let h = self.headers_at + i * phdr::SIZE;
            put(h + phdr::TYPE, &kind.to_ne_bytes());
            put(h + phdr::FLAGS, &flags.to_ne_bytes());
            put(h + phdr::VADDR, &vaddr.to_ne_bytes());
            put(h + phdr::MEMSZ, &memsz.to_ne_bytes());
        }
        for (i, &(tag, value)) in self.dynamic.iter().enumerate() {
            let d = self.dynamic_at + i * DYN_SIZE;
            put(d, &tag.to_ne_bytes());
            put(d + WORD, &value.to_ne_bytes());
        }
        put(self.strings_at, &self.strings);
        Image {
            base: self.bias,
            bytes,
            bias: self.bias,
            headers: self.bias + self.headers_at,
            count: self.headers.len() as u16,
        }
    }

    /// The reader's answer for this layout.
    pub(crate) fn soname(&self) -> Result<Option<Vec<u8>>, Malformed> {
        self.image().soname(self.ld())
    }
}
