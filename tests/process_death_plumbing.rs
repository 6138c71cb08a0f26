//! The process-death plumbing of `tests/common/process_death.rs`, proven
//! without a GPU: the same scenarios run with a stand-in for the shared
//! memory (a `memfd`, which is reference counted like a VMM handle), so the
//! handshake, descriptor passing, SIGKILL and `waitpid`, timeouts, and the
//! checks that must fail (a wrong read after a death, memory that does not
//! come back) are exercised on every machine, CI included.
//!
//! The scenarios are Unix only (`memfd`, `SCM_RIGHTS`, SIGKILL): on Windows
//! each is listed and reported ignored with the reason.
mod common;

use common::process_death as pd;
use common::TestResult;
use libtest_mimic::{Arguments, Completion, Trial};

/// The scenario tests by name: on Unix each runs `plumbing::<name>`,
/// elsewhere it is listed and reported ignored ([`scenario`]).
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        vec![$({
            #[cfg(unix)]
            let body = Some(plumbing::$name as fn() -> TestResult);
            #[cfg(not(unix))]
            let body = None;
            scenario(stringify!($name), body)
        }),*]
    };
}

/// A scenario's trial: its body, or, where it has none (off Unix), reported
/// ignored with [`common::POSIX_ONLY`].
fn scenario(name: &'static str, body: Option<fn() -> TestResult>) -> Trial {
    match body {
        Some(f) => Trial::test(name, f),
        None => Trial::ignorable_test(name, || Ok(Completion::ignored_with(common::POSIX_ONLY))),
    }
}

fn main() {
    #[cfg(unix)]
    common::run_host_child_role(&[
        ("fake_exporter", plumbing::fake_exporter),
        ("fake_importer", plumbing::fake_importer),
        ("silent", plumbing::silent),
    ]);
    let mut trials = scenarios![
        exporter_killed_importer_reads_on,
        descriptor_after_its_sender_died_imports,
        a_killed_importer_is_reaped_as_sigkill,
        a_wrong_read_after_the_death_is_caught,
        memory_that_does_not_come_back_is_caught,
        a_silent_child_times_out_and_is_reaped,
    ];
    trials.push(Trial::test(
        "figures_are_one_line_each",
        figures_are_one_line_each,
    ));
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}

/// A figure line keeps one `key=value` per word, whatever the values hold.
fn figures_are_one_line_each() -> TestResult {
    let code = pd::code(cuda_mem_sys::CUDA_ERROR_INVALID_VALUE);
    ensure!(!code.contains(' '), "a code with a space: {code}");
    pd::figure("plumbing_figure", &[("a", "x y".into()), ("b", code)]);
    Ok(())
}

/// The scenarios, with a stand-in exporter and importer (Unix only).
#[cfg(unix)]
mod plumbing {
    use crate::common::process_death as pd;
    use crate::common::TestResult;
    use crate::ensure;
    use libtest_mimic::Failed;
    use std::fs::File;
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Set for the importer: its reads after the first return wrong bytes.
    const CORRUPT_VAR: &str = "CUDA_MEM_SYS_PLUMBING_CORRUPT";
    const BYTES: usize = 64 * 1024;

    /// Exporter stand-in: a memfd holding `pd::pattern(BYTES, pd::SEED)`.
    fn fake_export() -> Result<(i32, pd::Fields, Box<dyn std::any::Any>), Failed> {
        let fd = unsafe { libc::memfd_create(c"pd-plumbing".as_ptr(), 0) };
        if fd < 0 {
            return Err(format!("memfd_create: {}", std::io::Error::last_os_error()).into());
        }
        let dup = unsafe { libc::dup(fd) };
        let file = unsafe { File::from_raw_fd(dup) };
        file.write_all_at(&pd::pattern(BYTES, pd::SEED), 0)?;
        let mut f = pd::Fields::default();
        f.push("bytes", BYTES);
        f.push("seed", pd::SEED);
        Ok((fd, f, Box::new(file)))
    }

    pub fn fake_exporter() -> TestResult {
        pd::exporter_main(fake_export)
    }

    struct FakeHeld {
        file: File,
        reads: usize,
    }

