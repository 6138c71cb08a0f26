//! The process-death scenarios' peers: a child of the test binary with a
//! Unix socket to it ([`Peer`], [`Link`]), the importer and exporter bodies,
//! and the three scenarios. Unix only (descriptors with `SCM_RIGHTS`,
//! SIGKILL and `waitpid`).

use super::super::fd_passing::{child_socket, inheritable, recv_fd, send_fd, socket_pair};
use super::super::spawn_child;
use super::*;
use crate::ensure;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};

/// One end of the socket between the test and a child.
pub struct Link {
    sock: UnixStream,
    peer: String,
    timeout: Duration,
}

impl Link {
    /// The child's end, passed by [`Peer::spawn`] (no read timeout: a child
    /// waits for its parent's next word until the parent closes or kills it).
    pub fn from_parent() -> Result<Link, Failed> {
        Ok(Link {
            sock: child_socket(PEER_SOCK_VAR)?,
            peer: "the test process".into(),
            timeout: Duration::ZERO,
        })
    }

    pub fn send_fd(&self, fd: RawFd) -> TestResult {
        send_fd(&self.sock, fd)
            .map_err(|e| format!("sending descriptor {fd} to {}: {e}", self.peer))?;
        Ok(())
    }

    pub fn recv_fd(&self) -> Result<RawFd, Failed> {
        recv_fd(&self.sock)
            .map_err(|e| format!("receiving a descriptor from {}: {e}", self.peer).into())
    }

    pub fn send(&mut self, line: &str) -> TestResult {
        self.sock
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("telling {} {line:?}: {e}", self.peer))?;
        Ok(())
    }

    /// The next line, `None` once the other side has closed (or died).
    pub fn recv(&mut self) -> Result<Option<String>, Failed> {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        loop {
            match self.sock.read(&mut b) {
                Ok(0) if line.is_empty() => return Ok(None),
                Ok(0) => break,
                Ok(_) if b[0] == b'\n' => break,
                Ok(_) => line.push(b[0]),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(format!(
                        "no answer from {} within {:.1} s",
                        self.peer,
                        self.timeout.as_secs_f64()
                    )
                    .into())
                }
                Err(e) => return Err(format!("reading from {}: {e}", self.peer).into()),
            }
        }
        Ok(Some(String::from_utf8_lossy(&line).into_owned()))
    }

    /// The next line; the other side closing first is a failure.
    pub fn expect(&mut self) -> Result<String, Failed> {
        self.recv()?
            .ok_or_else(|| format!("{} closed the socket without answering", self.peer).into())
    }

    pub fn send_fields(&mut self, fields: &Fields) -> TestResult {
        for (k, v) in &fields.0 {
            self.send(&format!("{k}={v}"))?;
        }
        self.send("end")
    }

    pub fn recv_fields(&mut self) -> Result<Fields, Failed> {
        let mut f = Fields::default();
        loop {
            let line = self.expect()?;
            if line == "end" {
                return Ok(f);
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("{} sent {line:?}, not key=value", self.peer))?;
            f.push(k, v);
        }
    }
}

/// A child process of this test binary in some role, with its socket. Dropping
/// it kills and reaps the child, so no failure path leaves one behind.
pub struct Peer {
    pub role: String,
    pub link: Link,
    child: Option<Child>,
}

impl Link {
    /// How long [`Link::recv`] waits (the test side: [`REPLY_TIMEOUT`]).
    pub fn set_timeout(&mut self, t: Duration) -> TestResult {
        self.sock.set_read_timeout(Some(t))?;
        self.timeout = t;
        Ok(())
    }
}

impl Peer {
    pub fn spawn(role: &str, env: &[(&str, String)]) -> Result<Peer, Failed> {
        let (mine, theirs) = socket_pair()?;
        mine.set_read_timeout(Some(REPLY_TIMEOUT))?;
        let n = inheritable(&theirs);
        let mut env = env.to_vec();
        env.push((PEER_SOCK_VAR, n.to_string()));
        let child = spawn_child(role, &env);
        drop(theirs);
        Ok(Peer {
            role: role.into(),
            link: Link {
                sock: mine,
                peer: format!("child {role} (pid {})", child.id()),
                timeout: REPLY_TIMEOUT,
            },
            child: Some(child),
        })
    }

