//! The tokio runtime every remote call runs on, and the one way the synchronous seam waits
//! for it. Callers may be rayon pool threads (a session's parallel loads) or tokio blocking
//! threads (the server's requests): they wait on a channel for work done by this runtime's
//! own threads, never for work queued to their own pool, so no pool can deadlock on itself
//! (the server's rule), and no caller ever nests a runtime.

use std::future::Future;
use std::sync::OnceLock;

/// Threads of the I/O runtime: requests are network-bound, so a few threads keep many
/// transfers in flight.
const IO_THREADS: usize = 2;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("oxprof-objstore-io")
            .enable_all()
            .build()
            // Building a runtime fails only when the OS refuses threads; nothing can run then.
            .unwrap_or_else(|e| panic!("cannot start the object-store I/O threads: {e}"))
    })
}

/// Runs `future` on the I/O runtime and waits for its output on this thread.
pub(crate) fn wait<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(future.await);
    });
    // The task always sends (a panic inside it is the only way not to, and propagates as one).
    // A long wait (a stalled server) lends a load's decode turn meanwhile (see io_wait).
    match oxprof_format::io_wait::recv(&rx) {
        Ok(value) => value,
        Err(_) => panic!("an object-store task panicked"),
    }
}

/// Starts `future` on the I/O runtime without waiting for it (its output goes by channel).
pub(crate) fn spawn(future: impl Future<Output = ()> + Send + 'static) {
    runtime().spawn(future);
}
