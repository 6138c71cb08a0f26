//! A library's `SONAME`, read from the dynamic section the dynamic loader
//! mapped: a pure, bounded reader, with no system call.
//!
//! It is given what `dl_iterate_phdr` says of one object (its load bias, the
//! address and count of its program headers) and the address of its dynamic
//! section (the link map's `l_ld`), and reads memory only through
//! [`Memory`], only inside the program header table and the object's
//! readable `PT_LOAD` segments, every sum checked. Bytes are copied, never
//! borrowed as a reference or a slice of the mapping, so no alignment is
//! assumed anywhere; no length is taken from a header without being bounded
//! by the segment that holds it; there is no limit on the number of
//! segments (nothing is stored: the headers are read again where needed).
//!
//! The dynamic section is read entry by entry from `l_ld` to `DT_NULL`,
//! within the `PT_LOAD` segment holding it, as glibc reads it
//! (`elf/get-dynamic-info.h`): a `PT_DYNAMIC` whose `p_memsz` is shorter
//! than the section is read on. A form the ELF specification forbids and
//! that a read could not do soundly by borrowing (program headers or a
//! `PT_DYNAMIC` not aligned to the word, a `p_memsz` beyond the segment) is
//! refused with a [`Malformed`] reason, though glibc loads it.
//!
//! `src/loader/unix/link_map.rs` gives it the process's own memory; the tests and the
//! fuzz target (`elf-fuzz/`, which compiles this very file) give it a byte
//! image whose every read is checked against the mapping.

use core::fmt;

/// The bytes of the address space the object lies in.
pub(crate) trait Memory {
    /// Copies the `out.len()` bytes at `address` into `out`.
    ///
    /// # Safety
    ///
    /// The bytes lie whole within the program header table or within one
    /// readable `PT_LOAD` segment of the object they were given for (see
    /// [`Object::new`]); the reader checks that before each call.
    unsafe fn copy(&self, address: usize, out: &mut [u8]);
}

/// The size of a word, the alignment of `ElfW(Phdr)` and `ElfW(Dyn)`.
pub(crate) const WORD: usize = core::mem::size_of::<usize>();
/// The size of `ElfW(Dyn)`: a tag and a value.
pub(crate) const DYN_SIZE: usize = 2 * WORD;

/// `ElfW(Phdr)`'s size and the offsets of the fields read.
#[cfg(target_pointer_width = "64")]
pub(crate) mod phdr {
    pub(crate) const SIZE: usize = 56;
    pub(crate) const TYPE: usize = 0;
    pub(crate) const FLAGS: usize = 4;
    pub(crate) const VADDR: usize = 16;
    pub(crate) const MEMSZ: usize = 40;
}
/// `ElfW(Phdr)`'s size and the offsets of the fields read.
#[cfg(target_pointer_width = "32")]
pub(crate) mod phdr {
    pub(crate) const SIZE: usize = 32;
    pub(crate) const TYPE: usize = 0;
    pub(crate) const FLAGS: usize = 24;
    pub(crate) const VADDR: usize = 8;
    pub(crate) const MEMSZ: usize = 20;
}

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_DYNAMIC: u32 = 2;
pub(crate) const PF_R: u32 = 4;
pub(crate) const DT_NULL: usize = 0;
pub(crate) const DT_STRTAB: usize = 5;
// Written by the tests' and the fuzz target's images; the reader does not
// read it (glibc reads a SONAME to its NUL, not bounded by DT_STRSZ).
#[allow(dead_code)]
pub(crate) const DT_STRSZ: usize = 10;
pub(crate) const DT_SONAME: usize = 14;

/// Why the `SONAME` cannot be read: each malformed form, named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// No object `dl_iterate_phdr` lists has this bias and a `PT_DYNAMIC`
    /// at the link map's `l_ld`.
    NoObject,
    /// `dlpi_phdr` + `dlpi_phnum` headers runs past the address space.
    HeaderTableOverflows,
    /// `dlpi_phdr` is not a multiple of the word (an odd `e_phoff`).
    HeadersMisaligned,
    /// A readable `PT_LOAD` segment's end runs past the address space.
    SegmentOverflows,
    /// No `PT_DYNAMIC` header lies at `l_ld`.
    NoDynamicHeader,
    /// `PT_DYNAMIC` is not a multiple of the word (4 mod 8, say).
    DynamicMisaligned,
    /// `PT_DYNAMIC` lies in no readable `PT_LOAD` segment.
    DynamicOutsideSegments,
    /// `PT_DYNAMIC`'s `p_memsz` runs past the segment holding it (2^63, say).
    DynamicPastSegment,
    /// The segment holding the dynamic section ends before a `DT_NULL`.
    NoNullEntry,
    /// `DT_SONAME` without `DT_STRTAB`.
    SonameWithoutTable,
    /// Neither reading of `DT_STRTAB` lies in a readable segment.
    TableOutsideSegments,
    /// `DT_STRTAB` + `DT_SONAME` (the name's start) lies in no readable
    /// segment: the offset `DT_SONAME` runs past the mapping.
    NameOutsideSegments,
    /// Both readings of `DT_STRTAB` do (an object mapped below its size).
    TableAmbiguous,
    /// No NUL ends the name before the segment holding it does.
    Unterminated,
    /// The reader asked for bytes outside the mapping: never made (the
    /// fuzz target checks), refused rather than read.
    OutsideSegments,
}

