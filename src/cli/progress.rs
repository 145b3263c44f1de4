//! Progress on stderr, as cargo shows it: the phase, a count, a rate and
//! the time left, labelled as such.
//!
//! On a terminal a bar is redrawn in place. Without one (a log, CI, a
//! pipe) a plain line is printed once the work has run for a few seconds,
//! then every so often, so a short command prints nothing extra and a long
//! one says where it is. The time left comes from the average rate since the
//! phase started (not a moving window), so it does not jump from batch to
//! batch, and it is said only once there is enough to go on.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a command runs before its first plain progress line.
const PLAIN_FIRST: Duration = Duration::from_secs(3);
/// How often a plain progress line follows.
const PLAIN_EVERY: Duration = Duration::from_secs(10);
/// Before this share of the work and this time, no time left is guessed.
const ETA_MIN_SHARE: f64 = 0.02;
const ETA_MIN_TIME: Duration = Duration::from_secs(2);

/// A progress display for one command (several phases in turn).
pub struct Progress {
    /// What runs, for the plain lines (`ingest`, `embed`).
    command: &'static str,
    bar: Option<ProgressBar>,
    /// Plain lines are printed (stderr is no terminal) unless hidden.
    plain: bool,
    phase: String,
    unit: &'static str,
    started: Instant,
    /// When the display was made: the first plain line waits from here.
    created: Instant,
    last_line: Option<Instant>,
    total: u64,
    done: u64,
    note: String,
    /// Bytes done of all, when the counted items differ in size (files):
    /// the rate and the time left are then read from them.
    bytes: Option<(u64, u64)>,
    /// When the first plain line is due (after [`PLAIN_FIRST`]).
    first_after: Duration,
    /// Plain lines kept instead of printed (the tests read them).
    captured: Option<Vec<String>>,
}

impl Progress {
    /// A display for `command`: a bar on a terminal, plain lines otherwise.
    pub fn new(command: &'static str) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        Progress::with(command, terminal, !terminal)
    }

    /// No output at all (a background worker).
    pub fn hidden(command: &'static str) -> Progress {
        Progress::with(command, false, false)
    }

