//! A class's progress on stderr: a bar with done/total, the learners who did not pass so far and the time
//! left, redrawn in place on a terminal; elsewhere (a CI log, a file) one line per learner as each one
//! finishes.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::i18n::Lang;

pub struct Bar {
    lang: Lang,
    /// Redraw in place (stderr is a terminal).
    live: bool,
    total: usize,
    done: usize,
    failed: usize,
    started: Instant,
}

const WIDTH: usize = 24;

impl Bar {
    pub fn new(lang: Lang, live: bool, total: usize) -> Bar {
        Bar {
            lang,
            live,
            total,
            done: 0,
            failed: 0,
            started: Instant::now(),
        }
    }

    /// A learner finished: `line` says how (name, status, points).
    pub fn finished(&mut self, passed: bool, line: &str) {
        self.done += 1;
        if !passed {
            self.failed += 1;
        }
        if self.live {
            self.clear();
            eprintln!("{line}");
            self.draw();
        } else {
            eprintln!("[{}/{}] {line} · {}", self.done, self.total, self.tail());
        }
    }

    /// Redraws the bar (a terminal only), e.g. to count the time left down.
    pub fn tick(&self) {
        if self.live {
            self.draw();
        }
    }

    /// Removes the bar (before the summary, or when interrupted).
    pub fn clear(&self) {
        if self.live {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }

    /// `3/10 · class so far: 1 not passed · about 12 s left`.
    fn status(&self) -> String {
        format!("{}/{} · {}", self.done, self.total, self.tail())
    }

    /// `class so far: 1 not passed · about 12 s left`: the class's running count, not the learner's.
    fn tail(&self) -> String {
        let left = match self.time_left() {
            Some(left) => self.lang.t(
                "class-progress-left",
                &[("time", &duration(left, self.lang))],
            ),
            None => self.lang.t("class-progress-left-unknown", &[]),
        };
        self.lang.t(
            "class-progress",
            &[("failed", &self.failed), ("left", &left)],
        )
    }

    fn draw(&self) {
        let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let bar = format!("{}{}", "█".repeat(filled), "░".repeat(WIDTH - filled));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{bar} {}", self.status());
        let _ = err.flush();
    }

    /// The time left, from the pace so far (the learners finished per second of this run).
    fn time_left(&self) -> Option<Duration> {
        if self.done == 0 {
            return None;
        }
        let per = self.started.elapsed().as_secs_f64() / self.done as f64;
        Some(Duration::from_secs_f64(
            per * (self.total - self.done.min(self.total)) as f64,
        ))
    }
}

/// `1 分 20 秒` / `1 min 20 s`.
pub fn duration(d: Duration, lang: Lang) -> String {
    let secs = d.as_secs_f64().round() as u64;
    if secs >= 60 {
        lang.t(
            "class-minutes-seconds",
            &[("m", &(secs / 60)), ("s", &(secs % 60))],
        )
    } else {
        lang.t("class-seconds", &[("s", &secs)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_follows_the_pace() {
        let mut bar = Bar::new(Lang::En, false, 4);
        assert_eq!(bar.time_left(), None);
        bar.started = Instant::now() - Duration::from_secs(10);
        bar.done = 2;
        let left = bar.time_left().unwrap().as_secs_f64();
        assert!((9.0..=11.0).contains(&left), "{left}");
        assert_eq!(duration(Duration::from_secs(80), Lang::En), "1 min 20 s");
        assert_eq!(duration(Duration::from_secs(7), Lang::Zh), "7 秒");
    }
}