impl Malformed {
    /// The reason, as `driver()`'s message quotes it.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Malformed::NoObject => "no loaded object has this dynamic section (dl_iterate_phdr)",
            Malformed::HeaderTableOverflows => {
                "the program header table runs past the end of the address space"
            }
            Malformed::HeadersMisaligned => {
                "the program headers are not aligned to the word (e_phoff)"
            }
            Malformed::SegmentOverflows => {
                "a PT_LOAD segment runs past the end of the address space"
            }
            Malformed::NoDynamicHeader => "no PT_DYNAMIC header lies at the link map's l_ld",
            Malformed::DynamicMisaligned => "PT_DYNAMIC is not aligned to the word",
            Malformed::DynamicOutsideSegments => "PT_DYNAMIC lies in no readable PT_LOAD segment",
            Malformed::DynamicPastSegment => {
                "PT_DYNAMIC's p_memsz runs past the PT_LOAD segment holding it"
            }
            Malformed::NoNullEntry => {
                "the dynamic section has no DT_NULL before its PT_LOAD segment ends"
            }
            Malformed::SonameWithoutTable => "DT_SONAME without DT_STRTAB",
            Malformed::TableOutsideSegments => {
                "DT_STRTAB lies outside the library's mapped segments"
            }
            Malformed::TableAmbiguous => {
                "DT_STRTAB reads as a mapped address both relocated and not"
            }
            Malformed::NameOutsideSegments => {
                "DT_SONAME's offset from DT_STRTAB lies outside the library's mapped segments"
            }
            Malformed::Unterminated => {
                "DT_SONAME's string has no NUL before the PT_LOAD segment holding it ends"
            }
            Malformed::OutsideSegments => "a read would leave the library's mapped segments",
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// An address range `[start, end)`: a mapped segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Range {
    /// Whether `[start, start + len)` lies whole in the range.
    pub(crate) fn holds(&self, start: usize, len: usize) -> bool {
        start >= self.start && start.checked_add(len).is_some_and(|end| end <= self.end)
    }
}

/// The fields of a program header the reader uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) kind: u32,
    pub(crate) flags: u32,
    pub(crate) vaddr: usize,
    pub(crate) memsz: usize,
}

/// Where the `SONAME`'s bytes are (its NUL not included): checked to lie,
/// with the NUL after them, in one readable segment of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) address: usize,
    pub(crate) len: usize,
}

/// One loaded object, as `dl_iterate_phdr` describes it.
pub(crate) struct Object<'m, M: Memory + ?Sized> {
    memory: &'m M,
    bias: usize,
    headers: usize,
    count: usize,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

fn word_at(b: &[u8], at: usize) -> usize {
    let mut w = [0u8; WORD];
    w.copy_from_slice(&b[at..at + WORD]);
    usize::from_ne_bytes(w)
}

/// `DT_STRTAB` and `DT_SONAME`, where present before `DT_NULL`.
#[derive(Default)]
struct Entries {
    strtab: Option<usize>,
    soname: Option<usize>,
}

impl<'m, M: Memory + ?Sized> Object<'m, M> {
    /// The object whose load bias is `bias`, with `count` program headers
    /// at `headers` (`dlpi_addr`, `dlpi_phdr`, `dlpi_phnum`).
    ///
    /// # Safety
    ///
    /// While the `Object` lives, `memory` holds the `count` headers at
    /// `headers`, and each readable `PT_LOAD` segment they declare,
    /// `p_memsz` bytes at `bias + p_vaddr`, can be read: what the dynamic
    /// loader guarantees of an object it loaded, while it stays loaded.
    pub(crate) unsafe fn new(memory: &'m M, bias: usize, headers: usize, count: u16) -> Self {
        Object {
            memory,
            bias,
            headers,
            count: usize::from(count),
        }
    }

