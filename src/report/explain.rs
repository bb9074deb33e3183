//! A test's expected and actual timelines side by side (`pi-course explain`, `watch`'s `e`, the class
//! page): what the chapter asked for, step by step, beside what the loop did, with the first divergence
//! marked. Pure: renders evidence, runs nothing.

use crate::i18n::Lang;
use crate::outcome::Explained;
use crate::ui::{cut, display_width, pad, Paint};
use pi_course_judge::compare::{timeline, Row};

/// The widest a column gets, so that two fit beside each other on an ordinary terminal.
const COLUMN: usize = 48;

/// The two timelines of `test`, headed by its name, what it checks and the judge's message, and
/// followed by the freedoms its expected trace grants (what the chapter leaves to you).
pub fn render(
    test: &Explained,
    about: Option<&str>,
    freedoms: &[(&str, String)],
    lang: Lang,
    paint: Paint,
) -> String {
    let rows = timeline(&test.evidence.expected, &test.evidence.trace);
    let mut out = format!("{}  (Lab {})\n", paint.bold(&test.name), test.lab);
    if let Some(about) = about {
        out.push_str(&format!("{}\n", paint.dim(about)));
    }
    out.push('\n');
    let message = test.messages.get(lang.code()).unwrap_or(&test.message);
    for line in message.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out.push('\n');
    out.push_str(&table(&rows, lang, paint));
    if !freedoms.is_empty() {
        let head = match lang {
            Lang::Zh => "本章在这里留给你的自由（其余每一处都必须相同）：",
            Lang::En => "What the chapter leaves free here (everything else must be equal):",
        };
        out.push_str(&format!("\n{}\n", paint.dim(head)));
        for (name, what) in freedoms {
            out.push_str(&format!("  {}: {what}\n", paint.dim(name)));
        }
    }
    out
}

/// The rows as a table: step number, expected, happened; the divergence's row marked with `>`.
pub fn table(rows: &[Row], lang: Lang, paint: Paint) -> String {
    let (left, right) = match lang {
        Lang::Zh => ("应为（本章）", "实际（你的 loop）"),
        Lang::En => ("expected (the chapter)", "happened (your loop)"),
    };
    let cell = |text: Option<&str>| cut(text.unwrap_or(""), COLUMN);
    let width = rows
        .iter()
        .map(|r| display_width(&cell(r.expected.as_deref())))
        .chain([display_width(left)])
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "     {}  {}\n",
        pad(&paint.dim(left), width + paint.dim("").len()),
        paint.dim(right)
    );
    let mut diverged = false;
    for (i, row) in rows.iter().enumerate() {
        let mark = if row.diverges { ">" } else { " " };
        let (expected, actual) = (cell(row.expected.as_deref()), cell(row.actual.as_deref()));
        let line = format!("{mark}{:>3}  {}  {}", i + 1, pad(&expected, width), actual);
        let line = match (row.diverges, diverged) {
            (true, _) => paint.red(&line),
            (false, true) => paint.dim(&line),
            _ => line,
        };
        diverged |= row.diverges;
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Evidence;
    use serde_json::json;

    #[test]
    fn the_divergence_is_marked_beside_what_happened() {
        let expected = json!({"alternatives": [{"steps": [
            {"after": [], "match": {"kind": "request", "n": 1}, "rule": "r"},
            {"after": [0], "match": {"kind": "event", "event": {"type": "turn_end", "reason": "stop"}}, "rule": "r"},
        ]}], "rules": {}});
        let trace = vec![
            json!({"kind": "request", "n": 1}),
            json!({"kind": "request", "n": 2}),
        ];
        let test = Explained {
            name: "plain_stop::x".into(),
            lab: "7.1".into(),
            message: "step 2 left the chapter's rules".into(),
            messages: Default::default(),
            evidence: Evidence { expected, trace },
        };
        let text = render(
            &test,
            Some("what it checks"),
            &[("skip-text", "any text".to_string())],
            Lang::En,
            Paint(false),
        );
        assert!(
            text.contains("what it checks") && text.contains("skip-text: any text"),
            "{text}"
        );
        assert!(text.contains("expected (the chapter)"), "{text}");
        let marked: Vec<&str> = text.lines().filter(|l| l.starts_with('>')).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(
            marked[0].contains("turn_end(stop)") && marked[0].contains("request #2"),
            "{text}"
        );
        assert!(render(&test, None, &[], Lang::Zh, Paint(false)).contains("应为（本章）"));
    }
}
