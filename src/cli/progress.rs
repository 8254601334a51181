//! A progress bar on stderr for long work, only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Inputs above this many bytes show progress.
const THRESHOLD: u64 = 64 << 20;

/// A byte-counting bar for `total` bytes, hidden for small inputs or a non-terminal.
pub fn bar(total: u64, what: &str) -> ProgressBar {
    if total < THRESHOLD || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(what.to_owned());
    bar
}