    /// The program header `i` (`i < count`), copied.
    fn header(&self, i: usize) -> Result<Header, Malformed> {
        // count < 2^16 and SIZE < 2^6: the length does not overflow.
        let length = self.count * phdr::SIZE;
        if self.headers.checked_add(length).is_none() || i >= self.count {
            return Err(Malformed::HeaderTableOverflows);
        }
        let mut b = [0u8; phdr::SIZE];
        // SAFETY: the `i`th header lies within the table (i < count, and the
        // table's end does not overflow, checked above).
        unsafe { self.memory.copy(self.headers + i * phdr::SIZE, &mut b) };
        Ok(Header {
            kind: u32_at(&b, phdr::TYPE),
            flags: u32_at(&b, phdr::FLAGS),
            vaddr: word_at(&b, phdr::VADDR),
            memsz: word_at(&b, phdr::MEMSZ),
        })
    }

    /// The readable `PT_LOAD` segment holding `[start, start + len)` whole,
    /// as mapped (the bias added); `None` where none does.
    fn segment_holding(&self, start: usize, len: usize) -> Result<Option<Range>, Malformed> {
        for i in 0..self.count {
            let h = self.header(i)?;
            if h.kind != PT_LOAD || h.flags & PF_R == 0 {
                continue;
            }
            let s = self.bias.checked_add(h.vaddr);
            let Some(end) = s.and_then(|s| s.checked_add(h.memsz)) else {
                return Err(Malformed::SegmentOverflows);
            };
            let segment = Range {
                start: self.bias.wrapping_add(h.vaddr),
                end,
            };
            if segment.holds(start, len) {
                return Ok(Some(segment));
            }
        }
        Ok(None)
    }

    /// The furthest end of a readable `PT_LOAD` segment holding the byte
    /// at `start`, as mapped; `None` where none holds it.
    fn furthest_end_holding(&self, start: usize) -> Result<Option<usize>, Malformed> {
        let mut furthest = None;
        for i in 0..self.count {
            let h = self.header(i)?;
            if h.kind != PT_LOAD || h.flags & PF_R == 0 {
                continue;
            }
            let s = self.bias.checked_add(h.vaddr);
            let Some(end) = s.and_then(|s| s.checked_add(h.memsz)) else {
                return Err(Malformed::SegmentOverflows);
            };
            let segment = Range {
                start: self.bias.wrapping_add(h.vaddr),
                end,
            };
            if segment.holds(start, 1) && !matches!(furthest, Some(f) if f >= end) {
                furthest = Some(end);
            }
        }
        Ok(furthest)
    }

    /// The one read of the object's segments: where a readable segment
    /// holds the bytes whole, else nothing is read.
    fn read(&self, address: usize, out: &mut [u8]) -> Result<(), Malformed> {
        match self.segment_holding(address, out.len())? {
            Some(_) => {
                // SAFETY: a readable PT_LOAD segment holds the bytes (just
                // checked), which `new`'s caller vouched for.
                unsafe { self.memory.copy(address, out) };
                Ok(())
            }
            None => Err(Malformed::OutsideSegments),
        }
    }

    /// The `PT_DYNAMIC` header mapped at `ld`, if the object has one.
    pub(crate) fn dynamic_at(&self, ld: usize) -> Result<Option<Header>, Malformed> {
        for i in 0..self.count {
            let h = self.header(i)?;
            if h.kind == PT_DYNAMIC && self.bias.checked_add(h.vaddr) == Some(ld) {
                return Ok(Some(h));
            }
        }
        Ok(None)
    }

    /// Where the object's `PT_DYNAMIC` is mapped (the bias plus its
    /// `p_vaddr`), for an object known by its program headers alone (the
    /// walk of what is loaded): `None` where it has none.
    pub(crate) fn dynamic_address(&self) -> Result<Option<usize>, Malformed> {
        for i in 0..self.count {
            let h = self.header(i)?;
            if h.kind == PT_DYNAMIC {
                return self
                    .bias
                    .checked_add(h.vaddr)
                    .map(Some)
                    .ok_or(Malformed::DynamicOutsideSegments);
            }
        }
        Ok(None)
    }