    /// Sends `line` and returns the answer; a failure is the answer
    /// `<key>=failed:<why>` (recorded in a figure, as the child's death is).
    pub fn ask(&mut self, line: &str, key: &str) -> String {
        let answer = self.link.send(line).and_then(|()| self.link.expect());
        answer.unwrap_or_else(|e| format!("{key}=failed:{}", message(e)))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// SIGKILL, then `waitpid` (bounded); fails unless the child died of it.
    pub fn kill(&mut self) -> Result<String, Failed> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| format!("{} was already gone", self.role))?;
        let pid = child.id() as libc::pid_t;
        let sent = unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
        let e = std::io::Error::last_os_error();
        ensure!(sent, "kill({pid}, SIGKILL): {e}");
        let status = wait_bounded(&mut child, &self.role)?;
        let role = &self.role;
        let killed = status.signal() == Some(libc::SIGKILL);
        ensure!(
            killed,
            "{role} (pid {pid}) ended with {status}, not SIGKILL"
        );
        Ok(format!("SIGKILL(pid{pid})"))
    }

    /// Closes the socket and waits (bounded) for the child; fails unless it exited 0.
    pub fn finish(mut self) -> TestResult {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| format!("{} was already gone", self.role))?;
        let _ = self.link.sock.shutdown(std::net::Shutdown::Both);
        let status = wait_bounded(&mut child, &self.role)?;
        ensure!(status.success(), "child {} exited with {status}", self.role);
        Ok(())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `waitpid` with a deadline: a child that does not end in [`EXIT_TIMEOUT`] is
/// killed and the test fails.
fn wait_bounded(child: &mut Child, role: &str) -> Result<ExitStatus, Failed> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if start.elapsed() > EXIT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "child {role} did not exit within {} s (killed)",
                EXIT_TIMEOUT.as_secs()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What an importer child holds: it can read the shared bytes again and
/// release everything it imported.
pub trait Held {
    /// The `n` shared bytes, or the error code of the failed read.
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String>;
    /// Releases in the documented order; returns each step's code, as
    /// `step:code,step:code`.
    fn release(self: Box<Self>) -> String;
}

/// An importer: from the received descriptor and fields to what it holds, or
/// the error code of the import. It owns the descriptor (closes it, or hands
/// it to the driver where the import takes ownership).
pub type Importer = fn(RawFd, &Fields) -> Result<Box<dyn Held>, String>;

/// The body of an importer child role: receives a descriptor and fields,
/// imports and reads (`imported=ok read=match` or `imported=<code>`), then
/// obeys `reread` and `quit` (`released=...`) until its parent closes the
/// socket, or kills it.
pub fn importer_main(import: Importer) -> TestResult {
    let mut link = Link::from_parent()?;
    let fd = link.recv_fd()?;
    let fields = link.recv_fields()?;
    let want = pattern(
        fields.number("bytes")? as usize,
        fields.number("seed")? as u32,
    );
    let mut held = match import(fd, &fields) {
        Ok(held) => held,
        Err(code) => {
            link.send(&format!("imported={code}"))?;
            while let Some(cmd) = link.recv()? {
                if cmd == "quit" {
                    link.send("released=nothing")?;
                    break;
                }
                link.send(&format!("{cmd}=nothing-imported"))?;
            }
            return Ok(());
        }
    };
    let first = compare(held.read(want.len()), &want);
    link.send(&format!("imported=ok read={first}"))?;
    loop {
        match link.recv()?.as_deref() {
            Some("reread") => {
                let again = compare(held.read(want.len()), &want);
                link.send(&format!("reread={again}"))?;
            }
            Some("quit") => {
                let released = held.release();
                link.send(&format!("released={released}"))?;
                return Ok(());
            }
            // The test process closed the socket (it failed, or is done).
            None => {
                held.release();
                return Ok(());
            }
            Some(other) => return Err(format!("importer: unknown command {other:?}").into()),
        }
    }
}

/// An exporter: allocates, writes `pattern(bytes, seed)`, exports a
/// descriptor; returns it, the fields for the importer (at least `bytes` and
/// `seed`), and what must stay alive while the exporter lives.
pub type Exporter = fn() -> Result<(RawFd, Fields, Box<dyn std::any::Any>), Failed>;