    impl pd::Held for FakeHeld {
        fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
            let mut v = vec![0u8; n];
            self.file
                .read_exact_at(&mut v, 0)
                .map_err(|e| format!("pread:{e}"))?;
            self.reads += 1;
            if self.reads > 1 && std::env::var_os(CORRUPT_VAR).is_some() {
                v[7] ^= 0xff;
            }
            Ok(v)
        }
        fn release(self: Box<Self>) -> String {
            drop(self.file);
            "close:ok".into()
        }
    }

    pub fn fake_importer() -> TestResult {
        pd::importer_main(|fd, _| {
            Ok(Box::new(FakeHeld {
                file: unsafe { File::from_raw_fd(fd) },
                reads: 0,
            }))
        })
    }

    /// A child that never answers (until its socket closes).
    pub fn silent() -> TestResult {
        let mut link = pd::Link::from_parent()?;
        while link.recv()?.is_some() {}
        Ok(())
    }

    fn plenty() -> Result<usize, Failed> {
        Ok(1 << 30)
    }

    /// Free memory that drops by 8 MiB at every look: a leak.
    fn leaking() -> Result<usize, Failed> {
        static LOOKS: AtomicUsize = AtomicUsize::new(0);
        Ok((1usize << 40).saturating_sub(LOOKS.fetch_add(1, Ordering::Relaxed) * (8 << 20)))
    }

    fn gone(pid: u32) -> bool {
        (unsafe { libc::kill(pid as libc::pid_t, 0) }) == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }

    pub fn exporter_killed_importer_reads_on() -> TestResult {
        pd::exporter_killed(
            "plumbing_exporter_killed",
            "fake_exporter",
            "fake_importer",
            &[],
            true,
            plenty,
        )
    }

    pub fn descriptor_after_its_sender_died_imports() -> TestResult {
        pd::descriptor_after_sender_died(
            "plumbing_descriptor_after_sender_died",
            "fake_exporter",
            "fake_importer",
            &[],
            true,
            plenty,
        )
    }

    pub fn a_killed_importer_is_reaped_as_sigkill() -> TestResult {
        let (fd, fields, _keep) = fake_export()?;
        let spawned = pd::spawn_importer("fake_importer", &[], fd, &fields);
        unsafe { libc::close(fd) };
        let (mut importer, first) = spawned?;
        ensure!(first == pd::READ_OK, "the importer said {first}");
        let pid = importer.pid();
        let killed = importer.kill()?;
        ensure!(killed.starts_with("SIGKILL"), "kill said {killed}");
        ensure!(gone(pid), "pid {pid} still exists after the kill");
        Ok(())
    }

    pub fn a_wrong_read_after_the_death_is_caught() -> TestResult {
        let r = pd::exporter_killed(
            "plumbing_wrong_read",
            "fake_exporter",
            "fake_importer",
            &[(CORRUPT_VAR, "1".into())],
            true,
            plenty,
        );
        match r {
            Err(e)
                if e.message()
                    .unwrap_or("")
                    .contains("after the exporter died: reread=mismatch@7") =>
            {
                Ok(())
            }
            Err(e) => {
                Err(format!("failed for another reason: {}", e.message().unwrap_or("?")).into())
            }
            Ok(()) => Err("a wrong read after the exporter's death passed".into()),
        }
    }

    pub fn memory_that_does_not_come_back_is_caught() -> TestResult {
        let r = pd::exporter_killed(
            "plumbing_leak",
            "fake_exporter",
            "fake_importer",
            &[],
            true,
            leaking,
        );
        match r {
            Err(e) if e.message().unwrap_or("").contains("not returned") => Ok(()),
            Err(e) => {
                Err(format!("failed for another reason: {}", e.message().unwrap_or("?")).into())
            }
            Ok(()) => Err("free memory that kept dropping passed".into()),
        }
    }

    pub fn a_silent_child_times_out_and_is_reaped() -> TestResult {
        let mut peer = pd::Peer::spawn("silent", &[])?;
        peer.link.set_timeout(Duration::from_millis(300))?;
        let start = Instant::now();
        let r = peer.link.expect();
        let waited = start.elapsed();
        let pid = peer.pid();
        drop(peer);
        match r {
            Err(e) if e.message().unwrap_or("").contains("no answer") => {}
            Err(e) => {
                return Err(
                    format!("failed for another reason: {}", e.message().unwrap_or("?")).into(),
                )
            }
            Ok(line) => return Err(format!("a silent child answered {line:?}").into()),
        }
        ensure!(
            waited < Duration::from_secs(5),
            "the timeout took {waited:?}"
        );
        ensure!(
            gone(pid),
            "pid {pid} still exists after its Peer was dropped"
        );
        Ok(())
    }
}