    /// The entries wanted, read from `ld` to `DT_NULL` within `segment`.
    fn entries(&self, ld: usize, segment: Range) -> Result<Entries, Malformed> {
        let mut found = Entries::default();
        let mut at = ld;
        while segment.holds(at, DYN_SIZE) {
            let mut b = [0u8; DYN_SIZE];
            self.read(at, &mut b)?;
            let value = word_at(&b, WORD);
            match word_at(&b, 0) {
                DT_NULL => return Ok(found),
                DT_STRTAB => found.strtab = Some(value),
                DT_SONAME => found.soname = Some(value),
                _ => {}
            }
            // In the segment: `at + DYN_SIZE <= segment.end`.
            at += DYN_SIZE;
        }
        Err(Malformed::NoNullEntry)
    }

    /// Where the `SONAME` of the object whose dynamic section is mapped at
    /// `ld` (the link map's `l_ld`) lies: `Ok(None)` where it has none.
    ///
    /// The name is read from `DT_STRTAB` + `DT_SONAME` to its NUL, within
    /// a readable segment holding its first byte (the one reaching
    /// furthest), as glibc reads it:
    /// `DT_STRSZ` bounds nothing (glibc does not read it for the name).
    ///
    /// Whether `DT_STRTAB` holds an address or an offset from the load bias
    /// is not guessed from its size. glibc adds the bias to the `d_ptr`
    /// entries of a dynamic section at load (`elf/get-dynamic-info.h`), but
    /// only where the bias is not 0 and the section is writable: not where
    /// `PT_DYNAMIC` is read-only (`l_ld_readonly`, glibc 2.35 on), nor on
    /// MIPS and RISC-V (`DL_RO_DYN_SECTION`); musl never does. So the rule
    /// asks the mapping instead, which is the same for every loader: the
    /// table is where one of the two readings (the value as it is, the value
    /// plus the bias) lies within a segment the object maps. The two
    /// readings are `bias` apart; both lie in its segments only for an
    /// object mapped below its own size, where the section cannot be told,
    /// and neither for a malformed one: both are errors.
    pub(crate) fn soname(&self, ld: usize) -> Result<Option<Place>, Malformed> {
        if self.headers % WORD != 0 {
            return Err(Malformed::HeadersMisaligned);
        }
        let Some(dynamic) = self.dynamic_at(ld)? else {
            return Err(Malformed::NoDynamicHeader);
        };
        if ld % WORD != 0 {
            return Err(Malformed::DynamicMisaligned);
        }
        let Some(segment) = self.segment_holding(ld, DYN_SIZE)? else {
            return Err(Malformed::DynamicOutsideSegments);
        };
        // A short p_memsz is read on to DT_NULL, as glibc does; one that
        // claims more than the mapping holds is refused.
        if !segment.holds(ld, dynamic.memsz) {
            return Err(Malformed::DynamicPastSegment);
        }
        let entries = self.entries(ld, segment)?;
        let Some(offset) = entries.soname else {
            return Ok(None);
        };
        // DT_STRSZ is not a bound: glibc reads the name from DT_STRTAB +
        // DT_SONAME to its NUL (`elf/dl-load.c`), whatever DT_STRSZ says
        // (2^62, 0, or none), so the reader does too, within the segment
        // holding the name.
        let Some(strtab) = entries.strtab else {
            return Err(Malformed::SonameWithoutTable);
        };
        let as_is = self.segment_holding(strtab, 1)?.is_some();
        let plus_bias = match strtab.checked_add(self.bias) {
            Some(t) if self.bias != 0 => self.segment_holding(t, 1)?.is_some(),
            _ => false,
        };
        let table = match (as_is, plus_bias) {
            (true, false) => strtab,
            // Checked just above: the sum does not overflow.
            (false, true) => strtab.wrapping_add(self.bias),
            (true, true) => return Err(Malformed::TableAmbiguous),
            (false, false) => return Err(Malformed::TableOutsideSegments),
        };
        let Some(start) = table.checked_add(offset) else {
            return Err(Malformed::NameOutsideSegments);
        };
        let Some(end) = self.furthest_end_holding(start)? else {
            return Err(Malformed::NameOutsideSegments);
        };
        // In bounds: `[start, end)` lies in one readable segment.
        let mut at = start;
        let mut chunk = [0u8; 64];
        while at < end {
            let n = chunk.len().min(end - at);
            self.read(at, &mut chunk[..n])?;
            if let Some(i) = chunk[..n].iter().position(|&b| b == 0) {
                return Ok(Some(Place {
                    address: start,
                    len: at - start + i,
                }));
            }
            at += n;
        }
        Err(Malformed::Unterminated)
    }
}

// The byte image the tests and the fuzz target read through (elf-fuzz/
// sets `cuda_mem_sys_elf_image`): never in the crate's own build.
#[cfg(any(test, cuda_mem_sys_elf_image))]
pub(crate) mod image;

#[cfg(test)]
mod tests;