/// The body of an exporter child role: exports, sends the descriptor and the
/// fields, closes its own copy of the descriptor, then holds everything until
/// told `quit`, the socket closes, or it is killed.
pub fn exporter_main(export: Exporter) -> TestResult {
    let mut link = Link::from_parent()?;
    let (fd, fields, keep) = export()?;
    link.send_fd(fd)?;
    unsafe { libc::close(fd) };
    link.send_fields(&fields)?;
    while let Some(cmd) = link.recv()? {
        if cmd == "quit" {
            break;
        }
    }
    drop(keep);
    Ok(())
}

/// Spawns importer `role`, hands it `fd` (the caller keeps its own copy) and
/// `fields`, and waits until it has imported and read: returns the child and
/// its first report.
pub fn spawn_importer(
    role: &str,
    env: &[(&str, String)],
    fd: RawFd,
    fields: &Fields,
) -> Result<(Peer, String), Failed> {
    let mut peer = Peer::spawn(role, env)?;
    peer.link.send_fd(fd)?;
    peer.link.send_fields(fields)?;
    let first = peer.link.expect()?;
    Ok((peer, first))
}

/// The first report an importer must give where the import is supposed to work.
pub const READ_OK: &str = "imported=ok read=match";

/// Starts exporter `role` and receives what it exported: the child, its
/// descriptor, its fields and their `bytes`.
fn spawn_exporter(
    role: &str,
    env: &[(&str, String)],
) -> Result<(Peer, RawFd, Fields, usize), Failed> {
    let mut e = Peer::spawn(role, env)?;
    let fd = e.link.recv_fd()?;
    let fields = e.link.recv_fields()?;
    let bytes = fields.number("bytes")? as usize;
    Ok((e, fd, fields, bytes))
}

/// Exporter child killed after exporting, importer child still mapped.
/// `documented` says whether NVIDIA documents that the importer's mapping
/// outlives the exporter (VMM handles are reference counted); where it does,
/// the importer's read after the death must match, else it is recorded. Both
/// ways the importer must exit 0 and the memory must come back.
pub fn exporter_killed(
    test: &str,
    exporter: &str,
    importer: &str,
    env: &[(&str, String)],
    documented: bool,
    probe: Probe,
) -> TestResult {
    let free0 = probe()?;
    let (mut e, fd, fields, bytes) = spawn_exporter(exporter, env)?;
    let imported = spawn_importer(importer, env, fd, &fields);
    unsafe { libc::close(fd) };
    let (mut i, first) = imported?;
    let free_both = probe()?;
    let killed = e.kill()?;
    // From here on every outcome is recorded in the figure, failures too: an
    // importer that crashes or hangs after the exporter's death is a finding.
    let after = i.ask("reread", "reread");
    let released = i.ask("quit", "released");
    let exit = i.finish();
    let (free_end, ms) = await_free(probe, free0, slack(bytes))?;
    figure(
        test,
        &[
            ("bytes", bytes.to_string()),
            ("free_before", mib(free0)),
            ("free_both_mapped", mib(free_both)),
            ("importer", first.clone()),
            ("exporter", killed),
            ("after_death", after.clone()),
            ("importer_release", released.clone()),
            ("importer_exit", exit_word(&exit)),
            ("free_end", mib(free_end)),
            ("returned_in_ms", ms.to_string()),
        ],
    );
    exit?;
    ensure!(
        first == READ_OK,
        "the importer before the exporter died: {first}"
    );
    if documented {
        ensure!(
            after == "reread=match",
            "the importer's mapping after the exporter died: {after} (VMM handles are reference counted)"
        );
    }
    ensure_returned(free0, free_end, slack(bytes), "after both processes ended")?;
    Ok(())
}

