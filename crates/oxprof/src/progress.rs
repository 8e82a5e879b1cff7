//! Progress on stderr, drawn only when stderr is a terminal and cleared before results
//! print: the bar of long loads (`oxprof_format::progress`'s sink), once the work has gone
//! on for a while (2 s, or `OXPROF_PROGRESS_AFTER_MS`), with bytes, speed and ETA; and a
//! capture's countdown ([`Countdown`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oxprof_format::progress::ProgressSink;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long work goes on before the bar shows.
const SHOW_AFTER: Duration = Duration::from_secs(2);

/// Installs the bar when stderr is a terminal (never for `serve`, whose stderr is its log).
pub fn install() {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let after = std::env::var("OXPROF_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(SHOW_AFTER, Duration::from_millis);
    oxprof_format::progress::install(Box::new(Bar { after, state: Mutex::new(State::default()) }));
}

#[derive(Default)]
struct State {
    /// The bar of the phases under way (`None` between loads).
    bar: Option<ProgressBar>,
    /// Phases under way.
    active: usize,
    /// When the first of them began.
    since: Option<Instant>,
    /// Whether the bar is drawn.
    shown: bool,
}

struct Bar {
    after: Duration,
    state: Mutex<State>,
}

impl Bar {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ProgressSink for Bar {
    fn begin(&self, what: &str, total: u64) {
        let mut state = self.state();
        state.active += 1;
        let bar = state.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        bar.inc_length(total);
        bar.set_message(what.to_string());
        state.since.get_or_insert_with(Instant::now);
    }

    fn advance(&self, bytes: u64) {
        let mut state = self.state();
        let due = !state.shown && state.since.is_some_and(|t| t.elapsed() >= self.after);
        let Some(bar) = state.bar.clone() else { return };
        if due {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
            state.shown = true;
        }
        bar.inc(bytes);
    }

    fn end(&self) {
        let mut state = self.state();
        state.active = state.active.saturating_sub(1);
        if state.active == 0 {
            if let Some(bar) = state.bar.take() {
                bar.finish_and_clear();
            }
            *state = State::default();
        }
    }
}

/// A capture's countdown on stderr while it traces (only on a terminal): the time traced of
/// the delay and duration asked for, then a spinner while the profilers send what they
/// traced. Cleared when dropped.
pub struct Countdown {
    done: Option<std::sync::mpsc::Sender<()>>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Countdown {
    /// Starts the countdown of `total` (the capture's delay plus duration) for `what`.
    pub fn start(what: &str, total: Duration) -> Countdown {
        if !std::io::stderr().is_terminal() {
            return Countdown { done: None, ticker: None };
        }
        let bar = ProgressBar::new(u64::try_from(total.as_millis()).unwrap_or(u64::MAX).max(1));
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {elapsed}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(format!("capturing {:.1} s from {what}", total.as_secs_f64()));
        bar.enable_steady_tick(Duration::from_millis(100));
        let (done, stop) = std::sync::mpsc::channel::<()>();
        let what = what.to_string();
        let ticker = std::thread::spawn(move || {
            let started = Instant::now();
            let mut waiting = false;
            // Ends when the capture does (the sender dropped or sent).
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(Duration::from_millis(100)) {
                let elapsed = started.elapsed();
                if elapsed < total {
                    bar.set_position(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
                } else if !waiting {
                    waiting = true;
                    bar.set_position(bar.length().unwrap_or(0));
                    bar.set_message(format!("traced; waiting for {what} to send the profile"));
                }
            }
            bar.finish_and_clear();
        });
        Countdown { done: Some(done), ticker: Some(ticker) }
    }
}

impl Drop for Countdown {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}
