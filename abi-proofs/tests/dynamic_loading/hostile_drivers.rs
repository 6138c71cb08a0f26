//! Drivers built to break the loader, each case in a child process bounded
//! by a timeout, each with its twin: the main thread ending inside the load
//! (a zombie thread-group leader, which `tgkill` still answers), a forced
//! unwind (`pthread_exit` in the constructor), a `getenv` that calls back
//! while the environment is read (an `LD_PRELOAD` shim), a `libcuda.so.1`
//! already in the process beside the named driver, a lookup that calls back
//! at every call, a refused library whose constructor installed a signal
//! handler, and the exported `cuDriverGetVersion`'s answer.

use super::{
    child_with, expect_lines, fake_driver, fixture, linux_only, shared_library,
    shared_library_with, OWNER_GONE,
};
use libtest_mimic::{Completion, Failed};
use std::ffi::OsStr;

/// The main thread loads the driver, and the driver's constructor ends it
/// with the raw `exit` system call: the main thread stays a zombie (the
/// thread-group leader, while another thread runs), and `tgkill` on a
/// zombie succeeds, so a later call on the other thread waited forever. It
/// must get 303 at once, `driver()` saying the loading thread is gone. The
/// twin: the same load finishing; the later call gets the driver's answer.
/// The wrong twin, the liveness asked of `tgkill` alone, hangs (the child's
/// watchdog says "later call hung" and fails).
pub fn a_zombie_main_thread_that_was_loading_gives_303_not_a_hang() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("a zombie thread-group leader and /proc are Linux's") {
        return Ok(c);
    }
    constructor_ending(
        "zombie-leader",
        "exit_thread",
        "the main thread ends in the constructor",
        [
            vec![
                "main thread is a zombie: true".to_string(),
                "later cuInit(7) 303".to_string(),
                format!("later driver message {OWNER_GONE}"),
            ],
            vec![
                "main cuInit(7) 0".to_string(),
                "later cuInit(7) 0".to_string(),
            ],
        ],
        |_| Ok(()),
    )?;
    Ok(Completion::Completed)
}

/// Runs `role` twice with the fake driver on the library path: its
/// constructor ending the loading thread by `how` (`FAKE_END_IN_CONSTRUCTOR`),
/// then, the twin, not; each run must print its lines of `expect` (the
/// ending's, the twin's) and pass `check`.
fn constructor_ending(
    role: &str,
    how: &str,
    label: &str,
    expect: [Vec<String>; 2],
    check: impl Fn(&str) -> Result<(), Failed>,
) -> Result<(), Failed> {
    let (_s, driver) = fake_driver(&[])?;
    let folder = driver.parent().unwrap().as_os_str();
    for (ends, expect) in [true, false].into_iter().zip(expect) {
        let mut env = vec![("LD_LIBRARY_PATH", folder)];
        if ends {
            env.push(("FAKE_END_IN_CONSTRUCTOR", OsStr::new(how)));
        }
        let out = child_with(role, &env)?;
        println!("{label}: {ends}\n{out}");
        let lines: Vec<&str> = expect.iter().map(String::as_str).collect();
        expect_lines(&out, &lines)?;
        check(&out)?;
    }
    Ok(())
}

/// A `pthread_create`d thread loads the driver, and the constructor ends it
/// with `pthread_exit`: a forced unwind through the loader's frames. Once
/// that thread is gone (joined), a call gets 303 and `driver()` says the
/// loading thread no longer exists, where it said the load panicked. The
/// twin: the same thread finishing the load; the later call gets the
/// driver's answer.
pub fn a_forced_unwind_in_the_constructor_is_told_as_the_thread_ending(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("pthread_exit's forced unwind is glibc's") {
        return Ok(c);
    }
    constructor_ending(
        "forced-unwind",
        "pthread_exit",
        "pthread_exit in the constructor",
        [
            vec![
                "loading thread joined".to_string(),
                "later cuInit(7) 303".to_string(),
                format!("later driver message {OWNER_GONE}"),
            ],
            vec![
                "loading thread joined".to_string(),
                "later cuInit(7) 0".to_string(),
                "later driver Ok libcuda.so.1".to_string(),
            ],
        ],
        |out| {
            if out.contains("panicked") {
                return Err(format!("the forced unwind is told as a panic:\n{out}").into());
            }
            Ok(())
        },
    )?;
    Ok(Completion::Completed)
}

