//! Issue 50: the loader's last hangs and wrong answers, each case in a
//! child process bounded by a timeout, each with its twin. Files that block
//! in `open(2)` (a FIFO named by the variable, a FIFO named `libcuda.so.1`
//! on the library path), a `libcuda.so.1` in another link namespace, a
//! named driver whose `SONAME` cannot be read, a zombie owner in a PID
//! namespace that keeps the host's `/proc`, and the lookup bound without
//! a thread-specific key.

use super::{
    child, child_command, child_with, expect_lines, fake_driver, fixture, linux_as_root,
    linux_only, run_bounded, shared_library_with, OWNER_GONE,
};
use libtest_mimic::{Completion, Failed};
use std::path::Path;

/// Makes a FIFO at `path` (no writer ever opens it).
fn fifo(path: &Path) -> Result<(), Failed> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(format!(
            "mkfifo {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        )
        .into());
    }
    Ok(())
}

/// The child's `driver Err` message.
fn driver_error(out: &str) -> Result<&str, Failed> {
    out.lines()
        .find_map(|l| l.strip_prefix("driver Err "))
        .ok_or_else(|| format!("no load error reported:\n{out}").into())
}

/// `CUDA_MEM_SYS_LIBCUDA` naming a FIFO with no writer, a character device,
/// a directory, or a link to the FIFO: refused before `dlopen`, 303, the
/// message naming the path and its type; `CUDA_MEM_SYS_LIBCUDART` naming the
/// FIFO alike, where the runtime is loaded (`dynamic-cudart`). The loader of before hung in
/// `dlopen`'s `open(2)` on the FIFO (the wrong twin: the child's timeout
/// fails it). The twin: a link to a regular file (the fake driver) is
/// opened and taken.
pub fn a_named_path_that_is_not_a_regular_file_is_refused_with_its_type(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("FIFOs and stat(2) as Linux has them") {
        return Ok(c);
    }
    let dir = test_support::scratch("not-regular");
    let pipe = dir.path().join("libcuda-fifo.so.1");
    fifo(&pipe)?;
    let folder = dir.path().join("a-folder");
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    let to_pipe = dir.path().join("link-to-fifo.so");
    std::os::unix::fs::symlink(&pipe, &to_pipe).map_err(|e| e.to_string())?;
    for (case, path, kind) in [
        (
            "a FIFO with no writer",
            pipe.as_path(),
            "a FIFO (named pipe)",
        ),
        (
            "a link to that FIFO",
            to_pipe.as_path(),
            "a FIFO (named pipe)",
        ),
        (
            "a character device",
            Path::new("/dev/null"),
            "a character device",
        ),
        ("a directory", folder.as_path(), "a directory"),
    ] {
        let out = child("bad-driver", Some(path))?;
        println!("{case}:\n{out}");
        expect_lines(&out, &["cuInit 303 303"])?;
        let why = driver_error(&out)?;
        let says = format!(
            "CUDA_MEM_SYS_LIBCUDA names no loadable library: {} is {kind}, not a regular file",
            path.display()
        );
        if !why.contains(&says) {
            return Err(format!("{case}: not refused with {says:?}: {why}").into());
        }
    }
    // The runtime's variable alike, where the runtime is loaded.
    let out = child_with(
        "runtime-version",
        &[("CUDA_MEM_SYS_LIBCUDART", pipe.as_os_str())],
    )?;
    if super::needs_loaded_runtime(&out).is_some() {
        println!("CUDA_MEM_SYS_LIBCUDART: not used, the runtime is linked statically");
    } else {
        println!("CUDA_MEM_SYS_LIBCUDART naming the FIFO:\n{out}");
        expect_lines(&out, &["cudaGetDeviceCount 303"])?;
        let says = format!(
            "CUDA_MEM_SYS_LIBCUDART names no loadable library: {} is a FIFO (named pipe), not a \
             regular file",
            pipe.display()
        );
        if !out
            .lines()
            .any(|l| l.starts_with("runtime Err ") && l.contains(&says))
        {
            return Err(format!("the runtime is not refused with {says:?}:\n{out}").into());
        }
    }
    let (d, driver) = fake_driver(&[])?;
    let link = d.path().join("link-to-driver.so");
    std::os::unix::fs::symlink(&driver, &link).map_err(|e| e.to_string())?;
    let out = child("bad-driver", Some(&link))?;
    println!("a link to a regular file:\n{out}");
    let taken = format!("driver Ok {}", link.display());
    expect_lines(&out, &["cuInit 1 1", taken.as_str()])?;
    Ok(Completion::Completed)
}

