//! The ELF reader over byte images (`image.rs`): each malformed form
//! is refused with its own reason, or read as glibc reads it, never a
//! panic or a read outside the mapping (the image checks every read). Each
//! test has a wrong twin: the reader before this file (`old`, the walk of
//! `unix.rs` of `src/loader/` at `a27a7da`, emulated) fails the same check, or a
//! well-formed neighbour is read.

extern crate alloc;
extern crate std;

use super::image::{Image, Layout};
use super::*;
use alloc::vec::Vec;

const NAME: &[u8] = b"libcuda.so.1";

fn found(r: &Result<Option<Vec<u8>>, Malformed>) -> bool {
    matches!(r, Ok(Some(n)) if n == NAME)
}

impl Layout {
    /// `PT_DYNAMIC` and its section moved to the offset `at`.
    fn dynamic_moved_to(mut self, at: usize) -> Layout {
        self.dynamic_at = at;
        for h in &mut self.headers {
            if h.0 == PT_DYNAMIC {
                h.2 = at;
            }
        }
        self
    }

    fn dynamic_memsz(mut self, memsz: usize) -> Layout {
        for h in &mut self.headers {
            if h.0 == PT_DYNAMIC {
                h.3 = memsz;
            }
        }
        self
    }
}

/// What the reader before this file answered, emulated over an image: its
/// fixed table of 16 segments, its entries counted from `p_memsz`, and the
/// slices it made (`slice::from_raw_parts` of `ElfW(Phdr)` at `dlpi_phdr`,
/// of `ElfW(Dyn)` at `l_ld`, `p_memsz / 16` long), whose preconditions are
/// checked here: where one fails, it was undefined behaviour (a debug build
/// aborts: "unsafe precondition(s) violated").
mod old {
    use super::*;

    pub(super) const UB: &str = "undefined behaviour";
    pub(super) const NO_OBJECT: &str =
        "no loaded object has this dynamic section (dl_iterate_phdr)";

    pub(super) fn soname(image: &Image, ld: usize) -> Result<Option<Vec<u8>>, &'static str> {
        if image.headers % WORD != 0 {
            return Err(UB);
        }
        let mut segments = Vec::new();
        let mut entries = None;
        for i in 0..usize::from(image.count) {
            let h = image.object().header(i).map_err(|e| e.text())?;
            let start = image.bias.checked_add(h.vaddr);
            let end = start.and_then(|s| s.checked_add(h.memsz));
            let (Some(start), Some(end)) = (start, end) else {
                return Err(NO_OBJECT);
            };
            if h.kind == PT_DYNAMIC && start == ld {
                entries = Some((end - start) / DYN_SIZE);
            } else if h.kind == PT_LOAD && h.flags & PF_R != 0 {
                if segments.len() == 16 {
                    return Err(NO_OBJECT);
                }
                segments.push(Range { start, end });
            }
        }
        let entries = entries.ok_or(NO_OBJECT)?;
        if ld % WORD != 0 || entries.saturating_mul(DYN_SIZE) > isize::MAX as usize {
            return Err(UB);
        }
        if !image.mapped(ld, entries * DYN_SIZE) {
            return Err(UB);
        }
        let (mut strtab, mut strsz, mut soname) = (None, None, None);
        for e in 0..entries {
            let b = image.raw(ld + e * DYN_SIZE, DYN_SIZE);
            let value = word_at(&b, WORD);
            match word_at(&b, 0) {
                DT_NULL => break,
                DT_STRTAB => strtab = Some(value),
                DT_STRSZ => strsz = Some(value),
                DT_SONAME => soname = Some(value),
                _ => {}
            }
        }
        let Some(offset) = soname else {
            return Ok(None);
        };
        let (Some(strtab), Some(strsz)) = (strtab, strsz) else {
            return Err("DT_SONAME without DT_STRTAB and DT_STRSZ");
        };
        if offset >= strsz {
            return Err("DT_SONAME lies past the string table (DT_STRSZ)");
        }
        let mapped = |s: usize| segments.iter().any(|g| g.holds(s, strsz));
        let table = match (
            mapped(strtab),
            strtab.checked_add(image.bias).is_some_and(mapped),
        ) {
            (true, false) => strtab,
            (false, true) => strtab + image.bias,
            _ => return Err("DT_STRTAB"),
        };
        let t = image.raw(table + offset, strsz - offset);
        let n = t.iter().position(|&b| b == 0).ok_or("unterminated")?;
        Ok(Some(t[..n].to_vec()))
    }
}

