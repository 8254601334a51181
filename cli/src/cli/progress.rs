//! Progress on stderr for long work.
//!
//! A [`Progress`] counts one unit (bytes, or items such as measurements) against a total
//! in the same unit. It is a bar when stderr is a terminal, plain lines with
//! `--progress always` elsewhere (logs, CI), nothing with `--progress never` or `-q`. A
//! bar ends at its total when the work is done and is cleared when it ends early: on an
//! error (the value is dropped) and on Ctrl-C, SIGTERM or SIGHUP (the interrupt handler
//! clears the active bar before the process exits).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};

/// When progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum When {
    /// A bar when stderr is a terminal and the work is large.
    #[default]
    Auto,
    /// Always: a bar on a terminal, else a line at every tenth of the work.
    Always,
    /// Never.
    Never,
}

static WHEN: AtomicU8 = AtomicU8::new(0);

/// Sets when progress is shown, for the whole process.
pub fn set_when(when: When) {
    WHEN.store(when as u8, Ordering::Relaxed);
}

fn when() -> When {
    match WHEN.load(Ordering::Relaxed) {
        1 => When::Always,
        2 => When::Never,
        _ => When::Auto,
    }
}

/// Work over this many bytes shows a bar in `auto` mode.
const THRESHOLD_BYTES: u64 = 64 << 20;

/// What a [`Progress`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes, shown as KiB/MiB/GiB.
    Bytes,
    /// Whole items, named by the string (e.g. "measurements").
    Items(&'static str),
}

/// The bar being drawn, cleared by the interrupt handler.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn active(edit: impl FnOnce(&mut Option<ProgressBar>)) {
    let mut guard = ACTIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    edit(&mut guard);
}

/// Clears the bar being drawn, if any (from the interrupt handler).
pub fn clear_active() {
    active(|a| {
        if let Some(bar) = a.take() {
            bar.finish_and_clear();
        }
    });
}

enum Shown {
    Hidden,
    Bar(ProgressBar),
    /// A line at every tenth of the total.
    Lines {
        next_tenth: AtomicU64,
    },
}

/// Progress of one piece of work; see the module docs.
pub struct Progress {
    what: String,
    total: u64,
    unit: Unit,
    done: AtomicU64,
    shown: Shown,
    /// When the work began: lines say the time elapsed and the time left at that rate.
    started: std::time::Instant,
}

impl Progress {
    /// Progress of `what`, `total` units of `unit`. In `auto` mode, byte counts under
    /// 64 MiB show nothing; item counts always show on a terminal.
    pub fn start(what: &str, total: u64, unit: Unit) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let big = match unit {
            Unit::Bytes => total >= THRESHOLD_BYTES,
            Unit::Items(_) => true,
        };
        let shown = match (when(), terminal) {
            _ if total == 0 => Shown::Hidden,
            (When::Auto, true) if big => Shown::Bar(Self::bar(what, total, unit)),
            (When::Always, true) => Shown::Bar(Self::bar(what, total, unit)),
            (When::Always, false) => Shown::Lines {
                next_tenth: AtomicU64::new(1),
            },
            _ => Shown::Hidden,
        };
        if let Shown::Bar(bar) = &shown {
            super::output::handle_interrupts();
            active(|a| *a = Some(bar.clone()));
        }
        Self {
            what: what.to_owned(),
            total,
            unit,
            done: AtomicU64::new(0),
            shown,
            started: std::time::Instant::now(),
        }
    }

    fn bar(what: &str, total: u64, unit: Unit) -> ProgressBar {
        let template = match unit {
            Unit::Bytes => {
                "{msg} [{wide_bar}] {bytes}/{total_bytes} {bytes_per_sec} ({elapsed} elapsed, {eta} left)".to_owned()
            }
            Unit::Items(name) => format!(
                "{{msg}} [{{wide_bar}}] {{pos}}/{{len}} {name} ({{elapsed}} elapsed, {{eta}} left)"
            ),
        };
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        bar
    }

    /// `n` units as text, bytes in the binary unit of the total so that both sides of
    /// a line read in one unit.
    fn amount(&self, n: u64) -> String {
        match self.unit {
            Unit::Bytes => {
                const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
                let mut scale = 0;
                while scale + 1 < UNITS.len() && self.total >= 1024u64.pow(scale as u32 + 1) {
                    scale += 1;
                }
                if scale == 0 {
                    format!("{n} B")
                } else {
                    format!(
                        "{:.2} {}",
                        n as f64 / (1u64 << (10 * scale)) as f64,
                        UNITS[scale]
                    )
                }
            }
            Unit::Items(name) => format!("{n} {name}"),
        }
    }

    /// Counts `n` more units done.
    pub fn inc(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        match &self.shown {
            Shown::Hidden => {}
            Shown::Bar(bar) => bar.set_position(done.min(self.total)),
            Shown::Lines { next_tenth } => {
                let tenth = next_tenth.load(Ordering::Relaxed);
                // The 100% line is `finish`'s.
                if done < self.total && done.saturating_mul(10) >= self.total.saturating_mul(tenth)
                {
                    next_tenth.store(
                        done.saturating_mul(10) / self.total.max(1) + 1,
                        Ordering::Relaxed,
                    );
                    self.line(done);
                }
            }
        }
    }

    fn line(&self, done: u64) {
        let percent = done.saturating_mul(100) / self.total.max(1);
        let elapsed = self.started.elapsed().as_secs_f64();
        // The time left at the rate so far; none before any work is done, or at the end.
        let left = if done == 0 || done >= self.total {
            String::new()
        } else {
            let rest = (self.total - done) as f64 * elapsed / done as f64;
            format!(", about {rest:.1} s left")
        };
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}: {percent}% ({} of {}), {elapsed:.1} s elapsed{left}",
            self.what,
            self.amount(done),
            self.amount(self.total)
        );
    }

    /// Runs `f` (which prints to a terminal) with the bar out of the way.
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.shown {
            Shown::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }

    /// The work is done: a bar disappears, lines end with the 100% line. The count must
    /// have reached the total; anything else is a bug in the caller's accounting, shown
    /// as it is rather than rounded up.
    pub fn finish(self) {
        let done = self.done.load(Ordering::Relaxed);
        if let Shown::Lines { .. } = self.shown {
            self.line(done);
        }
        // Drop clears a bar.
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Shown::Bar(bar) = &self.shown {
            bar.finish_and_clear();
            active(|a| *a = None);
        }
    }
}