/// A FIFO named `libcuda.so.1` on `LD_LIBRARY_PATH`, and a driver named by
/// `CUDA_MEM_SYS_LIBCUDA`: the one-driver check asks what is loaded
/// (`dl_iterate_phdr`, each object's `SONAME`) without searching the
/// library path, so the named driver loads. The loader of before asked
/// `dlopen("libcuda.so.1", RTLD_NOLOAD)`, which searched the path and
/// blocked on the FIFO before `main` (the wrong twin: the child's timeout
/// fails it). The twin: with the FIFO still there, another `libcuda.so.1`
/// preloaded is still told, and the named driver refused naming both.
pub fn a_fifo_named_libcuda_so_1_on_the_library_path_does_not_hold_a_named_driver(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("FIFOs and the dynamic loader's search are Linux's") {
        return Ok(c);
    }
    let dir = test_support::scratch("fifo-on-path");
    fifo(&dir.path().join("libcuda.so.1"))?;
    let (_d, driver) = fake_driver(&[])?;
    let path = dir.path().as_os_str();
    let out = child_with(
        "bad-driver",
        &[
            ("LD_LIBRARY_PATH", path),
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
        ],
    )?;
    println!("a FIFO named libcuda.so.1 on the path:\n{out}");
    let taken = format!("driver Ok {}", driver.display());
    expect_lines(&out, &["cuInit 1 1", taken.as_str()])?;
    let (_o, other) = fake_driver(&[])?;
    let out = child_with(
        "bad-driver",
        &[
            ("LD_LIBRARY_PATH", path),
            ("LD_PRELOAD", other.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
        ],
    )?;
    println!("the same, another libcuda.so.1 preloaded:\n{out}");
    expect_lines(&out, &["cuInit 303 303"])?;
    let why = driver_error(&out)?;
    let loaded = format!("already in the process: {} (preloaded", other.display());
    if !why.contains(&loaded) || !why.contains(&driver.display().to_string()) {
        return Err(format!("the message does not name both files: {why}").into());
    }
    Ok(Completion::Completed)
}

/// glibc's version, where it is at least `major.minor`; `None` otherwise
/// (or not glibc).
fn glibc_at_least(major: u32, minor: u32) -> Option<String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let v = v.to_string_lossy().into_owned();
        let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        ((a, b) >= (major, minor)).then_some(v)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (major, minor);
        None
    }
}