fn old_found(layout: &Layout) -> bool {
    matches!(old::soname(&layout.image(), layout.ld()), Ok(Some(n)) if n == NAME)
}

#[test]
fn a_well_formed_library_gives_its_soname() {
    let lib = Layout::library();
    assert!(found(&lib.soname()), "{:?}", lib.soname());
    // The emulation of the old reader agrees on a well-formed library.
    assert!(old_found(&lib));
}

#[test]
fn a_short_p_memsz_is_read_on_to_dt_null() {
    // glibc reads the dynamic section to DT_NULL, whatever PT_DYNAMIC's
    // p_memsz says: 16 bytes (DT_STRTAB alone) still gives the SONAME.
    for memsz in [0, 1, DYN_SIZE, 2 * DYN_SIZE + 3] {
        let lib = Layout::library().dynamic_memsz(memsz);
        assert!(found(&lib.soname()), "p_memsz {memsz}: {:?}", lib.soname());
        // Wrong twin: the old reader stopped at p_memsz and said "no SONAME".
        assert_eq!(old::soname(&lib.image(), lib.ld()), Ok(None));
    }
}

#[test]
fn seventeen_load_segments_are_read() {
    // 16 small readable segments before the one holding everything.
    let mut lib = Layout::library();
    lib.headers_at = 0x1000;
    let mut headers: Vec<_> = (0..16).map(|i| (PT_LOAD, PF_R, i * 0x10, 0x10)).collect();
    headers.extend(lib.headers.iter().copied());
    lib.headers = headers;
    assert_eq!(lib.headers.len(), 18);
    assert!(found(&lib.soname()), "{:?}", lib.soname());
    // Wrong twin: the old fixed table of 16 segments found no object.
    assert_eq!(old::soname(&lib.image(), lib.ld()), Err(old::NO_OBJECT));
    // And many more: 1000 headers, the last one the dynamic section's.
    let mut many = Layout::library();
    many.size = 0x10000;
    many.headers_at = 0x2000;
    many.headers = (0..998).map(|i| (PT_LOAD, PF_R, i * 8, 8)).collect();
    many.headers.push((PT_LOAD, PF_R, 0, 0x10000));
    many.headers.push((PT_DYNAMIC, PF_R, 0x400, 4 * DYN_SIZE));
    assert!(found(&many.soname()));
}

#[test]
fn a_dynamic_section_not_aligned_to_the_word_is_refused() {
    let lib = Layout::library().dynamic_moved_to(0x404);
    assert_eq!(lib.soname(), Err(Malformed::DynamicMisaligned));
    // Wrong twin: the old reader made a slice of unaligned `Dyn`s.
    assert_eq!(old::soname(&lib.image(), lib.ld()), Err(old::UB));
    // The aligned neighbour is read.
    assert!(found(&Layout::library().dynamic_moved_to(0x408).soname()));
}

#[test]
fn program_headers_at_an_odd_address_are_refused() {
    let mut lib = Layout::library();
    lib.headers_at = 0x41;
    assert_eq!(lib.soname(), Err(Malformed::HeadersMisaligned));
    // Yet the object is still found by its headers (read unaligned), so
    // the reason is this one, not "no object".
    assert!(lib.image().object().dynamic_at(lib.ld()).unwrap().is_some());
    // Wrong twin: the old reader made a slice of unaligned headers.
    assert_eq!(old::soname(&lib.image(), lib.ld()), Err(old::UB));
    lib.headers_at = 0x48;
    assert!(found(&lib.soname()));
}

