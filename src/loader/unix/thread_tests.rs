//! A thread's state as `/proc` says it: the zombie leader `tgkill`
//! cannot tell from a live thread.

use super::link_map::*;
use super::tasks::*;
use super::*;

#[test]
fn the_state_follows_the_last_parenthesis() {
    assert_eq!(stat_state(b"12 (cat) Z 1 12 12 0"), Some(b'Z'));
    // A command holding ") R": the last parenthesis ends it.
    assert_eq!(stat_state(b"12 (a) R (b) Z 1 12"), Some(b'Z'));
    assert_eq!(stat_state(b"12 (cat) S 1 12"), Some(b'S'));
    assert_eq!(stat_state(b"12 (cat"), None);
    assert_eq!(stat_state(b"12 (cat)"), None);
}

/// Each thread's token is its own and stays the same; the wrong twin of
/// a token that is not kept (0, or a new one each call) fails.
#[test]
fn a_threads_token_is_its_own_and_stays() {
    extern crate std;
    let a = thread_token();
    assert_ne!(a, 0, "no token kept");
    assert_eq!(thread_token(), a);
    let (b, again) = std::thread::spawn(|| (thread_token(), thread_token()))
        .join()
        .unwrap();
    assert_ne!(b, 0);
    assert_eq!(again, b, "another thread's token changed between calls");
    assert_ne!(b, a, "two threads share a token");
}

/// The lookup depth is kept per thread, from 0.
#[test]
fn the_lookup_depth_is_kept_per_thread() {
    extern crate std;
    assert!(set_lookup_depth(3));
    assert_eq!(lookup_depth(), Some(3));
    let other = std::thread::spawn(|| {
        let first = lookup_depth();
        set_lookup_depth(5);
        (first, lookup_depth())
    })
    .join()
    .unwrap();
    assert_eq!(other, (Some(0), Some(5)));
    assert_eq!(lookup_depth(), Some(3));
    set_lookup_depth(0);
}

#[test]
fn a_threads_id_in_this_namespace_is_the_last_of_nspid() {
    let status = b"Name:\tx\nTgid:\t4242\nNSpid:\t4242\t1\nNSpgid:\t9\n";
    assert_eq!(ns_tid(status), Some(1));
    // One namespace: the one id.
    assert_eq!(ns_tid(b"NSpid:\t77\n"), Some(77));
    // Wrong twin: the first id (/proc's namespace) is not this one's.
    assert_ne!(ns_tid(status), Some(4242));
    assert_eq!(ns_tid(b"Name:\tx\n"), None);
    assert_eq!(ns_tid(b"NSpid:\t12x\n"), None);
    assert_eq!(leading_number(b"4242 (cat) R"), Some(4242));
    assert_eq!(leading_number(b"99999999999 (x)"), None);
    assert_eq!(leading_number(b"(x)"), None);
}

#[test]
fn this_thread_is_found_by_its_nspid() {
    // /proc here is this namespace's: the listing finds the thread by
    // the id it already has, and keeps it for the next ask.
    let me = thread_id();
    assert!(matches!(foreign_task_state(me), Some(b'R' | b'S')));
    assert_eq!(
        FOREIGN_TASK.load(Ordering::Relaxed),
        u64::from(me) << 32 | u64::from(me)
    );
    assert!(matches!(foreign_task_state(me), Some(b'R' | b'S')));
    assert_eq!(foreign_task_state(u32::MAX), None);
    assert_eq!(status_state(b"Name:\tx\nState:\tZ (zombie)\n"), Some(b'Z'));
    assert_eq!(status_state(b"Name:\tx\n"), None);
}

#[test]
fn directory_records_are_read_to_their_length() {
    let record = |name: &[u8], len: u16| {
        let mut r = alloc::vec![0u8; usize::from(len)];
        r[16..18].copy_from_slice(&len.to_ne_bytes());
        r[19..19 + name.len()].copy_from_slice(name);
        r
    };
    extern crate alloc;
    let mut buf = record(b"12", 24);
    buf.extend(record(b"345", 24));
    let names: alloc::vec::Vec<&[u8]> = dirent_names(&buf).collect();
    assert_eq!(names, [&b"12"[..], &b"345"[..]]);
    // A record claiming more than the buffer, or less than its head,
    // ends the listing.
    let mut bad = record(b"7", 24);
    bad[16..18].copy_from_slice(&200u16.to_ne_bytes());
    assert_eq!(dirent_names(&bad).count(), 0);
    bad[16..18].copy_from_slice(&0u16.to_ne_bytes());
    assert_eq!(dirent_names(&bad).count(), 0);
}

