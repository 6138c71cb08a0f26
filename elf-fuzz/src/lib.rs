//! The fuzz target's library: cuda-mem-sys's ELF reader (`src/loader/elf/`,
//! the very folder the crate compiles) with its byte image (`image.rs`
//! there, which `build.rs`'s `cuda_mem_sys_elf_image` cfg brings in),
//! compiled here without the crate: no CUDA headers, no bindgen. `cargo
//! test --release -p elf-fuzz` also runs the reader's unit tests
//! (`src/loader/elf/tests.rs`) in a release build.
//!
//! An input is decoded into an image and the reader's arguments
//! ([`fuzz_one`]); the reader must neither panic (overflow checks are on in
//! the fuzz build) nor read outside the mapping the image's headers declare
//! (the image panics on such a read), nor answer a name that is not there.

// The reader's items the fuzz target does not reach (`NoObject`, made by
// `src/loader/unix/link_map.rs`'s search) are not dead code in the crate.
#[allow(dead_code)]
#[path = "../../src/loader/elf/mod.rs"]
mod elf;
use elf::image;

use elf::*;
use image::{Image, Layout};

/// Where an image lies: the address `Layout::library` places a library at.
const BASE: usize = 0x7000_0000;
/// Where an image near the top of the address space lies.
const TOP: usize = usize::MAX - 0x1_ffff;
/// The most program headers decoded (the reader reads them again for each
/// read: kept small enough for many runs a second; 17 and more included).
const MAX_HEADERS: u16 = 1024;
/// The most image bytes used.
const MAX_IMAGE: usize = 0x1_0000;
/// The input's head: flags, the headers' offset, their count, `l_ld`'s offset.
const HEAD: usize = 9;

/// Flags (the input's first byte).
const BIAS_ZERO: u8 = 1;
const LD_FROM_HEADERS: u8 = 2;
const AT_THE_TOP: u8 = 4;

/// One input: decoded, read, checked. Returns without reading where the
/// input is shorter than its head.
pub fn fuzz_one(data: &[u8]) {
    let Some((image, ld)) = decode(data) else {
        return;
    };
    // `Image::soname` checks a name is there, NUL-terminated, in the mapping.
    let answer = image.soname(ld);
    assert_ne!(
        answer,
        Err(Malformed::OutsideSegments),
        "the reader asked for bytes outside the mapping"
    );
}

/// The image and `l_ld` an input stands for.
fn decode(data: &[u8]) -> Option<(Image, usize)> {
    let head = data.get(..HEAD)?;
    let flags = head[0];
    let headers = usize::from(u16::from_le_bytes([head[1], head[2]]));
    let count = u16::from_le_bytes([head[3], head[4]]) % MAX_HEADERS;
    let ld = u32::from_le_bytes([head[5], head[6], head[7], head[8]]) as usize;
    let bytes = &data[HEAD..];
    let base = if flags & AT_THE_TOP != 0 { TOP } else { BASE };
    let image = Image {
        base,
        bytes: bytes[..bytes.len().min(MAX_IMAGE)].to_vec(),
        bias: if flags & BIAS_ZERO != 0 { 0 } else { base },
        headers: base + headers,
        count,
    };
    let ld = if flags & LD_FROM_HEADERS != 0 {
        // As glibc sets it: the bias plus the first PT_DYNAMIC's p_vaddr
        // (read here apart from the reader).
        (0..usize::from(count))
            .map(|i| image.raw(image.headers + i * phdr::SIZE, phdr::SIZE))
            .find(|h| u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) == PT_DYNAMIC)
            .map(|h| {
                let mut w = [0u8; WORD];
                w.copy_from_slice(&h[phdr::VADDR..phdr::VADDR + WORD]);
                image.bias.wrapping_add(usize::from_ne_bytes(w))
            })
            .unwrap_or(base)
    } else {
        base.wrapping_add(ld)
    };
    Some((image, ld))
}