#[test]
fn a_p_memsz_beyond_the_mapping_is_refused() {
    for memsz in [
        1 << (usize::BITS - 1),
        usize::MAX,
        0x2000 - 0x400 + DYN_SIZE,
    ] {
        let lib = Layout::library().dynamic_memsz(memsz);
        assert_eq!(
            lib.soname(),
            Err(Malformed::DynamicPastSegment),
            "{memsz:#x}"
        );
        // Wrong twin: the old reader made a slice p_memsz long (or, where
        // the end overflowed, found no object), never this reason.
        let old = old::soname(&lib.image(), lib.ld());
        assert!(
            old == Err(old::UB) || old == Err(old::NO_OBJECT),
            "{memsz:#x}: {old:?}"
        );
    }
    // Up to the segment's end is read.
    assert!(found(
        &Layout::library().dynamic_memsz(0x2000 - 0x400).soname()
    ));
}

#[test]
fn a_dynamic_section_outside_every_readable_segment_is_refused() {
    // Past the segment's end.
    let mut lib = Layout::library().dynamic_moved_to(0x3000);
    lib.size = 0x4000;
    assert_eq!(lib.soname(), Err(Malformed::DynamicOutsideSegments));
    // In a segment that is not readable.
    let mut unreadable = Layout::library();
    unreadable.headers[0].1 = 0;
    assert_eq!(unreadable.soname(), Err(Malformed::DynamicOutsideSegments));
    // Twin: the segment grown to hold it.
    lib.headers[0].3 = 0x4000;
    assert!(found(&lib.soname()));
}

#[test]
fn a_dynamic_section_without_dt_null_in_its_segment_is_refused() {
    // The section is the segment's last 48 bytes; its DT_NULL is dropped.
    let mut lib = Layout::library().dynamic_moved_to(0x2000 - 3 * DYN_SIZE);
    lib.dynamic.pop();
    lib = lib.dynamic_memsz(3 * DYN_SIZE);
    assert_eq!(lib.soname(), Err(Malformed::NoNullEntry));
    // Twin: room for the DT_NULL (zero bytes past the three entries).
    lib.headers[0].3 = 0x2000 + DYN_SIZE;
    lib.size = 0x2000 + DYN_SIZE;
    assert!(found(&lib.soname()));
}

#[test]
fn no_pt_dynamic_at_l_ld_is_refused() {
    let lib = Layout::library();
    let image = lib.image();
    assert_eq!(
        image.soname(lib.ld() + DYN_SIZE),
        Err(Malformed::NoDynamicHeader)
    );
    assert!(found(&image.soname(lib.ld())));
}

#[test]
fn a_segment_past_the_end_of_memory_is_refused() {
    let mut lib = Layout::library();
    lib.headers
        .insert(0, (PT_LOAD, PF_R, usize::MAX - 0x10, 0x100));
    assert_eq!(lib.soname(), Err(Malformed::SegmentOverflows));
    // Twin: an unreadable one is not looked at.
    lib.headers[0].1 = 0;
    assert!(found(&lib.soname()));
}

#[test]
fn a_header_table_past_the_end_of_memory_is_refused() {
    let lib = Layout::library();
    let mut image = lib.image();
    // Aligned, so that the overflow is what is refused.
    image.headers = usize::MAX - phdr::SIZE - 7;
    assert_eq!(image.headers % WORD, 0);
    assert_eq!(image.soname(lib.ld()), Err(Malformed::HeaderTableOverflows));
    image.headers = lib.bias + lib.headers_at;
    assert!(found(&image.soname(lib.ld())));
}

#[test]
fn a_relocated_strtab_is_read_as_it_is() {
    // glibc with a writable section: the address, bias included.
    let mut lib = Layout::library();
    lib.dynamic[0].1 = lib.bias + 0x800;
    assert!(found(&lib.soname()));
}

#[test]
fn an_unrelocated_strtab_gets_the_bias() {
    // musl, or a read-only section: the value the linker wrote. The wrong
    // twin of an older rule (`strtab < base`) as well: found by the
    // mapping, not by its size.
    let lib = Layout::library();
    assert_eq!(lib.dynamic[0], (DT_STRTAB, 0x800));
    assert!(found(&lib.soname()));
}

