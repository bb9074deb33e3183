//! How much of what learner code says a grade keeps.
//!
//! A loop can panic with a message of many megabytes, print without end, or make the compiler write pages
//! of errors. Every text that reaches a report is cut, with a note in the learner's language saying so:
//! each test's message, all of one learner's test messages together, and the reason a grade could not
//! run. Reading from a child is bounded as well (`channel`, `process::Captured`), so the grader never
//! holds more than these bounds plus a little.
//!
//! The bounds keep a learner's JSON or JUnit report under 2 MB whatever the loop does: a character can
//! grow to at most 6 bytes when escaped (`&quot;` in XML), and a report holds each test's text about
//! twice (JUnit's message and description), so 192 KiB of messages stay below 2.3 MiB only in a report of
//! nothing but quotes; plain text stays far below.

use crate::i18n::Lang;

/// The most of one string a verdict record keeps while it is read from the test process.
pub const RECORD_BYTES: usize = 64 << 10;
/// The most of one test's message a report shows.
pub const TEST_MESSAGE_BYTES: usize = 16 << 10;
/// The most of all of one learner's test messages together a report shows.
pub const LEARNER_MESSAGE_BYTES: usize = 192 << 10;
/// What every failing test still shows once the learner's budget is spent: a line or two.
pub const TEST_MESSAGE_FLOOR: usize = 512;
/// The most of the reason a grade could not run (a compile error, a tool's output) a report shows.
pub const PROBLEM_BYTES: usize = 32 << 10;

/// Which bound cut a text: each has its own note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Test,
    Learner,
    Problem,
}

impl Bound {
    fn note(self, lang: Lang) -> String {
        let (key, max) = match self {
            Bound::Test => ("grade-cut-test", TEST_MESSAGE_BYTES),
            Bound::Learner => ("grade-cut-learner", LEARNER_MESSAGE_BYTES),
            Bound::Problem => ("grade-cut-problem", PROBLEM_BYTES),
        };
        lang.t(key, &[("max_kib", &(max >> 10))])
    }
}

/// `text` cut to at most `max` bytes (at a character boundary) and followed by `bound`'s note, or as it
/// is when it fits.
pub fn cut(mut text: String, max: usize, bound: Bound, lang: Lang) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('\n');
    text.push_str(&bound.note(lang));
    text
}

/// Cuts each of a learner's messages so that together they keep to [`LEARNER_MESSAGE_BYTES`]: earlier
/// ones whole (each already within [`TEST_MESSAGE_BYTES`]), later ones to what is left, and never below
/// [`TEST_MESSAGE_FLOOR`], so that every failing test still says something.
pub fn share(messages: Vec<Option<String>>, lang: Lang) -> Vec<Option<String>> {
    let mut left = LEARNER_MESSAGE_BYTES;
    messages
        .into_iter()
        .map(|message| {
            let message = message?;
            let allowed = left.max(TEST_MESSAGE_FLOOR);
            let message = cut(message, allowed, Bound::Learner, lang);
            left = left.saturating_sub(message.len());
            Some(message)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_and_says_so() {
        assert_eq!(cut("short".into(), 10, Bound::Test, Lang::En), "short");
        let cut_text = cut("红".repeat(10), 7, Bound::Test, Lang::En);
        assert!(cut_text.starts_with("红红\n"), "{cut_text}");
        assert!(cut_text.contains("16 KiB"), "{cut_text}");
        let zh = cut("x".repeat(100), 10, Bound::Problem, Lang::Zh);
        assert!(
            zh.starts_with("xxxxxxxxxx\n") && zh.contains("32 KiB"),
            "{zh}"
        );
    }

    #[test]
    fn a_learners_messages_share_one_budget_and_each_keeps_a_floor() {
        let big = || Some("m".repeat(TEST_MESSAGE_BYTES));
        let messages: Vec<Option<String>> = (0..40).map(|_| big()).chain([None]).collect();
        let shared = share(messages, Lang::En);
        let total: usize = shared.iter().flatten().map(String::len).sum();
        assert!(
            total < LEARNER_MESSAGE_BYTES + 40 * (TEST_MESSAGE_FLOOR + 200),
            "{total}"
        );
        assert_eq!(shared[0].as_deref(), big().as_deref(), "the first is whole");
        assert!(shared[39].as_ref().unwrap().contains("192 KiB"));
        assert!(shared[39].as_ref().unwrap().starts_with("mmm"));
        assert_eq!(shared[40], None, "a pass has no message");
    }
}
