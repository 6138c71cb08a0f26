//! What the dynamic loader has loaded: another `libcuda.so.1` in this or
//! another link namespace (`dl_iterate_phdr`, `_r_debug_extended`), a
//! library's `SONAME` from its link map (read by `elf/` within its mapped
//! segments), and the path it was opened by.

use super::*;

/// Whether a library whose `SONAME` is `soname` (NUL-terminated:
/// `libcuda.so.1`) is already in the process and is another file than
/// `file` (NUL-terminated: what a variable names): its path, as the
/// dynamic loader opened it, is then pushed to `out`.
///
/// Nothing is searched for: `dlopen(soname, RTLD_NOLOAD)` searches the
/// library path where nothing by that name is loaded, opening each
/// candidate (a FIFO named `libcuda.so.1` there blocks it). What is loaded
/// is walked instead (`dl_iterate_phdr`), each object's `SONAME` read by
/// `elf/` within its mapped segments. The named file is the same file
/// where `dlopen(file, RTLD_NOLOAD)` gives the object found (the dynamic
/// loader tells a file by its device and inode, whatever the path): asked
/// only of a path (with a `/`: not searched for), which
/// [`not_a_regular_file`] found regular, so its open does not block; a bare
/// name is the object opened by that file name. The handles it gives are
/// kept (nothing the loader opens is closed).
///
/// Other link namespaces (`dlmopen`), which `dl_iterate_phdr` does not
/// list, are walked through glibc's `_r_debug_extended` (`r_next`, glibc
/// 2.35 on: `r_version` 2 or more), see [`in_another_namespace`].
#[cfg(target_os = "linux")]
pub fn another_already_loaded(soname: &[u8], file: &[u8], out: &mut Text) -> AlreadyLoaded {
    let want = &soname[..soname.len() - 1];
    let named = &file[..file.len() - 1];
    let same_bias = if named.contains(&b'/') {
        // SAFETY: NUL-terminated; RTLD_NOLOAD loads nothing (no code runs).
        let h = unsafe { libc::dlopen(file.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        // SAFETY: the loader's link map of a library that stays loaded.
        (!h.is_null())
            .then(|| link_map(h as usize))
            .flatten()
            .map(|m| unsafe { (*m).l_addr })
    } else {
        None
    };
    struct Walk<'a> {
        want: &'a [u8],
        named: &'a [u8],
        same_bias: Option<usize>,
        out: &'a mut Text,
        found: bool,
    }
    impl Walk<'_> {
        /// Whether the object at `bias`, opened as `name`, is another file
        /// than the one named.
        fn not_same(&self, bias: usize, name: &[u8]) -> bool {
            if self.named.contains(&b'/') {
                self.same_bias != Some(bias)
            } else {
                let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
                self.named != self.want && base != self.named
            }
        }
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Walk` below; `info` is the loader's
        // description of one object, valid during this call.
        let (walk, info) = unsafe { (&mut *data.cast::<Walk<'_>>(), &*info) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        let bias = info.dlpi_addr as usize;
        // SAFETY: the loader's own description of an object it loaded,
        // during the call (see `soname_place`).
        let object =
            unsafe { elf::Object::new(&Process, bias, info.dlpi_phdr as usize, info.dlpi_phnum) };
        if !soname_is(&object, walk.want) {
            return 0;
        }
        let name: &[u8] = if info.dlpi_name.is_null() {
            b""
        } else {
            // SAFETY: the loader's NUL-terminated name of the object,
            // valid during the call; copied below.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        if !walk.not_same(bias, name) {
            return 0;
        }
        if name.is_empty() {
            walk.out.push(walk.want);
        } else {
            walk.out.push_lossy(name);
        }
        walk.found = true;
        1
    }
    let mut walk = Walk {
        want,
        named,
        same_bias,
        out,
        found: false,
    };
    // SAFETY: `each` reads the loader's records during the call only;
    // `walk` outlives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut walk as *mut Walk<'_>).cast()) };
    if walk.found {
        return AlreadyLoaded::InThisNamespace;
    }
    if in_another_namespace(want, out) {
        return AlreadyLoaded::InAnotherNamespace;
    }
    AlreadyLoaded::No
}

#[cfg(not(target_os = "linux"))]
pub fn another_already_loaded(_soname: &[u8], _file: &[u8], _out: &mut Text) -> AlreadyLoaded {
    AlreadyLoaded::No
}

/// The head of glibc's `struct link_map` with its list's links (`<link.h>`).
#[cfg(target_os = "linux")]
#[repr(C)]
pub(super) struct LinkMapEntry {
    pub(super) l_addr: usize,
    pub(super) l_name: *const c_char,
    pub(super) l_ld: *const c_void,
    pub(super) l_next: *const LinkMapEntry,
    pub(super) l_prev: *const LinkMapEntry,
}

/// glibc's `struct r_debug_extended` (`<link.h>`, 2.35 on): `struct
/// r_debug` (`r_version` .. `r_ldbase`), then `r_next`, the next link
/// namespace's, read only where `r_version` is 2 or more.
#[cfg(target_os = "linux")]
#[repr(C)]
pub(super) struct RDebugExtended {
    pub(super) r_version: c_int,
    pub(super) r_map: *const LinkMapEntry,
    pub(super) r_brk: usize,
    pub(super) r_state: c_int,
    pub(super) r_ldbase: usize,
    pub(super) r_next: *const RDebugExtended,
}

/// The most objects read in the other namespaces, all together (a process
/// maps a few hundred libraries at the most).
#[cfg(target_os = "linux")]
pub(super) const MAX_FOREIGN_OBJECTS: usize = 1 << 14;

/// The most dynamic entries read of an object in another namespace.
#[cfg(target_os = "linux")]
pub(super) const MAX_FOREIGN_ENTRIES: usize = 4096;

/// Whether an object whose `SONAME` is `want` is loaded in a link namespace
/// other than the default one (`dlmopen`); its path (`l_name`) is then
/// pushed to `out`.
///
/// glibc lists each namespace's objects from `_r_debug` (the default
/// namespace's `r_debug_extended`, found by `dlsym`) through `r_next`
/// (glibc 2.35 on, where `r_version` is 2 or more; before, or on musl,
/// there is no list: the rule is the default namespace's). The walk is made
/// inside a `dl_iterate_phdr` callback, which holds the lock glibc takes to
/// add an object to a namespace's list or take one off it, so the lists do
/// not change under it.
///
/// Such an object is known by its link map only (`l_addr`, `l_name`,
/// `l_ld`; its program headers are in glibc's private fields), so its
/// memory is not read directly: every read is a copy the kernel makes
/// ([`KernelCopy`]: an unmapped byte is `EFAULT`, never a fault). Its
/// dynamic section is read from `l_ld` to `DT_NULL` (at most 4096 entries),
/// and it is a `libcuda.so.1` where `DT_STRTAB` + `DT_SONAME`, relocated or
/// not, reads as that name and its NUL.
#[cfg(target_os = "linux")]
pub(super) fn in_another_namespace(want: &[u8], out: &mut Text) -> bool {
    struct Walk<'a> {
        debug: *const RDebugExtended,
        want: &'a [u8],
        out: &'a mut Text,
        found: bool,
    }
    unsafe extern "C" fn each(_: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Walk` below.
        let walk = unsafe { &mut *data.cast::<Walk<'_>>() };
        walk.found = foreign_soname(walk.debug, walk.want, walk.out);
        // Once: the lock is what this call was for.
        1
    }
    // Asked before the walk: dlsym takes the loader's other lock, which a
    // thread inside dlopen holds while it waits for the one the walk holds.
    // SAFETY: a NUL-terminated name; the pointer is not dereferenced here.
    let debug = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_r_debug".as_ptr()) };
    if debug.is_null() {
        return false;
    }
    let mut walk = Walk {
        debug: debug.cast::<RDebugExtended>().cast_const(),
        want,
        out,
        found: false,
    };
    // SAFETY: `each` reads the loader's records during the call only;
    // `walk` outlives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut walk as *mut Walk<'_>).cast()) };
    walk.found
}

/// [`in_another_namespace`]'s walk from `debug` (`_r_debug`), under the
/// loader's lock: no `dl*` call is made here.
#[cfg(target_os = "linux")]
pub(super) fn foreign_soname(debug: *const RDebugExtended, want: &[u8], out: &mut Text) -> bool {
    // SAFETY: the dynamic loader's own `_r_debug`, which lives as long as
    // the process; `r_next` is read only where `r_version` says the
    // structure is `r_debug_extended`.
    if unsafe { (*debug).r_version } < 2 {
        return false;
    }
    let Some(copy) = KernelCopy::new() else {
        return false;
    };
    // SAFETY: as above.
    let mut ns = unsafe { (*debug).r_next };
    // Bounded: a namespace list longer than glibc's DL_NNS (16) is not
    // glibc's, and the objects of all namespaces together at most
    // MAX_FOREIGN_OBJECTS (a list that loops back on itself ends there, in
    // milliseconds: each object's section is read by system calls).
    let mut namespaces = 0;
    let mut objects = 0usize;
    while !ns.is_null() && namespaces < 64 {
        namespaces += 1;
        // SAFETY: a namespace's `r_debug_extended`, glibc's, under its lock.
        let mut map = unsafe { (*ns).r_map };
        while !map.is_null() && objects < MAX_FOREIGN_OBJECTS {
            objects += 1;
            // SAFETY: one of glibc's link maps, under its lock.
            let m = unsafe { &*map };
            if foreign_is(m, want, &copy) {
                if m.l_name.is_null() {
                    out.push(want);
                } else {
                    // SAFETY: glibc's NUL-terminated name of the object.
                    let name = unsafe { CStr::from_ptr(m.l_name) }.to_bytes();
                    if name.is_empty() {
                        out.push(want);
                    } else {
                        out.push_lossy(name);
                    }
                }
                return true;
            }
            map = m.l_next;
        }
        // SAFETY: as above.
        ns = unsafe { (*ns).r_next };
    }
    false
}

/// Whether the object of link map `m` (another namespace's) has the
/// `SONAME` `want`, every byte read by `copy`.
#[cfg(target_os = "linux")]
pub(super) fn foreign_is(m: &LinkMapEntry, want: &[u8], copy: &KernelCopy) -> bool {
    let ld = m.l_ld as usize;
    if ld == 0 || ld % elf::WORD != 0 {
        return false;
    }
    let (mut strtab, mut soname) = (None, None);
    let mut ended = false;
    for i in 0..MAX_FOREIGN_ENTRIES {
        let Some(at) = ld.checked_add(i * elf::DYN_SIZE) else {
            return false;
        };
        let mut b = [0u8; elf::DYN_SIZE];
        if !copy.copy(at, &mut b) {
            return false;
        }
        let mut tag = [0u8; elf::WORD];
        let mut value = [0u8; elf::WORD];
        tag.copy_from_slice(&b[..elf::WORD]);
        value.copy_from_slice(&b[elf::WORD..]);
        let value = usize::from_ne_bytes(value);
        match usize::from_ne_bytes(tag) {
            elf::DT_NULL => {
                ended = true;
                break;
            }
            elf::DT_STRTAB => strtab = Some(value),
            elf::DT_SONAME => soname = Some(value),
            _ => {}
        }
    }
    let (true, Some(strtab), Some(offset)) = (ended, strtab, soname) else {
        return false;
    };
    let mut name = [0u8; 64];
    let Some(name) = name.get_mut(..want.len() + 1) else {
        return false;
    };
    let relocated = strtab.checked_add(m.l_addr).filter(|_| m.l_addr != 0);
    [Some(strtab), relocated]
        .into_iter()
        .flatten()
        .any(|table| {
            table.checked_add(offset).is_some_and(|at| {
                copy.copy(at, name) && name[..want.len()] == *want && name[want.len()] == 0
            })
        })
}

/// Copies of memory the kernel makes, through a pipe: `write(2)` reads the
/// bytes and fails with `EFAULT` where one is not mapped readable, so
/// memory nothing vouches for is read without a fault.
#[cfg(target_os = "linux")]
pub(super) struct KernelCopy {
    pub(super) read: c_int,
    pub(super) write: c_int,
}

#[cfg(target_os = "linux")]
impl KernelCopy {
    pub(super) fn new() -> Option<KernelCopy> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: two descriptors written; closed by `drop`.
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        (r == 0).then_some(KernelCopy {
            read: fds[0],
            write: fds[1],
        })
    }

    /// Copies the `out.len()` bytes (at most 64) at `address` into `out`:
    /// `false` where any of them cannot be read.
    pub(super) fn copy(&self, address: usize, out: &mut [u8]) -> bool {
        // SAFETY: the kernel reads the bytes (or fails: EFAULT); the
        // address is never dereferenced here.
        let n = unsafe { libc::write(self.write, address as *const c_void, out.len()) };
        let Ok(n) = usize::try_from(n) else {
            return false;
        };
        // SAFETY: into this call's own buffer, at most what was written
        // (a part written before a fault is taken out too).
        let m = unsafe { libc::read(self.read, out.as_mut_ptr().cast(), n) };
        n == out.len() && usize::try_from(m) == Ok(n)
    }
}

#[cfg(target_os = "linux")]
impl Drop for KernelCopy {
    fn drop(&mut self) {
        // SAFETY: the descriptors `new` made, used by nothing else.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

/// Whether `object`'s `SONAME`, read within its mapped segments, is
/// `want`; `false` where it has none or it cannot be read.
#[cfg(target_os = "linux")]
pub(super) fn soname_is(object: &elf::Object<'_, Process>, want: &[u8]) -> bool {
    let Ok(Some(ld)) = object.dynamic_address() else {
        return false;
    };
    let Ok(Some(place)) = object.soname(ld) else {
        return false;
    };
    if place.len != want.len() {
        return false;
    }
    let mut name = [0u8; 64];
    let Some(name) = name.get_mut(..want.len()) else {
        return false;
    };
    // SAFETY: the reader checked that the name's bytes lie in one readable
    // segment of the object (`copy`'s contract).
    unsafe { elf::Memory::copy(&Process, place.address, name) };
    name == want
}

/// The `SONAME` of the library `handle`, given to `f` (borrowed for the
/// call only: the library stays loaded while its handle is held, and the
/// bytes are copied by `f` where they are kept). Read from the dynamic
/// section the dynamic loader mapped, not from the file, which may have
/// changed since it was opened: `dlinfo(RTLD_DI_LINKMAP)` gives the section's
/// address (`l_ld`) and the load bias, `dl_iterate_phdr` the object's
/// program headers, and `elf/` reads it within the mapped segments.
#[cfg(target_os = "linux")]
pub fn with_soname<R>(handle: usize, f: impl FnOnce(Soname<'_>) -> R) -> R {
    // Fail closed: a SONAME that cannot be read is not known to be
    // libcuda.so.1 (a driver's constructor can clear its own l_ld).
    let Some(map) = link_map(handle) else {
        return f(Soname::Malformed(
            "dlinfo(RTLD_DI_LINKMAP) gives no link map for it",
        ));
    };
    // SAFETY: the loader's link map of a library that stays loaded.
    let (bias, ld) = unsafe { ((*map).l_addr, (*map).l_ld) };
    if ld.is_null() {
        return f(Soname::Malformed(
            "its link map's l_ld is null: no dynamic section to read",
        ));
    }
    match soname_place(bias, ld as usize) {
        Err(why) => f(Soname::Malformed(why.text())),
        Ok(None) => f(Soname::None),
        Ok(Some(place)) => {
            // SAFETY: the reader checked that `place`'s bytes lie in one
            // readable PT_LOAD segment of the library (bytes: no alignment),
            // mapped while its handle is held; its address comes from the
            // loader's own records (exposed provenance).
            let name =
                unsafe { core::slice::from_raw_parts(place.address as *const u8, place.len) };
            f(Soname::Name(name))
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn with_soname<R>(_: usize, f: impl FnOnce(Soname<'_>) -> R) -> R {
    f(Soname::Unknown)
}

/// The head of glibc's and musl's `struct link_map` (`<link.h>`).
#[cfg(target_os = "linux")]
#[repr(C)]
pub(super) struct LinkMap {
    pub(super) l_addr: usize,
    pub(super) l_name: *const c_char,
    pub(super) l_ld: *const c_void,
}

/// `dlinfo(RTLD_DI_LINKMAP)`: the loader's record of `handle`.
#[cfg(target_os = "linux")]
pub(super) fn link_map(handle: usize) -> Option<*const LinkMap> {
    const RTLD_DI_LINKMAP: c_int = 2;
    extern "C" {
        fn dlinfo(handle: *mut c_void, request: c_int, info: *mut c_void) -> c_int;
    }
    let mut map: *const LinkMap = core::ptr::null();
    // SAFETY: a live handle; RTLD_DI_LINKMAP writes one pointer.
    let r = unsafe {
        dlinfo(
            handle as *mut c_void,
            RTLD_DI_LINKMAP,
            (&mut map as *mut *const LinkMap).cast(),
        )
    };
    (r == 0 && !map.is_null()).then_some(map)
}

/// The path the dynamic loader opened `handle` from (its `link_map`'s
/// `l_name`), pushed to `out`; nothing where it cannot be asked.
pub fn path(handle: usize, out: &mut Text) {
    #[cfg(target_os = "linux")]
    if let Some(map) = link_map(handle) {
        // SAFETY: the loader's link map of a library that stays loaded.
        let name = unsafe { (*map).l_name };
        if !name.is_null() {
            // SAFETY: l_name is NUL-terminated, kept while it is loaded;
            // copied at once.
            out.push_lossy(unsafe { CStr::from_ptr(name) }.to_bytes());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (handle, out);
}

/// The process's own memory, read by copying (no alignment assumed).
#[cfg(target_os = "linux")]
pub(super) struct Process;

#[cfg(target_os = "linux")]
impl elf::Memory for Process {
    unsafe fn copy(&self, address: usize, out: &mut [u8]) {
        // SAFETY: the reader asks only for bytes within the object's program
        // header table or one of its readable PT_LOAD segments (`copy`'s
        // contract), which the dynamic loader mapped; bytes have no
        // alignment, and `out` is this call's own buffer.
        unsafe {
            core::ptr::copy_nonoverlapping(address as *const u8, out.as_mut_ptr(), out.len())
        };
    }
}

/// Where the `SONAME` of the object whose load bias is `bias` and whose
/// dynamic section is mapped at `ld` lies (`elf::Object::soname`), or why it
/// cannot be read: the object is the one `dl_iterate_phdr` lists with that
/// bias and a `PT_DYNAMIC` at `ld`.
#[cfg(target_os = "linux")]
pub(super) fn soname_place(bias: usize, ld: usize) -> Result<Option<elf::Place>, elf::Malformed> {
    struct Search {
        bias: usize,
        ld: usize,
        found: Option<Result<Option<elf::Place>, elf::Malformed>>,
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Search` below; `info` is the loader's
        // description of one object, valid during this call.
        let (search, info) = unsafe { (&mut *data.cast::<Search>(), &*info) };
        if info.dlpi_addr as usize != search.bias || info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the loader's own description of an object it loaded,
        // during the call: `dlpi_phnum` headers at `dlpi_phdr`, and each
        // readable PT_LOAD segment mapped at `dlpi_addr + p_vaddr`.
        let object = unsafe {
            elf::Object::new(
                &Process,
                search.bias,
                info.dlpi_phdr as usize,
                info.dlpi_phnum,
            )
        };
        match object.dynamic_at(search.ld) {
            Ok(None) => 0,
            Ok(Some(_)) => {
                search.found = Some(object.soname(search.ld));
                1
            }
            Err(why) => {
                search.found = Some(Err(why));
                1
            }
        }
    }
    let mut search = Search {
        bias,
        ld,
        found: None,
    };
    // SAFETY: `each` reads the loader's records during the call only;
    // `search` outlives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut search as *mut Search).cast()) };
    search.found.unwrap_or(Err(elf::Malformed::NoObject))
}