#[test]
fn a_strtab_near_the_top_of_memory_is_an_error_not_an_overflow() {
    let mut lib = Layout::library();
    lib.dynamic[0].1 = usize::MAX - 8;
    assert_eq!(lib.soname(), Err(Malformed::TableOutsideSegments));
    lib.dynamic[1].1 = 4;
    assert_eq!(lib.soname(), Err(Malformed::TableOutsideSegments));
    // Twin: an object mapped at the top of memory is read.
    let mut top = Layout::library();
    top.bias = usize::MAX - 0x3fff;
    top.headers[0].3 = 0x2000;
    top.dynamic[0].1 = top.bias + 0x800;
    assert!(found(&top.soname()), "{:?}", top.soname());
}

#[test]
fn dt_strsz_bounds_nothing_as_in_glibc() {
    // glibc reads the SONAME from DT_STRTAB + DT_SONAME to its NUL, not
    // bounded by DT_STRSZ: 2^62 (the table's start and the name inside the
    // segment), usize::MAX, 0, or none at all, the name is read.
    for strsz in [Some(1usize << 62), Some(usize::MAX), Some(0), Some(1), None] {
        let mut lib = Layout::library();
        match strsz {
            Some(n) => lib.dynamic[1].1 = n,
            None => {
                lib.dynamic.remove(1);
            }
        }
        assert!(
            found(&lib.soname()),
            "DT_STRSZ {strsz:?}: {:?}",
            lib.soname()
        );
        // Wrong twin: the reader of before bounded the table by DT_STRSZ
        // ("DT_STRTAB lies outside", "DT_SONAME lies past the string
        // table", or no table at all).
        assert!(!old_found(&lib), "DT_STRSZ {strsz:?}");
    }
    // DT_STRSZ 2^62 was told as DT_STRTAB's fault: no refusal names it now.
    let mut lib = Layout::library();
    lib.dynamic[1].1 = 1 << 62;
    assert_eq!(old::soname(&lib.image(), lib.ld()), Err("DT_STRTAB"));
}

#[test]
fn a_soname_past_the_segment_names_dt_soname() {
    // The name's start past the segment holding the table: DT_SONAME's
    // fault, not DT_STRTAB's (which lies inside).
    let mut lib = Layout::library();
    lib.dynamic[2].1 = 0x2000 - 0x800;
    assert_eq!(lib.soname(), Err(Malformed::NameOutsideSegments));
    lib.dynamic[2].1 = usize::MAX;
    assert_eq!(lib.soname(), Err(Malformed::NameOutsideSegments));
    // Twin: the segment's last byte (a zero): an empty name.
    lib.dynamic[2].1 = 0x2000 - 0x800 - 1;
    assert_eq!(lib.soname(), Ok(Some(Vec::new())));
}

#[test]
fn a_table_outside_the_mapped_segments_is_an_error() {
    // Neither reading of DT_STRTAB lies in a segment.
    let mut lib = Layout::library();
    lib.dynamic[0].1 = 0x2000;
    assert_eq!(lib.soname(), Err(Malformed::TableOutsideSegments));
    // Twin: the table inside (its bytes zero): an empty name.
    lib.dynamic[0].1 = 0x1f00;
    assert_eq!(lib.soname(), Ok(Some(Vec::new())));
}

#[test]
fn a_table_both_readings_map_is_an_error() {
    // An object mapped below its own size: the two readings cannot be told.
    let mut low = Layout::library();
    low.bias = 0x1000;
    low.headers[0].3 = 0x8000;
    low.size = 0x8000;
    low.strings_at = 0x2000;
    low.dynamic[0].1 = 0x2000;
    assert_eq!(low.soname(), Err(Malformed::TableAmbiguous));
    // Twin: the same object at a bias above its size.
    low.bias = 0x10_0000;
    assert!(found(&low.soname()));
}

