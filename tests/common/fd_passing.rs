//! File descriptors over a Unix socket (`SCM_RIGHTS`), for the two-process
//! tests of shareable handles.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

/// Runs `f` on a message of one byte and room for one descriptor.
fn with_msg<R>(f: impl FnOnce(&mut libc::msghdr) -> R) -> R {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    f(&mut msg)
}

/// Sends `fd` (and one byte) over `sock`.
pub fn send_fd(sock: &UnixStream, fd: RawFd) -> io::Result<()> {
    with_msg(|msg| unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(sock.as_raw_fd(), msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })
}

/// Receives one descriptor sent by [`send_fd`].
pub fn recv_fd(sock: &UnixStream) -> io::Result<RawFd> {
    with_msg(|msg| unsafe {
        if libc::recvmsg(sock.as_raw_fd(), msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(msg);
        if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            let e = io::Error::new(io::ErrorKind::InvalidData, "no descriptor received");
            return Err(e);
        }
        Ok(std::ptr::read_unaligned(
            libc::CMSG_DATA(cmsg).cast::<RawFd>(),
        ))
    })
}

/// A connected pair of sockets: the parent keeps one, the child inherits the
/// other's descriptor number through the environment (see `child_socket`).
pub fn socket_pair() -> io::Result<(UnixStream, UnixStream)> {
    UnixStream::pair()
}

/// Makes `sock` survive `exec` so a spawned child can use it; returns its number.
pub fn inheritable(sock: &UnixStream) -> RawFd {
    let fd = sock.as_raw_fd();
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
    }
    fd
}

/// The socket a parent passed in environment variable `var` (a descriptor number).
pub fn child_socket(var: &str) -> io::Result<UnixStream> {
    use std::os::fd::FromRawFd;
    let fd: RawFd = std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{var} not set")))?;
    Ok(unsafe { UnixStream::from_raw_fd(fd) })
}
