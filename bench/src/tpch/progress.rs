//! Progress on stderr: a line per finished load and per finished configuration (what ran, how
//! long it took, what is left), written whether or not stderr is a terminal, so a run in CI or
//! under `nohup` is not silent for minutes; and, on a terminal, progress bars between them.
//! `--quiet` turns both off.
//!
//! No time left is estimated: a load's rate is shown once it has one (a second in), and the
//! configurations left are counted, not timed (cold and warm runs differ too much for the
//! first ones to predict the rest).

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// How long a load runs before its rate is shown.
const RATE_AFTER: Duration = Duration::from_secs(1);

/// Counts finished configurations and writes the progress lines.
#[derive(Debug)]
pub struct Progress {
    quiet: bool,
    configs: usize,
    configs_done: usize,
    loads: usize,
    loads_done: usize,
    started: Instant,
    /// The bar on screen, if any: lines are printed above it.
    bar: ProgressBar,
}

impl Progress {
    /// Progress for a run of `loads` loads and `configs` configurations.
    pub fn new(quiet: bool, loads: usize, configs: usize) -> Progress {
        Progress {
            quiet,
            configs,
            configs_done: 0,
            loads,
            loads_done: 0,
            started: Instant::now(),
            bar: ProgressBar::hidden(),
        }
    }

    /// Writes one line to stderr (above the bar on a terminal).
    pub fn line(&self, msg: &str) {
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            eprintln!("{msg}");
        } else {
            self.bar.println(msg);
        }
    }

    /// One load finished: `what` loaded `rows` rows in `elapsed`.
    pub fn load_done(&mut self, what: &str, rows: u64, elapsed: Duration, data_bytes: u64) {
        self.loads_done += 1;
        let secs = elapsed.as_secs_f64();
        self.line(&format!(
            "[load {}/{}] {what}: {rows} rows in {secs:.1} s ({:.0} k rows/s), data {:.0} MiB; \
             {} elapsed",
            self.loads_done,
            self.loads,
            rows as f64 / secs.max(1e-9) / 1e3,
            data_bytes as f64 / (1 << 20) as f64,
            clock(self.started.elapsed()),
        ));
    }

    /// One configuration finished: `what` ran `detail` in `elapsed`.
    pub fn config_done(&mut self, what: &str, detail: &str, elapsed: Duration) {
        self.configs_done += 1;
        let left = self.configs - self.configs_done.min(self.configs);
        self.line(&format!(
            "[{}/{}] {what}: {detail} in {:.1} s; {left} configuration{} left, {} elapsed",
            self.configs_done,
            self.configs,
            elapsed.as_secs_f64(),
            if left == 1 { "" } else { "s" },
            clock(self.started.elapsed()),
        ));
    }

    /// A bar for a load of exactly `rows` rows ([`super::load::row_count`]; hidden when quiet or
    /// not on a terminal), showing the rows so far and, after its first second, the rate.
    pub fn load_bar(&mut self, rows: u64, prefix: &str) -> ProgressBar {
        self.bar = self.new_bar(
            rows,
            "load {prefix:>14} {msg:9} [{bar:30}] {human_pos}/{human_len} rows {rate}",
            prefix,
        );
        self.bar.clone()
    }

    /// A bar over `runs` query runs.
    pub fn query_bar(&mut self, runs: u64, done: u64, prefix: &str) -> ProgressBar {
        self.bar =
            self.new_bar(runs, "query {prefix:>14} {msg:22} [{bar:30}] {pos}/{len} runs", prefix);
        self.bar.set_position(done);
        self.bar.clone()
    }

    /// Removes the bar from the screen.
    pub fn clear_bar(&mut self) {
        self.bar.finish_and_clear();
        self.bar = ProgressBar::hidden();
    }

    fn new_bar(&self, len: u64, template: &str, prefix: &str) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::new(len);
        if let Ok(style) = ProgressStyle::with_template(template) {
            pb.set_style(style.progress_chars("=> ").with_key("rate", rate));
        }
        pb.set_prefix(prefix.to_string());
        pb
    }
}

/// The `{rate}` of a load bar: nothing until it has run [`RATE_AFTER`], then rows per second
/// over the whole load so far.
fn rate(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let t = state.elapsed();
    if t >= RATE_AFTER {
        let _ = write!(w, "{:.0} k rows/s", state.pos() as f64 / t.as_secs_f64() / 1e3);
    }
}

/// `h:mm:ss`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_format() {
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
        assert_eq!(clock(Duration::from_millis(999)), "0:00:00");
    }
}