    fn with(command: &'static str, terminal: bool, plain: bool) -> Progress {
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{prefix:>10.cyan.bold} [{bar:30}] {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Progress {
            command,
            bar,
            plain,
            phase: String::new(),
            unit: "",
            started: Instant::now(),
            created: Instant::now(),
            last_line: None,
            total: 0,
            done: 0,
            note: String::new(),
            first_after: PLAIN_FIRST,
            captured: None,
            bytes: None,
        }
    }

    /// Plain lines from the first update on, kept for a test to read.
    #[cfg(test)]
    fn capturing(command: &'static str) -> Progress {
        let mut progress = Progress::with(command, false, true);
        progress.first_after = Duration::ZERO;
        progress.captured = Some(Vec::new());
        progress
    }

    /// Starts a phase (`Reading`, `Storing`, `Embedding`) counting `unit`s.
    pub fn phase(&mut self, phase: &str, unit: &'static str, total: u64) {
        if self.phase == phase {
            self.total = total;
            return;
        }
        self.phase = phase.to_string();
        self.started = Instant::now();
        self.unit = unit;
        self.total = total;
        self.done = 0;
        if let Some(bar) = &self.bar {
            let mut name = phase.to_string();
            if let Some(first) = name.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            bar.set_prefix(name);
            bar.set_length(total.max(1));
            bar.set_position(0);
        }
        self.draw();
    }

    /// Renames the phase (`Reading` → `Storing`) keeping its count, rate
    /// and time left: one piece of work seen in another step.
    pub fn relabel(&mut self, phase: &str) {
        if self.phase == phase {
            return;
        }
        self.phase = phase.to_string();
        if let Some(bar) = &self.bar {
            bar.set_prefix(phase.to_string());
        }
    }

    /// The bytes behind the count (files of different sizes): the rate is
    /// given in MB/s and the time left follows the bytes, not the count.
    pub fn set_bytes(&mut self, done: u64, total: u64) {
        self.bytes = Some((done, total));
    }

    /// Sets how far the phase is, and a note shown after the count.
    pub fn set(&mut self, done: u64, total: u64, note: impl Into<String>) {
        self.done = done;
        self.total = total;
        self.note = note.into();
        self.draw();
    }

    /// The line that describes where the work is: `120/288 files, 3.1/s,
    /// about 40s left`, then the note.
    pub fn line(&self) -> String {
        if self.total == 0 {
            return "starting".to_string();
        }
        let elapsed = self.started.elapsed();
        let mut parts = vec![format!(
            "{}/{} {}",
            group(self.done),
            group(self.total),
            self.unit
        )];
        let (done, total) = self.bytes.unwrap_or((self.done, self.total));
        if done > 0 && elapsed >= Duration::from_millis(500) {
            let per_second = done as f64 / elapsed.as_secs_f64();
            parts.push(match self.bytes {
                Some(_) => format!("{:.1} MB/s", per_second / 1e6),
                None => rate(per_second),
            });
        }
        if let Some(left) = time_left(done, total, elapsed) {
            parts.push(format!("about {} left", duration(left)));
        }
        if !self.note.is_empty() {
            parts.push(self.note.clone());
        }
        parts.join(", ")
    }

    fn draw(&mut self) {
        if let Some(bar) = &self.bar {
            bar.set_length(self.total.max(1));
            bar.set_position(self.done.min(self.total));
            bar.set_message(self.line());
            return;
        }
        if !self.plain {
            return;
        }
        let now = Instant::now();
        let due = match self.last_line {
            None => self.created.elapsed() >= self.first_after,
            Some(last) => now.duration_since(last) >= PLAIN_EVERY,
        };
        if due {
            self.last_line = Some(now);
            let line = format!(
                "{}: {} {}",
                self.command,
                self.phase.to_lowercase(),
                self.line()
            );
            match &mut self.captured {
                Some(lines) => lines.push(line),
                None => eprintln!("{line}"),
            }
        }
    }

    /// Clears the bar (the command prints its report next).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Seconds left at the average rate so far, once there is enough to go on.
pub fn time_left(done: u64, total: u64, elapsed: Duration) -> Option<Duration> {
    if done == 0 || done >= total || elapsed < ETA_MIN_TIME {
        return None;
    }
    if (done as f64) < total as f64 * ETA_MIN_SHARE {
        return None;
    }
    let per_unit = elapsed.as_secs_f64() / done as f64;
    Some(Duration::from_secs_f64(per_unit * (total - done) as f64))
}

/// `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate per second, to a sensible precision.
fn rate(per_second: f64) -> String {
    if per_second >= 100.0 {
        format!("{}/s", group(per_second.round() as u64))
    } else if per_second >= 10.0 {
        format!("{per_second:.0}/s")
    } else {
        format!("{per_second:.1}/s")
    }
}

/// `45s`, `3m 20s`, `1h 5m`.
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs_f64().round() as u64;
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_waits_for_enough_to_go_on_and_follows_the_average() {
        assert_eq!(time_left(0, 100, Duration::from_secs(10)), None);
        assert_eq!(
            time_left(1, 1000, Duration::from_secs(10)),
            None,
            "under 2%"
        );
        assert_eq!(
            time_left(50, 100, Duration::from_secs(1)),
            None,
            "too early"
        );
        assert_eq!(
            time_left(50, 100, Duration::from_secs(10)),
            Some(Duration::from_secs(10))
        );
        assert_eq!(time_left(100, 100, Duration::from_secs(10)), None);
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(group(0), "0");
        assert_eq!(group(1234), "1,234");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(duration(Duration::from_secs(42)), "42s");
        assert_eq!(duration(Duration::from_secs(200)), "3m 20s");
        assert_eq!(duration(Duration::from_secs(3900)), "1h 05m");
        assert_eq!(rate(2100.4), "2,100/s");
        assert_eq!(rate(3.12), "3.1/s");
    }

    #[test]
    fn without_a_terminal_a_plain_line_says_phase_count_and_note() {
        let mut p = Progress::capturing("ingest");
        p.phase("Reading", "files", 288);
        p.set(12, 288, "1,200 messages read");
        let lines = p.captured.clone().unwrap_or_default();
        assert_eq!(
            lines[0],
            "ingest: reading starting".replace("starting", "0/288 files")
        );
        // The next line waits PLAIN_EVERY: no flood of lines.
        assert_eq!(lines.len(), 1);
    }

    #[test]
    fn a_line_names_count_unit_and_note() {
        let mut p = Progress::hidden("ingest");
        p.phase("Reading", "files", 0);
        assert_eq!(p.line(), "starting", "no 0/0 before the count is known");
        p.set(12, 288, "1,200 messages");
        assert_eq!(p.line(), "12/288 files, 1,200 messages");
    }
}