/// The exporter's side of [`importer_killed`], kept in the test process.
pub trait Exporting: Sized {
    /// The `n` shared bytes, as the exporter reads them.
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String>;
    /// The figure taken while both processes have the memory mapped.
    fn while_mapped(&self) -> Result<(&'static str, String), Failed> {
        Ok(("free_both_mapped", mib(free_memory()?)))
    }
    /// One round of the exporter going on after the importer's death: a new
    /// allocation written, read back and freed.
    fn go_on(&mut self, round: u32) -> TestResult;
    /// Releases everything: its figures, and whether the release was right.
    /// By default: the free memory while it still holds everything
    /// (`free_exporter_holding`), then dropped.
    fn release(self) -> (Vec<(&'static str, String)>, TestResult) {
        let held = free_memory().map(mib);
        drop(self);
        match held {
            Ok(held) => (vec![("free_exporter_holding", held)], Ok(())),
            Err(e) => (vec![], Err(e)),
        }
    }
}

/// The importer child is SIGKILLed while it holds a mapped import: the
/// exporter's bytes are intact, it keeps allocating and freeing, and once it
/// releases what it exported the memory comes back (`probe`).
pub fn importer_killed<E: Exporting>(
    test: &str,
    importer: &str,
    export: impl FnOnce() -> Result<(RawFd, Fields, E), Failed>,
    probe: Probe,
    released: &str,
) -> TestResult {
    let free0 = probe()?;
    let (fd, fields, mut kept) = export()?;
    let bytes = fields.number("bytes")? as usize;
    let imported = spawn_importer(importer, &[], fd, &fields);
    unsafe { libc::close(fd) };
    let (mut i, first) = imported?;
    let mapped = kept.while_mapped()?;
    let killed = i.kill()?;
    let intact = compare(kept.read(bytes), &pattern(bytes, SEED));
    let went_on = (0..4).try_for_each(|round| kept.go_on(round));
    let (release_figures, release) = kept.release();
    let (free_end, ms) = await_free(probe, free0, slack(bytes))?;
    let mut pairs = vec![
        ("bytes", bytes.to_string()),
        ("free_before", mib(free0)),
        mapped,
        ("importer", first.clone()),
        ("importer_killed", killed),
        ("exporter_data_after", intact.clone()),
    ];
    pairs.extend(release_figures);
    pairs.push(("free_after_release", mib(free_end)));
    pairs.push(("returned_in_ms", ms.to_string()));
    figure(test, &pairs);
    ensure!(first == READ_OK, "the importer: {first}");
    let what = "the exporter's bytes after the importer died";
    ensure!(intact == "match", "{what}: {intact}");
    went_on.map_err(|e| format!("the exporter after the importer died: {}", message(e)))?;
    release?;
    ensure_returned(free0, free_end, slack(bytes), released)
}

/// The exporter sends its descriptor and is killed before anyone imports it;
/// a fresh importer child then imports. `documented`: the import must work
/// and read the exporter's bytes (a VMM descriptor is a reference to the
/// allocation); else the outcome (the bytes, other bytes, or an error code)
/// is recorded and the importer must exit 0.
/// Both ways the memory comes back once the descriptor is closed.
pub fn descriptor_after_sender_died(
    test: &str,
    exporter: &str,
    importer: &str,
    env: &[(&str, String)],
    documented: bool,
    probe: Probe,
) -> TestResult {
    let free0 = probe()?;
    let (mut e, fd, fields, bytes) = spawn_exporter(exporter, env)?;
    let killed = e.kill();
    let free_sender_dead = probe();
    let imported = killed
        .and_then(|k| free_sender_dead.map(|f| (k, f)))
        .and_then(|kf| spawn_importer(importer, env, fd, &fields).map(|p| (kf, p)));
    unsafe { libc::close(fd) };
    let ((killed, free_sender_dead), (mut i, first)) = imported?;
    let released = i.ask("quit", "released");
    let exit = i.finish();
    let (free_end, ms) = await_free(probe, free0, slack(bytes))?;
    figure(
        test,
        &[
            ("bytes", bytes.to_string()),
            ("free_before", mib(free0)),
            ("exporter", killed),
            ("free_sender_dead_fd_held", mib(free_sender_dead)),
            ("importer", first.clone()),
            ("importer_release", released),
            ("importer_exit", exit_word(&exit)),
            ("free_end", mib(free_end)),
            ("returned_in_ms", ms.to_string()),
        ],
    );
    exit?;
    if documented {
        ensure!(
            first == READ_OK,
            "importing a descriptor whose sender died: {first} (the descriptor holds a reference)"
        );
    } else {
        // Undocumented: whatever the import and the read gave is recorded in
        // the figure; the importer must have answered and exited 0 (above).
        ensure!(
            first.starts_with("imported="),
            "the importer of a descriptor whose sender died answered {first:?}"
        );
    }
    ensure_returned(
        free0,
        free_end,
        slack(bytes),
        "after the descriptor was closed",
    )?;
    Ok(())
}

/// `0`, or why the child did not exit 0, as one word.
fn exit_word(exit: &TestResult) -> String {
    match exit {
        Ok(()) => "0".into(),
        Err(e) => e.message().unwrap_or("failed").replace(' ', "_"),
    }
}