/// A preloaded library `dlmopen`s a `libcuda.so.1` into a new link
/// namespace, and `CUDA_MEM_SYS_LIBCUDA` names another driver: refused,
/// 303, both paths named, the other said to be in another namespace
/// (`_r_debug_extended`'s `r_next`, glibc 2.35 on). The loader of before
/// saw the caller's namespace only and loaded the named driver beside it
/// (the wrong twin: "driver Ok" fails this). The twin: the new namespace
/// holds a library of another `SONAME`; the named driver is taken.
pub fn a_libcuda_so_1_in_another_link_namespace_is_refused_naming_both(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("dlmopen's link namespaces are glibc's") {
        return Ok(c);
    }
    let Some(version) = glibc_at_least(2, 35) else {
        return Ok(Completion::ignored_with(
            "glibc before 2.35 lists no other namespace (r_next)",
        ));
    };
    println!("glibc {version}");
    let (_s, shim) = shared_library_with(
        "dlmopen-shim",
        &fixture("dlmopen_shim.c"),
        &[],
        "libdlmopen_shim.so",
        None,
    )?;
    let (_a, other) = fake_driver(&[])?;
    let (_b, named) = fake_driver(&[])?;
    let (_c, not_cuda) = shared_library_with(
        "not-cuda",
        &fixture("fake_libcuda.c"),
        &[],
        "libother.so.1",
        Some("libother.so.1"),
    )?;
    for (case, in_namespace) in [("a libcuda.so.1", &other), ("another SONAME", &not_cuda)] {
        let out = child_with(
            "bad-driver",
            &[
                ("LD_PRELOAD", shim.as_os_str()),
                ("DLMOPEN_SHIM_FILE", in_namespace.as_os_str()),
                ("CUDA_MEM_SYS_LIBCUDA", named.as_os_str()),
            ],
        )?;
        println!("{case} in another namespace:\n{out}");
        let opened = format!(
            "dlmopen shim: opened {} in a new namespace",
            in_namespace.display()
        );
        expect_lines(&out, &[opened.as_str()])?;
        if in_namespace == &not_cuda {
            let taken = format!("driver Ok {}", named.display());
            expect_lines(&out, &["cuInit 1 1", taken.as_str()])?;
            continue;
        }
        expect_lines(&out, &["cuInit 303 303"])?;
        let why = driver_error(&out)?;
        let loaded = format!(
            "already in the process: {} (in another link namespace",
            other.display()
        );
        if !why.contains(&loaded) || !why.contains(&named.display().to_string()) {
            return Err(format!("the message does not name both files: {why}").into());
        }
    }
    Ok(Completion::Completed)
}

