//! Lab 8.4, `edit`: what a batch of exact replacements makes of a file's text (docs/chapters/
//! 08-coding-tools.md, R8.4). The edits apply in order to one copy in memory, so a later edit can match
//! what an earlier one wrote; each must match exactly once, counting matches that do not overlap; the
//! file is written once, or, when any edit is refused, not at all.
//!
//! The chapter does not say whether every `oldText` is checked for emptiness before any is matched, or
//! each in its turn: [`outcomes`] allows both, so a batch may be refused for either of two edits.

/// One replacement: `old` (exact, non-empty) by `new` (literal, maybe empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replace<'a> {
    pub old: &'a str,
    pub new: &'a str,
}

/// What an edit call does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every edit applied: the file's new text, written once.
    Edited { text: String },
    /// The batch is refused and the file keeps its bytes.
    Refused(Refusal),
}

/// Why a batch is refused; an index counts the batch's edits from 0 (a single edit is edit 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `edits` is empty.
    NoEdits,
    EmptyOldText {
        index: usize,
    },
    /// Edit `index` matches nothing in the text the edits before it left.
    NoMatch {
        index: usize,
    },
    /// Edit `index` matches more than once.
    SeveralMatches {
        index: usize,
    },
}

/// Every outcome the chapter allows for `edits` on `text`, without repeats; the first checks each edit in
/// its turn.
pub fn outcomes(text: &str, edits: &[Replace<'_>]) -> Vec<Outcome> {
    let in_turn = apply(text, edits);
    let first_empty = edits
        .iter()
        .position(|e| e.old.is_empty())
        .map(|index| Outcome::Refused(Refusal::EmptyOldText { index }));
    match first_empty {
        Some(up_front) if up_front != in_turn => vec![in_turn, up_front],
        _ => vec![in_turn],
    }
}

/// The edits applied in order, each checked in its turn.
fn apply(text: &str, edits: &[Replace<'_>]) -> Outcome {
    if edits.is_empty() {
        return Outcome::Refused(Refusal::NoEdits);
    }
    let mut text = text.to_string();
    for (index, edit) in edits.iter().enumerate() {
        if edit.old.is_empty() {
            return Outcome::Refused(Refusal::EmptyOldText { index });
        }
        let Some(at) = text.find(edit.old) else {
            return Outcome::Refused(Refusal::NoMatch { index });
        };
        if text[at + edit.old.len()..].contains(edit.old) {
            return Outcome::Refused(Refusal::SeveralMatches { index });
        }
        text.replace_range(at..at + edit.old.len(), edit.new);
    }
    Outcome::Edited { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<Replace<'a>> {
        pairs
            .iter()
            .map(|&(old, new)| Replace { old, new })
            .collect()
    }

    fn edited(text: &str) -> Vec<Outcome> {
        vec![Outcome::Edited {
            text: text.to_string(),
        }]
    }

    fn refused(refusal: Refusal) -> Vec<Outcome> {
        vec![Outcome::Refused(refusal)]
    }

    #[test]
    fn edits_apply_in_order_to_one_copy() {
        let batch = edits(&[("alpha", "gamma"), ("gamma beta", "done")]);
        assert_eq!(outcomes("alpha beta", &batch), edited("done"));
        // Against the original, the second edit would match nothing.
        assert_eq!(
            outcomes("alpha beta", &edits(&[("alpha", "gamma"), ("alpha", "x")])),
            refused(Refusal::NoMatch { index: 1 })
        );
        assert_eq!(
            outcomes("status: draft", &edits(&[("draft", "done")])),
            edited("status: done")
        );
    }

    #[test]
    fn matches_are_counted_without_overlap_and_two_refuse_the_batch() {
        assert_eq!(outcomes("aaa", &edits(&[("aa", "b")])), edited("ba"));
        assert_eq!(
            outcomes("same same", &edits(&[("same", "x")])),
            refused(Refusal::SeveralMatches { index: 0 })
        );
        assert_eq!(
            outcomes("aaaa", &edits(&[("aa", "b")])),
            refused(Refusal::SeveralMatches { index: 0 })
        );
        // A match the previous edit made counts.
        assert_eq!(
            outcomes("ab", &edits(&[("a", "b"), ("b", "c")])),
            refused(Refusal::SeveralMatches { index: 1 })
        );
    }

    #[test]
    fn replacements_are_literal_and_may_delete() {
        assert_eq!(
            outcomes("one two", &edits(&[("two", "$& $1 $$")])),
            edited("one $& $1 $$")
        );
        assert_eq!(outcomes("one two", &edits(&[(" two", "")])), edited("one"));
        assert_eq!(outcomes("界a界", &edits(&[("a", "界")])), edited("界界界"));
    }

    #[test]
    fn an_empty_batch_or_old_text_is_refused_and_which_edit_is_checked_first_is_free() {
        assert_eq!(outcomes("x", &[]), refused(Refusal::NoEdits));
        assert_eq!(
            outcomes("one", &edits(&[("one", "ONE"), ("", "X")])),
            refused(Refusal::EmptyOldText { index: 1 })
        );
        assert_eq!(
            outcomes("one", &edits(&[("missing", "X"), ("", "Y")])),
            vec![
                Outcome::Refused(Refusal::NoMatch { index: 0 }),
                Outcome::Refused(Refusal::EmptyOldText { index: 1 }),
            ]
        );
    }
}
