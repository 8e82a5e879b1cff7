//! Standard output, as every command writes it: a write to a closed pipe (`oxprof data … |
//! head`) ends the process quietly, as Unix tools end, killed by `SIGPIPE` (a shell
//! reports status 141; elsewhere the exit code is 141), with no message and no backtrace.
//!
//! Why one writer rather than `SIGPIPE`'s default action restored at start: this process
//! also writes to sockets (the server's clients, object stores, profiler servers), and a
//! peer that hangs up must be an error on that socket, not the end of the server; Rust
//! ignores `SIGPIPE` for that reason, and writes of several buffers at once (`writev`)
//! cannot ask the kernel not to signal. Why not map `BrokenPipe` where errors surface: an
//! upload's socket breaking is an error to report; only this writer knows the broken pipe
//! is standard output.

use std::io::{ErrorKind, Write};

/// The exit code of a process whose standard output was closed, where no signal ends it
/// (128 + `SIGPIPE`, what a shell reports for a process `SIGPIPE` killed).
pub const EXIT_CLOSED_STDOUT: u8 = 141;

/// Standard output (locked while this lives); see the module docs.
pub fn stdout() -> Quiet<std::io::StdoutLock<'static>> {
    Quiet(std::io::stdout().lock())
}

/// A writer to standard output whose `BrokenPipe` ends the process ([`closed`]); other
/// errors (a full disk under a redirection) are returned.
pub struct Quiet<W>(W);

impl<W: Write> Write for Quiet<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        quiet(self.0.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        quiet(self.0.flush())
    }
}

fn quiet<T>(result: std::io::Result<T>) -> std::io::Result<T> {
    match result {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => closed(),
        other => other,
    }
}

/// Ends the process because its standard output is closed (see the module docs).
pub fn closed() -> ! {
    #[cfg(unix)]
    // SAFETY: plain libc calls with valid arguments; the process ends here either way.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut pipe_only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_only);
        libc::sigaddset(&mut pipe_only, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &pipe_only, std::ptr::null_mut());
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(i32::from(EXIT_CLOSED_STDOUT))
}

/// `println!` through [`stdout`]: a `std::io::Result` (a closed pipe never returns).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!($crate::stdout::stdout(), $($arg)*)
    }};
}

/// `print!` through [`stdout`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!($crate::stdout::stdout(), $($arg)*)
    }};
}

/// `eprintln!` that never panics: a message to a closed or broken standard error has
/// nowhere to go and is dropped; the command goes on to its own exit code (`eprintln!`
/// panics there, ending with 101 and a backtrace instead).
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` as [`errln`] writes.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) use {err, errln, out, outln};