/// An `LD_PRELOAD` shim's `getenv` calls back into the crate (`cuInit`,
/// then `driver()`) while the crate reads `CUDA_MEM_SYS_LIBCUDA` at program
/// start. The call back gets 303 and is told that the environment is being
/// read; no load is left behind: the later call loads the named driver
/// (0), and `driver()` says the variable was used. The loader of before
/// claimed the driver's load first and finished it failed: every later
/// call 303, `variable` Unset (the wrong twin this test caught). The twin:
/// without the shim the same program loads the same driver.
pub fn a_getenv_calling_back_while_the_environment_is_read_leaves_no_failed_load(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("an LD_PRELOAD getenv and .init_array are ELF's") {
        return Ok(c);
    }
    let (_d, driver) = fake_driver(&[])?;
    let (_s, shim) = shared_library_with(
        "getenv-shim",
        &fixture("getenv_shim.c"),
        &[],
        "libgetenv_shim.so",
        None,
    )?;
    let named = format!("driver Ok {}", driver.display());
    for preload in [true, false] {
        let mut env = vec![("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str())];
        if preload {
            env.push(("LD_PRELOAD", shim.as_os_str()));
        }
        let out = child_with("getenv-reentry", &env)?;
        println!("getenv calls back: {preload}\n{out}");
        let mut lines = vec!["later cuInit(7) 0", named.as_str(), "driver variable Used"];
        if preload {
            lines.extend([
                "called back during the environment's read: true",
                "callback cuInit(0) 303",
                "callback driver variable Unset attempts 0 empty true",
            ]);
            let why = out
                .lines()
                .find_map(|l| l.strip_prefix("callback driver message "))
                .ok_or_else(|| format!("the call back's driver() is not an error:\n{out}"))?;
            if !why.contains("is being read by this very thread") {
                return Err(format!("the call back is not told why: {why}").into());
            }
        } else {
            lines.push("called back during the environment's read: false");
        }
        expect_lines(&out, &lines)?;
    }
    Ok(Completion::Completed)
}

/// `LD_PRELOAD` puts one fake `libcuda.so.1` in the process and
/// `CUDA_MEM_SYS_LIBCUDA` names another file: the runtime's own
/// `dlopen("libcuda.so.1")` gets the preloaded one, so the named one is
/// refused (303), `driver()` naming both paths. The loader of before loaded
/// the named file beside it and reported it (the wrong twin: "driver Ok"
/// fails this). The twins: the preloaded file is the named one, by its
/// path or by a link to it (the same inode): taken.
pub fn a_named_driver_beside_another_loaded_libcuda_so_1_is_refused_naming_both(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("RTLD_NOLOAD and SONAME lookup are ELF's") {
        return Ok(c);
    }
    let (_a, preloaded) = fake_driver(&[])?;
    let (b, named) = fake_driver(&[])?;
    let out = child_with(
        "bad-driver",
        &[
            ("LD_PRELOAD", preloaded.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDA", named.as_os_str()),
        ],
    )?;
    println!("another libcuda.so.1 preloaded:\n{out}");
    expect_lines(&out, &["cuInit 303 303", "driver variable Used"])?;
    let why = out
        .lines()
        .find_map(|l| l.strip_prefix("driver Err "))
        .ok_or_else(|| format!("the named driver was taken beside the preloaded one:\n{out}"))?;
    for path in [&preloaded, &named] {
        if !why.contains(&path.display().to_string()) {
            return Err(format!("the message does not name {}: {why}", path.display()).into());
        }
    }
    // The loaded one by its path alone, as the dynamic loader opened it.
    let loaded = format!("already in the process: {} (preloaded", preloaded.display());
    if !why.contains(&loaded) {
        return Err(format!("the message does not say {loaded:?}: {why}").into());
    }
    let link = b.path().join("link-to-named.so");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&named, &link).map_err(|e| e.to_string())?;
    for (case, preload) in [("the named file", &named), ("a link to it", &link)] {
        let out = child_with(
            "bad-driver",
            &[
                ("LD_PRELOAD", preload.as_os_str()),
                ("CUDA_MEM_SYS_LIBCUDA", named.as_os_str()),
            ],
        )?;
        println!("{case} preloaded:\n{out}");
        let taken = format!("driver Ok {}", named.display());
        expect_lines(&out, &["cuInit 1 1", taken.as_str()])?;
    }
    // A bare name (no `/`: not a path) is the object opened by that file
    // name: `libcuda.so.1` names the preloaded `<dir>/libcuda.so.1`, which
    // is taken; the twin, another bare name (`libcuda.so`), is refused
    // beside it.
    for (bare, taken) in [("libcuda.so.1", true), ("libcuda.so", false)] {
        let out = child_with(
            "bad-driver",
            &[
                ("LD_PRELOAD", preloaded.as_os_str()),
                ("CUDA_MEM_SYS_LIBCUDA", OsStr::new(bare)),
            ],
        )?;
        println!("{bare} named, {} preloaded:\n{out}", preloaded.display());
        if taken {
            expect_lines(&out, &["cuInit 1 1"])?;
        } else {
            // Refused by the one-driver check, not by a search that finds
            // no `libcuda.so` (the same code, another reason).
            expect_lines(&out, &["cuInit 303 303"])?;
            let refused = out
                .lines()
                .find_map(|l| l.strip_prefix("driver Err "))
                .is_some_and(|why| why.contains("another libcuda.so.1 is already in the process"));
            if !refused {
                return Err(
                    format!("{bare} was not refused beside the preloaded driver:\n{out}").into(),
                );
            }
        }
    }
    // A bare name that is the preloaded object's own file name (not its
    // `SONAME`): that object, taken. The mutants this kills read the file
    // name wrong (the base name after the last `/`) or took either test
    // for both.
    let (_c, fake) = shared_library_with(
        "fake-driver-by-name",
        &fixture("fake_libcuda.c"),
        &[],
        "libcuda-by-name.so",
        Some("libcuda.so.1"),
    )?;
    let out = child_with(
        "bad-driver",
        &[
            ("LD_PRELOAD", fake.as_os_str()),
            // Where the dynamic loader's search finds that file again.
            ("LD_LIBRARY_PATH", fake.parent().unwrap().as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDA", OsStr::new("libcuda-by-name.so")),
        ],
    )?;
    println!(
        "libcuda-by-name.so named, {} preloaded:\n{out}",
        fake.display()
    );
    expect_lines(&out, &["cuInit 1 1"])?;
    Ok(Completion::Completed)
}

/// A driver whose `cuGetProcAddress` calls back into the crate at every
/// lookup (the call back makes a call whose function is not resolved yet,
/// so it looks up again): the lookups nest on one thread until the bound,
/// 8 deep exactly (the 9th is refused: the 8th lookup's call back is told
/// 303; 9 call backs in all, the load's included); the outer ones then
/// resolve, and the
/// first call gets the driver's answer. The loader of before recursed until
/// the stack overflowed (the wrong twin: the child dies). The twin: the
/// same driver calling back once resolves with a single 303 (from the load).
pub fn a_lookup_calling_back_every_time_is_bounded_not_a_stack_overflow(
) -> Result<Completion, Failed> {
    if let Some(c) = linux_only("the fake's call back is set as an address in this process") {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    let folder = driver.parent().unwrap().as_os_str();
    for every in [true, false] {
        let mut env = vec![
            ("LD_LIBRARY_PATH", folder),
            ("FAKE_CALLBACK_AT", OsStr::new("lookup")),
        ];
        if every {
            env.push(("FAKE_CALLBACK_EVERY", OsStr::new("1")));
        }
        let out = child_with("deep-lookup", &env)?;
        println!("calls back at every lookup: {every}\n{out}");
        expect_lines(&out, &["cuInit(7) 0", "cuInit(0) 1"])?;
        let count = |label: &str| -> Result<usize, Failed> {
            out.lines()
                .find_map(|l| l.strip_prefix(label))
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| format!("no {label:?} line:\n{out}").into())
        };
        let (made, told) = (count("callbacks made ")?, count("callbacks told 303 ")?);
        if every {
            // One call back from the load's own lookup (told 303: being
            // loaded), then one from each nested lookup: 8 resolve (the
            // documented bound, `MAX_LOOKUP_DEPTH`), and the 8th's call back
            // is refused the 9th lookup (told 303). Exactly: a bound of 7 or
            // 9 makes 8 or 10 call backs.
            const DEPTH: usize = 8;
            if (made, told) != (1 + DEPTH, 1 + 1) {
                return Err(format!(
                    "{made} call backs, {told} told 303, not {} and 2 ({DEPTH} nested lookups \
                     resolving, the {}th told 303):\n{out}",
                    1 + DEPTH,
                    DEPTH + 1
                )
                .into());
            }
        } else if (made, told) != (1, 1) {
            return Err(format!("{made} call backs, {told} told 303:\n{out}").into());
        }
    }
    Ok(Completion::Completed)
}

/// A library without `cuGetProcAddress`, named as the driver, whose
/// constructor installed a `SIGUSR1` handler: refused (303), and left
/// loaded as every refused library is (its code has run), so the signal
/// reaches its handler. The loader of before unloaded this one (and only
/// this one): the signal then jumped to unmapped code (the wrong twin: the
/// child dies of SIGSEGV). The twin: the same library refused for another
/// `SONAME` (always left loaded) runs its handler too.
pub fn a_refused_library_stays_loaded_its_signal_handler_runs() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("the fake installs a POSIX signal handler") {
        return Ok(c);
    }
    let src = fixture("fake_libcuda.c");
    let (_n, no_lookup) = shared_library("no-lookup", &src, &["-DFAKE_NO_PROC_ADDRESS"])?;
    let (_o, other_soname) = shared_library_with(
        "other-soname",
        &src,
        &[],
        "libcuda.so.1",
        Some("libcuda-other.so.1"),
    )?;
    for (case, lib, says) in [
        (
            "no cuGetProcAddress",
            &no_lookup,
            "exports neither cuGetProcAddress_v2 nor cuGetProcAddress",
        ),
        (
            "another SONAME",
            &other_soname,
            "SONAME is libcuda-other.so.1",
        ),
    ] {
        let out = child_with(
            "refused-handler",
            &[
                ("CUDA_MEM_SYS_LIBCUDA", lib.as_os_str()),
                ("FAKE_SIGNAL_HANDLER", OsStr::new("1")),
            ],
        )?;
        println!("{case}:\n{out}");
        expect_lines(
            &out,
            &["cuInit 303", "signal handler ran", "after the signal"],
        )?;
        if !out.contains(says) {
            return Err(format!("{case}: not refused for {says:?}:\n{out}").into());
        }
    }
    Ok(Completion::Completed)
}

/// A driver whose `cuGetProcAddress` does not find `cuDriverGetVersion`:
/// the exported symbol is asked (it tells NVIDIA's stub), and its answer is
/// the driver's version, where the loader of before threw it away (`None`:
/// the wrong twin). The twin: an exported `cuDriverGetVersion` that fails
/// gives no version.
pub fn the_exported_cudrivergetversion_answer_is_kept() -> Result<Completion, Failed> {
    if let Some(c) = super::needs_feature() {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    for (fails, expect) in [
        (false, "driver version Some(12080)"),
        (true, "driver version None"),
    ] {
        let mut env = vec![
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_NO_VERSION_LOOKUP", OsStr::new("1")),
            ("FAKE_DRIVER_VERSION", OsStr::new("12080")),
        ];
        if fails {
            env.push(("FAKE_NO_DRIVER_VERSION", OsStr::new("1")));
        }
        let out = child_with("version", &env)?;
        println!("the exported cuDriverGetVersion fails: {fails}\n{out}");
        expect_lines(&out, &[expect])?;
    }
    Ok(Completion::Completed)
}

/// Runs `role` where it is one of this file's (Linux only); `false`
/// otherwise.
#[cfg(feature = "dynamic-loading")]
pub fn run_role(role: &str) -> bool {
    #[cfg(target_os = "linux")]
    return roles::run(role);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = role;
        false
    }
}

#[cfg(all(feature = "dynamic-loading", target_os = "linux"))]
mod roles {
    use crate::roles::{report_driver, report_later};
    use cuda_mem_sys::loader;
    use cuda_mem_sys::*;
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    /// What the call back made during the environment's read saw.
    static DURING_READ: OnceLock<(i32, String, String)> = OnceLock::new();

    /// Called back by the getenv shim while the crate reads
    /// `CUDA_MEM_SYS_LIBCUDA` (before `main`): a call, and what `driver()`
    /// says, kept for the role to print.
    extern "C" fn during_the_environment_read() -> c_int {
        let r = unsafe { cuInit(0).0 } as i32;
        let (message, variable) = match loader::driver() {
            Ok(l) => (format!("Ok {}", l.file), format!("{:?}", l.variable)),
            // No file tried: the load was not made (`Attempts::is_empty`).
            Err(e) => (
                e.message.to_string(),
                format!(
                    "{:?} attempts {} empty {}",
                    e.variable,
                    e.attempts.len(),
                    e.attempts.is_empty()
                ),
            ),
        };
        let _ = DURING_READ.set((r, message, variable));
        0
    }

    /// Registers the call back with the getenv shim where it is preloaded,
    /// before the crate's own `.init_array` entry reads the environment
    /// (a numbered `.init_array` section runs before the plain ones).
    extern "C" fn register_with_the_getenv_shim() {
        type Register = unsafe extern "C" fn(extern "C" fn() -> c_int);
        // SAFETY: a name looked up; the shim's function has this type.
        unsafe {
            let f = libc::dlsym(libc::RTLD_DEFAULT, c"getenv_shim_register".as_ptr());
            if !f.is_null() {
                std::mem::transmute::<*mut c_void, Register>(f)(during_the_environment_read);
            }
        }
    }

    #[used]
    #[link_section = ".init_array.00101"]
    static REGISTER_WITH_THE_GETENV_SHIM: extern "C" fn() = register_with_the_getenv_shim;

    fn getenv_reentry() {
        match DURING_READ.get() {
            Some((r, message, variable)) => {
                println!("called back during the environment's read: true");
                println!("callback cuInit(0) {r}");
                println!("callback driver message {message}");
                println!("callback driver variable {variable}");
            }
            None => println!("called back during the environment's read: false"),
        }
        println!("later cuInit(7) {}", unsafe { cuInit(7).0 });
        report_driver();
    }

    /// The state letter of this process's thread `tid`.
    fn task_state(tid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..].trim_start().chars().next()
    }

    /// Waits until `flag` is set.
    fn until(flag: &AtomicBool) {
        while !flag.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Exits the process (failing) `secs` after `armed` is set, unless it
    /// ended before. Started, and past its first print, before the load: a
    /// thread that ended inside `dlopen` holds the dynamic loader's lock,
    /// which a thread's first use of a thread-local with a destructor (a
    /// first print) takes.
    fn watchdog(what: &'static str, secs: u64, armed: &'static AtomicBool) {
        static READY: AtomicBool = AtomicBool::new(false);
        std::thread::spawn(move || {
            println!("watchdog ready");
            READY.store(true, Ordering::SeqCst);
            while !armed.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_secs(secs));
            println!("{what} hung");
            unsafe { libc::_exit(1) };
        });
        until(&READY);
    }

    /// See `a_zombie_main_thread_that_was_loading_gives_303_not_a_hang`.
    fn zombie_leader() {
        static FINISHED: AtomicBool = AtomicBool::new(false);
        static LATER_CALL: AtomicBool = AtomicBool::new(false);
        watchdog("later call", 10, &LATER_CALL);
        static LATER_READY: AtomicBool = AtomicBool::new(false);
        // The main thread's id as /proc numbers it: /proc/self's, which is
        // the host's where /proc is (a PID namespace without its own /proc).
        let leader = std::fs::read_link("/proc/self")
            .ok()
            .and_then(|p| p.to_str()?.parse::<u32>().ok())
            .unwrap_or(std::process::id());
        println!("pid {} /proc's {leader}", std::process::id());
        let later = std::thread::spawn(move || {
            // Past its first print before the main thread loads (see
            // `watchdog`).
            println!("later thread ready");
            LATER_READY.store(true, Ordering::SeqCst);
            let start = Instant::now();
            loop {
                if FINISHED.load(Ordering::SeqCst) {
                    break;
                }
                if task_state(leader) == Some('Z') {
                    println!("main thread is a zombie: true");
                    break;
                }
                if start.elapsed() > Duration::from_secs(10) {
                    println!("the main thread neither ended nor finished its load");
                    unsafe { libc::_exit(1) };
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            LATER_CALL.store(true, Ordering::SeqCst);
            report_later(unsafe { cuInit(7).0 } as c_int);
            // The main thread may hold the dynamic loader's lock (it ended
            // inside dlopen): no exit handlers.
            unsafe { libc::_exit(0) };
        });
        until(&LATER_READY);
        let r = unsafe { cuInit(7).0 };
        println!("main cuInit(7) {r}");
        FINISHED.store(true, Ordering::SeqCst);
        let _ = later.join();
    }

    extern "C" fn load_on_this_thread(_: *mut c_void) -> *mut c_void {
        let _ = unsafe { cuInit(7) };
        std::ptr::null_mut()
    }

    /// See `a_forced_unwind_in_the_constructor_is_told_as_the_thread_ending`.
    fn forced_unwind() {
        static ARMED: AtomicBool = AtomicBool::new(true);
        watchdog("the forced unwind's role", 20, &ARMED);
        let mut t: libc::pthread_t = 0;
        // SAFETY: a thread running an `extern "C"` function, joined below.
        unsafe {
            assert_eq!(
                libc::pthread_create(
                    &mut t,
                    std::ptr::null(),
                    load_on_this_thread,
                    std::ptr::null_mut()
                ),
                0
            );
            assert_eq!(libc::pthread_join(t, std::ptr::null_mut()), 0);
        }
        println!("loading thread joined");
        report_later(unsafe { cuInit(7).0 } as c_int);
        // The ended thread may hold the dynamic loader's lock.
        unsafe { libc::_exit(0) };
    }

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static TOLD_303: AtomicUsize = AtomicUsize::new(0);

    /// Called back from the fake's lookups: a call whose function is not
    /// resolved yet (while its own lookup runs), counted.
    extern "C" fn call_back_from_the_lookup() -> c_int {
        let r = unsafe { cuInit(0).0 };
        CALLS.fetch_add(1, Ordering::SeqCst);
        if r == 303 {
            TOLD_303.fetch_add(1, Ordering::SeqCst);
        }
        0
    }

    /// See `a_lookup_calling_back_every_time_is_bounded_not_a_stack_overflow`.
    fn deep_lookup() {
        std::env::set_var(
            "FAKE_CALLBACK",
            format!("{:x}", call_back_from_the_lookup as *const () as usize),
        );
        let r = unsafe { cuInit(7).0 };
        println!("cuInit(7) {r}");
        println!("callbacks made {}", CALLS.load(Ordering::SeqCst));
        println!("callbacks told 303 {}", TOLD_303.load(Ordering::SeqCst));
        println!("cuInit(0) {}", unsafe { cuInit(0).0 });
    }

    /// See `a_refused_library_stays_loaded_its_signal_handler_runs`.
    fn refused_handler() {
        println!("cuInit {}", unsafe { cuInit(0).0 });
        report_driver();
        unsafe { libc::raise(libc::SIGUSR1) };
        println!("after the signal");
    }

    /// The roles of this file; `false` where `role` is another's.
    pub fn run(role: &str) -> bool {
        match role {
            "getenv-reentry" => getenv_reentry(),
            "zombie-leader" => zombie_leader(),
            "forced-unwind" => forced_unwind(),
            "deep-lookup" => deep_lookup(),
            "refused-handler" => refused_handler(),
            "version" => match loader::driver() {
                Ok(l) => println!("driver version {:?}", l.version),
                Err(e) => println!("driver Err {}", e.message),
            },
            _ => return false,
        }
        true
    }
}