/// `layout` (placed at `BASE`) as an input, `l_ld` from its headers.
fn encode(layout: &Layout) -> Vec<u8> {
    assert_eq!(layout.bias, BASE);
    let mut data = vec![LD_FROM_HEADERS];
    data.extend((layout.headers_at as u16).to_le_bytes());
    data.extend((layout.headers.len() as u16).to_le_bytes());
    data.extend(0u32.to_le_bytes());
    data.extend(layout.image().bytes);
    data
}

/// The seed corpus: a library as linkers make it, and each malformed form
/// the reader names, as (file name, input).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let lib = Layout::library;
    let dynamic = |l: &mut Layout, at: usize, memsz: usize| {
        l.dynamic_at = at;
        l.headers[1] = (PT_DYNAMIC, PF_R, at, memsz);
    };
    let mut seeds = vec![("library", encode(&lib()))];
    let mut short = lib();
    dynamic(&mut short, 0x400, DYN_SIZE);
    seeds.push(("short-p_memsz", encode(&short)));
    let mut huge = lib();
    dynamic(&mut huge, 0x400, 1 << (usize::BITS - 1));
    seeds.push(("huge-p_memsz", encode(&huge)));
    let mut misaligned = lib();
    dynamic(&mut misaligned, 0x404, 4 * DYN_SIZE);
    seeds.push(("dynamic-4-mod-8", encode(&misaligned)));
    let mut odd = lib();
    odd.headers_at = 0x41;
    seeds.push(("odd-headers", encode(&odd)));
    let mut many = lib();
    many.headers_at = 0x1000;
    let mut headers: Vec<_> = (0..16).map(|i| (PT_LOAD, PF_R, i * 0x10, 0x10)).collect();
    headers.extend(many.headers.iter().copied());
    many.headers = headers;
    seeds.push(("17-load-segments", encode(&many)));
    let mut relocated = lib();
    relocated.dynamic[0].1 = BASE + 0x800;
    seeds.push(("relocated-strtab", encode(&relocated)));
    let mut no_null = lib();
    dynamic(&mut no_null, 0x2000 - 3 * DYN_SIZE, 3 * DYN_SIZE);
    no_null.dynamic.pop();
    seeds.push(("no-dt_null", encode(&no_null)));
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_decodes_to_its_layout_and_is_read() {
        for (name, data) in seeds() {
            let (image, ld) = decode(&data).unwrap();
            let answer = image.soname(ld);
            println!("{name}: {answer:?}");
            let expected = match name {
                "library" | "short-p_memsz" | "17-load-segments" | "relocated-strtab" => {
                    Ok(Some(b"libcuda.so.1".to_vec()))
                }
                "huge-p_memsz" => Err(Malformed::DynamicPastSegment),
                "dynamic-4-mod-8" => Err(Malformed::DynamicMisaligned),
                "odd-headers" => Err(Malformed::HeadersMisaligned),
                "no-dt_null" => Err(Malformed::NoNullEntry),
                other => panic!("a seed without an expectation: {other}"),
            };
            assert_eq!(answer, expected, "{name}");
            fuzz_one(&data);
        }
    }

    #[test]
    fn short_and_odd_inputs_neither_panic_nor_read_outside() {
        for data in [&[][..], &[0; 8], &[0xff; HEAD], &[0xff; 200], &[6; 300]] {
            fuzz_one(data);
        }
    }

    #[test]
    fn the_target_catches_a_read_outside_the_mapping() {
        // Wrong twin of the target's check: an image whose only segment is
        // read past its end must make the target fail.
        let (image, _) = decode(&encode(&Layout::library())).unwrap();
        let r = std::panic::catch_unwind(|| {
            let mut b = [0u8; 16];
            // SAFETY: the image checks the mapping itself (and panics).
            unsafe { image.copy(BASE + 0x2000 - 8, &mut b) };
        });
        assert!(r.is_err());
    }
}