/// A named driver whose constructor clears its own link map's `l_ld`: its
/// `SONAME` cannot be read, so it is refused with that reason (303), as a
/// driver whose `l_ld` is moved elsewhere is: fail closed. The loader of
/// before took an unreadable `SONAME` as unknown and accepted it (the wrong
/// twin: "driver Ok" fails this). The twin: the same driver, its link map
/// left alone, is taken.
pub fn a_named_driver_whose_soname_cannot_be_read_is_refused() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("link maps (dladdr1) are glibc's") {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    for clear in [true, false] {
        let mut env = vec![("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str())];
        if clear {
            env.push(("FAKE_CLEAR_L_LD", std::ffi::OsStr::new("1")));
        }
        let out = child_with("bad-driver", &env)?;
        println!("l_ld cleared: {clear}\n{out}");
        if !clear {
            let taken = format!("driver Ok {}", driver.display());
            expect_lines(&out, &["cuInit 1 1", taken.as_str()])?;
            continue;
        }
        expect_lines(&out, &["cuInit 303 303"])?;
        let why = driver_error(&out)?;
        for says in [
            "its link map's l_ld is null",
            "so its SONAME is not known to be libcuda.so.1",
        ] {
            if !why.contains(says) {
                return Err(format!("not refused with {says:?}: {why}").into());
            }
        }
    }
    Ok(Completion::Completed)
}

/// The main thread loads the driver and its constructor ends it (the raw
/// `exit` system call: a zombie thread-group leader, which `tgkill` still
/// answers), in a PID namespace that keeps the host's `/proc` (`unshare
/// --pid --fork` without `--mount-proc`, as some sandboxes run): a later
/// call on another thread gets 303 at once, `driver()` saying the loading
/// thread no longer exists. `gettid()` there is the namespace's id, while
/// `/proc` numbers threads in the host's: the loader of before read
/// `/proc/self/task/<gettid()>/stat`, found it missing, took the zombie
/// for alive and waited (the wrong twin: the child's watchdog says "later
/// call hung"). The twin: the same case with the namespace's own `/proc`
/// (`--mount-proc`). Needs root and util-linux's `unshare`.
pub fn a_zombie_owner_is_told_in_a_pid_namespace_with_the_hosts_proc() -> Result<Completion, Failed>
{
    if let Some(c) = super::needs_feature() {
        return Ok(c);
    }
    if let Some(c) = linux_as_root(
        "PID namespaces are Linux's",
        "needs root: unshare --pid makes the namespace",
    ) {
        return Ok(c);
    }
    let works = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .status();
    if !matches!(works, Ok(s) if s.success()) {
        return Ok(Completion::ignored_with(
            "unshare --pid --fork cannot run here",
        ));
    }
    let (_s, driver) = fake_driver(&[])?;
    let folder = driver.parent().unwrap().as_os_str();
    let exe = std::env::current_exe().unwrap();
    for (case, args) in [
        ("the host's /proc", &["--pid", "--fork"][..]),
        (
            "the namespace's own /proc",
            &["--pid", "--fork", "--mount-proc"][..],
        ),
    ] {
        let mut cmd = std::process::Command::new("unshare");
        cmd.args(args).arg(&exe);
        child_command(
            &mut cmd,
            "zombie-leader",
            &[
                ("LD_LIBRARY_PATH", folder),
                (
                    "FAKE_END_IN_CONSTRUCTOR",
                    std::ffi::OsStr::new("exit_thread"),
                ),
            ],
        );
        let out = run_bounded(cmd, "zombie-leader")?;
        println!("{case}:\n{out}");
        let gone = format!("later driver message {OWNER_GONE}");
        expect_lines(
            &out,
            &[
                "main thread is a zombie: true",
                "later cuInit(7) 303",
                gone.as_str(),
            ],
        )?;
        // In the namespace: PID 1, numbered otherwise by the host's /proc.
        let host = case == "the host's /proc";
        let line = out
            .lines()
            .find(|l| l.starts_with("pid "))
            .ok_or_else(|| format!("no pid line:\n{out}"))?;
        if host == (line == "pid 1 /proc's 1") {
            return Err(format!("{case}: /proc's numbering not as expected: {line}").into());
        }
    }
    Ok(Completion::Completed)
}

/// An `LD_PRELOAD` takes every `pthread` key before `main`, and a driver's
/// `cuGetProcAddress` calls the crate back at every lookup: the depth is
/// kept in the loader's own table keyed by thread id, so the lookups nest
/// to the bound (the deepest told 303) and the first call gets the
/// driver's answer. The loader of before kept no depth without a key and
/// recursed until the stack overflowed (the wrong twin: the child dies,
/// rc 134). The twin: the same driver without the shim is bounded the
/// same.
pub fn the_lookup_bound_holds_with_no_thread_key_left() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("the fake's call back is set as an address in this process") {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    let (_k, shim) = shared_library_with(
        "keys-shim",
        &fixture("keys_shim.c"),
        &["-pthread"],
        "libkeys_shim.so",
        None,
    )?;
    let folder = driver.parent().unwrap().as_os_str();
    for keys_taken in [true, false] {
        let mut env = vec![
            ("LD_LIBRARY_PATH", folder),
            ("FAKE_CALLBACK_AT", std::ffi::OsStr::new("lookup")),
            ("FAKE_CALLBACK_EVERY", std::ffi::OsStr::new("1")),
        ];
        if keys_taken {
            env.push(("LD_PRELOAD", shim.as_os_str()));
        }
        let out = child_with("deep-lookup", &env)?;
        println!("every key taken: {keys_taken}\n{out}");
        if keys_taken && !out.lines().any(|l| l.starts_with("keys shim: took ")) {
            return Err(format!("the shim took no keys:\n{out}").into());
        }
        expect_lines(&out, &["cuInit(7) 0", "cuInit(0) 1"])?;
        let count = |label: &str| -> Result<usize, Failed> {
            out.lines()
                .find_map(|l| l.strip_prefix(label))
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| format!("no {label:?} line:\n{out}").into())
        };
        let (made, told) = (count("callbacks made ")?, count("callbacks told 303 ")?);
        // The load's own lookup (303: being loaded), the nested ones, the
        // deepest told 303 at the bound.
        if told < 2 || made > 2 + 8 {
            return Err(format!("{made} call backs, {told} told 303:\n{out}").into());
        }
    }
    Ok(Completion::Completed)
}