#[test]
fn an_object_without_bias_reads_its_table_as_is() {
    // A non-PIE executable sits where it was linked: with no bias the two
    // readings are one address, not two that cannot be told apart.
    let mut exe = Layout::library();
    exe.bias = 0;
    assert!(found(&exe.soname()), "{:?}", exe.soname());
}

#[test]
fn no_soname_is_none_and_a_soname_without_its_table_is_an_error() {
    let mut none = Layout::library();
    none.dynamic = alloc::vec![(DT_NULL, 0)];
    assert_eq!(none.soname(), Ok(None));
    let mut alone = Layout::library();
    alone.dynamic = alloc::vec![(DT_SONAME, 1), (DT_NULL, 0)];
    assert_eq!(alone.soname(), Err(Malformed::SonameWithoutTable));
    // Entries after DT_NULL are not read.
    let mut after = Layout::library();
    after.dynamic.rotate_right(1);
    assert_eq!(after.soname(), Ok(None));
}

#[test]
fn an_unterminated_name_is_an_error() {
    // The name runs to the end of its segment with no NUL.
    let mut lib = Layout::library();
    lib.strings = b"\0libcuda.so.1".to_vec();
    lib.strings_at = 0x2000 - lib.strings.len();
    lib.dynamic[0].1 = lib.strings_at;
    assert_eq!(lib.soname(), Err(Malformed::Unterminated));
    // A name longer than the reader's chunk of 64 bytes is found whole.
    let long: Vec<u8> = core::iter::repeat_n(b'x', 200).collect();
    lib.strings = [&b"\0"[..], &long[..], &b"\0"[..]].concat();
    lib.strings_at = 0x2000 - lib.strings.len();
    lib.dynamic[0].1 = lib.strings_at;
    assert_eq!(lib.soname(), Ok(Some(long.clone())));
    // Twin: the same name without its NUL, the segment ending with it.
    lib.strings.pop();
    lib.strings_at = 0x2000 - lib.strings.len();
    lib.dynamic[0].1 = lib.strings_at;
    assert_eq!(lib.soname(), Err(Malformed::Unterminated));
}

#[test]
fn the_dynamic_section_is_found_by_its_header() {
    let lib = Layout::library();
    let image = lib.image();
    assert_eq!(image.object().dynamic_address(), Ok(Some(lib.ld())));
    let mut none = Layout::library();
    none.headers.truncate(1);
    assert_eq!(none.image().object().dynamic_address(), Ok(None));
    let mut top = Layout::library();
    top.headers[1].2 = usize::MAX;
    assert_eq!(
        top.image().object().dynamic_address(),
        Err(Malformed::DynamicOutsideSegments)
    );
}

#[test]
fn every_reason_has_its_own_text() {
    use Malformed::*;
    let all = [
        NoObject,
        HeaderTableOverflows,
        HeadersMisaligned,
        SegmentOverflows,
        NoDynamicHeader,
        DynamicMisaligned,
        DynamicOutsideSegments,
        DynamicPastSegment,
        NoNullEntry,
        SonameWithoutTable,
        TableOutsideSegments,
        NameOutsideSegments,
        TableAmbiguous,
        Unterminated,
        OutsideSegments,
    ];
    for (i, a) in all.iter().enumerate() {
        assert!(!a.text().is_empty());
        assert_eq!(std::format!("{a}"), a.text());
        for b in &all[i + 1..] {
            assert_ne!(a.text(), b.text(), "{a:?} and {b:?}");
        }
    }
}

#[test]
fn the_image_panics_on_a_read_outside_the_mapping() {
    // The check the tests and the fuzz target rely on can fail: a read
    // past the segment is caught.
    let image = Layout::library().image();
    let r = std::panic::catch_unwind(|| {
        let mut b = [0u8; 8];
        // SAFETY: the image checks (and panics), nothing is read.
        unsafe { image.copy(image.bias + 0x2000 - 4, &mut b) };
    });
    assert!(r.is_err());
    assert!(image.mapped(image.bias + 0x2000 - 8, 8));
}
