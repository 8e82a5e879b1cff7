//! Loads waiting on the network, counted for whoever bounds loads: a load that waits for a
//! remote store's next bytes uses neither the cores nor more memory, so the session lends
//! its decode turn to another load meanwhile, and a stalled server holds no turn
//! (`oxprof_api::session::Session::admit`). Stores mark their waits with [`waiting`] once a
//! wait has lasted [`NOTICE`]: short waits, the normal gaps of a download, lend nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a wait lasts before it counts.
pub const NOTICE: Duration = Duration::from_millis(500);

static WAITING: AtomicUsize = AtomicUsize::new(0);

/// A wait under way, counted until dropped.
#[derive(Debug)]
pub struct Waiting(());

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts a wait on the network until the guard is dropped.
pub fn waiting() -> Waiting {
    WAITING.fetch_add(1, Ordering::AcqRel);
    Waiting(())
}

/// Waits under way in this process now.
pub fn loads_waiting() -> usize {
    WAITING.load(Ordering::Acquire)
}

/// `recv` on `receiver`, counted as a wait on the network once it has lasted [`NOTICE`].
pub fn recv<T>(receiver: &std::sync::mpsc::Receiver<T>) -> Result<T, std::sync::mpsc::RecvError> {
    match receiver.recv_timeout(NOTICE) {
        Ok(value) => Ok(value),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(std::sync::mpsc::RecvError),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            let _waiting = waiting();
            receiver.recv()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait counts only once it lasted the notice, and only while it lasts.
    #[test]
    fn a_long_wait_counts_while_it_lasts() {
        let (tx, rx) = std::sync::mpsc::channel::<u8>();
        tx.send(1).unwrap();
        // Answered at once: never counted (other tests of this crate do not wait).
        assert_eq!(recv(&rx), Ok(1));
        let before = loads_waiting();
        let sender = std::thread::spawn(move || {
            while loads_waiting() == before {
                std::thread::sleep(Duration::from_millis(10));
            }
            tx.send(2).unwrap();
        });
        assert_eq!(recv(&rx), Ok(2));
        sender.join().unwrap();
        assert_eq!(loads_waiting(), before);
        let (tx, rx) = std::sync::mpsc::channel::<u8>();
        drop(tx);
        assert!(recv(&rx).is_err());
    }
}