#[test]
fn only_a_regular_file_or_a_link_to_one_is_opened() {
    extern crate std;
    use std::os::unix::ffi::OsStrExt;
    let dir = std::env::temp_dir().join(std::format!("cuda-mem-sys-kinds-{}", thread_id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let z = |p: &std::path::Path| {
        let mut v = p.as_os_str().as_bytes().to_vec();
        v.push(0);
        v
    };
    let file = dir.join("regular.so");
    std::fs::write(&file, b"x").unwrap();
    let link = dir.join("link.so");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let fifo = dir.join("fifo.so");
    let f = z(&fifo);
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(f.as_ptr().cast(), 0o600) }, 0);
    assert_eq!(not_a_regular_file(&z(&file)), None);
    assert_eq!(not_a_regular_file(&z(&link)), None);
    assert_eq!(not_a_regular_file(&f), Some("a FIFO (named pipe)"));
    assert_eq!(not_a_regular_file(&z(&dir)), Some("a directory"));
    assert_eq!(
        not_a_regular_file(b"/dev/null\0"),
        Some("a character device")
    );
    // Missing: dlopen says why; a bare name is searched for by the
    // dynamic loader, not stat'ed (".", a folder here, changes nothing).
    assert_eq!(not_a_regular_file(&z(&dir.join("missing.so"))), None);
    assert_eq!(not_a_regular_file(b".\0"), None);
    assert_eq!(not_a_regular_file(b"./\0"), Some("a directory"));
    assert_eq!(file_kind(libc::S_IFBLK), Some("a block device"));
    assert_eq!(file_kind(libc::S_IFSOCK), Some("a socket"));
    assert_eq!(file_kind(libc::S_IFREG | 0o644), None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The kernel's copy: the bytes where mapped, `false` (no fault) where
/// not.
#[test]
fn the_kernel_copies_mapped_bytes_and_refuses_unmapped_ones() {
    let copy = KernelCopy::new().unwrap();
    let bytes = *b"libcuda.so.1\0";
    let mut out = [0u8; 13];
    assert!(copy.copy(bytes.as_ptr() as usize, &mut out));
    assert_eq!(out, bytes);
    let mut out = [0u8; 16];
    assert!(!copy.copy(8, &mut out));
    assert!(!copy.copy(usize::MAX - 8, &mut out));
    // The pipe is left empty: the next copy reads its own bytes.
    let mut again = [0u8; 4];
    assert!(copy.copy(bytes.as_ptr() as usize, &mut again));
    assert_eq!(&again, b"libc");
    // Bytes that run past the end of a mapping: the kernel copies the
    // mapped part only, which is no answer (the twin: the same bytes
    // wholly inside the mapping are copied).
    // SAFETY: two fresh private pages, the second given back at once.
    let page = unsafe {
        let p = libc::mmap(
            core::ptr::null_mut(),
            2 * 4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::munmap(p.cast::<u8>().add(4096).cast(), 4096), 0);
        p as usize
    };
    let mut out = [0u8; 16];
    assert!(
        !copy.copy(page + 4096 - 8, &mut out),
        "a copy cut by the mapping's end"
    );
    assert!(copy.copy(page + 4096 - 16, &mut out));
    // The pipe is left empty after the cut copy too.
    assert!(copy.copy(bytes.as_ptr() as usize, &mut again));
    assert_eq!(&again, b"libc");
    // SAFETY: the page mapped above, used by nothing else.
    unsafe { libc::munmap(page as *mut c_void, 4096) };
}

/// Dropping the copier closes its pipe: the descriptors it held no longer
/// name that pipe (they are closed, or another file's since).
#[test]
fn the_kernel_copier_closes_its_pipe_when_dropped() {
    let copy = KernelCopy::new().unwrap();
    let fds = [copy.read, copy.write];
    let inode = |fd: c_int| {
        // SAFETY: all zeros is a valid `stat`, filled by the call.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: as above.
        (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
    };
    let before = fds.map(inode);
    assert!(before.iter().all(Option::is_some));
    drop(copy);
    for (fd, was) in fds.into_iter().zip(before) {
        assert_ne!(inode(fd), was, "descriptor {fd} still holds the pipe");
    }
}

/// An object of another namespace, known by its link map: its
/// `SONAME` read through the kernel, relocated or not; the twins: another
/// name, no `DT_NULL` within the bound, no `l_ld`.
#[test]
fn another_namespaces_object_is_told_by_its_soname() {
    extern crate alloc;
    let strings = b"\0libcuda.so.1\0libother.so.1\0";
    let table = strings.as_ptr() as usize;
    let section = |strtab: usize, soname: usize| {
        alloc::vec![
            elf::DT_STRTAB,
            strtab,
            elf::DT_SONAME,
            soname,
            elf::DT_NULL,
            0usize
        ]
    };
    let map = |ld: &[usize], bias: usize| LinkMapEntry {
        l_addr: bias,
        l_name: core::ptr::null(),
        l_ld: ld.as_ptr().cast(),
        l_next: core::ptr::null(),
        l_prev: core::ptr::null(),
    };
    let copy = KernelCopy::new().unwrap();
    let want = b"libcuda.so.1";
    let as_is = section(table, 1);
    assert!(foreign_is(&map(&as_is, 0), want, &copy));
    // Not relocated: DT_STRTAB an offset from the bias.
    let offset = section(0x100, 1);
    assert!(foreign_is(&map(&offset, table - 0x100), want, &copy));
    let other = section(table, 14);
    assert!(!foreign_is(&map(&other, 0), want, &copy));
    let mut endless = alloc::vec![0x7fff_ffffusize; 2 * MAX_FOREIGN_ENTRIES];
    endless[..4].copy_from_slice(&as_is[..4]);
    assert!(!foreign_is(&map(&endless, 0), want, &copy));
    let mut none = map(&as_is, 0);
    none.l_ld = core::ptr::null();
    assert!(!foreign_is(&none, want, &copy));
    // A name past the mapping: false, no fault.
    let far = section(usize::MAX - 64, 1);
    assert!(!foreign_is(&map(&far, 0), want, &copy));
}

#[test]
fn this_thread_exists_and_runs() {
    let me = thread_id();
    assert!(matches!(task_state(me), Some(b'R' | b'S')));
    assert!(thread_exists(me));
}

/// The namespaces after the first (`r_next`) are walked only where
/// `r_version` says the structure is `r_debug_extended` (2 and later):
/// version 1 has no `r_next`, so a list that seems to follow it is not
/// read (the twin); versions 2 and 3 find another namespace's object by
/// its `SONAME`, named by its path, or by the `SONAME` where it has none.
#[test]
fn another_namespace_is_walked_only_from_an_extended_r_debug() {
    extern crate alloc;
    let strings = b"\0libcuda.so.1\0";
    let ld = alloc::vec![
        elf::DT_STRTAB,
        strings.as_ptr() as usize,
        elf::DT_SONAME,
        1,
        elf::DT_NULL,
        0usize
    ];
    let path = b"/other/namespace/libcuda.so.1\0";
    let entry = |name: *const c_char| LinkMapEntry {
        l_addr: 0,
        l_name: name,
        l_ld: ld.as_ptr().cast(),
        l_next: core::ptr::null(),
        l_prev: core::ptr::null(),
    };
    let named = entry(path.as_ptr().cast());
    let nameless = entry(core::ptr::null());
    let debug =
        |version: c_int, map: *const LinkMapEntry, next: *const RDebugExtended| RDebugExtended {
            r_version: version,
            r_map: map,
            r_brk: 0,
            r_state: 0,
            r_ldbase: 0,
            r_next: next,
        };
    for (map, said) in [
        (&named, &b"/other/namespace/libcuda.so.1"[..]),
        (&nameless, &b"libcuda.so.1"[..]),
    ] {
        let other = debug(2, map, core::ptr::null());
        for version in [2, 3] {
            let first = debug(version, core::ptr::null(), &other);
            let mut out = Text::new();
            assert!(
                foreign_soname(&first, b"libcuda.so.1", &mut out),
                "version {version}"
            );
            assert_eq!(out.as_str().as_bytes(), said);
        }
        let first = debug(1, core::ptr::null(), &other);
        let mut out = Text::new();
        assert!(
            !foreign_soname(&first, b"libcuda.so.1", &mut out),
            "version 1 walked"
        );
        // The other namespace holding something else: not found.
        let first = debug(2, core::ptr::null(), &other);
        assert!(!foreign_soname(&first, b"libother.so.1", &mut Text::new()));
    }
}

/// A namespace list or a link map list that loops back on itself (not
/// glibc's, but read through raw pointers) ends the walk at its bound,
/// with no answer, rather than hanging. The twin: the same lists holding
/// the object are found.
#[test]
fn a_looping_namespace_or_map_list_ends_the_walk() {
    extern crate alloc;
    let strings = b"\0libcuda.so.1\0";
    let ld = alloc::vec![
        elf::DT_STRTAB,
        strings.as_ptr() as usize,
        elf::DT_SONAME,
        1,
        elf::DT_NULL,
        0usize
    ];
    // A link map whose `l_next` is itself.
    let mut map = alloc::boxed::Box::new(LinkMapEntry {
        l_addr: 0,
        l_name: core::ptr::null(),
        l_ld: ld.as_ptr().cast(),
        l_next: core::ptr::null(),
        l_prev: core::ptr::null(),
    });
    let at: *const LinkMapEntry = &*map;
    map.l_next = at;
    // A namespace whose `r_next` is itself, holding that map.
    let mut ns = alloc::boxed::Box::new(RDebugExtended {
        r_version: 2,
        r_map: at,
        r_brk: 0,
        r_state: 0,
        r_ldbase: 0,
        r_next: core::ptr::null(),
    });
    let ns_at: *const RDebugExtended = &*ns;
    ns.r_next = ns_at;
    let first = RDebugExtended {
        r_version: 2,
        r_map: core::ptr::null(),
        r_brk: 0,
        r_state: 0,
        r_ldbase: 0,
        r_next: ns_at,
    };
    assert!(!foreign_soname(&first, b"libother.so.1", &mut Text::new()));
    assert!(foreign_soname(&first, b"libcuda.so.1", &mut Text::new()));
}
