//! The class report: `index.html` (the class at a glance and a sortable table of learners) and one page
//! per learner, rendered from the templates under `templates/class/` with what `summary.json` and each
//! learner's JSON report say. The pages are static: no server, nothing fetched. Their style sheet and
//! script are inline, and a Content-Security-Policy allows exactly those two by their SHA-256 and
//! nothing else: no other script (not one that slipped into a learner's compile error), no request to
//! anywhere.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::summary::{Row, Summary};
use crate::i18n::Lang;
use crate::templates;

/// Learners in the list of failures most common across the class.
const COMMON_FAILURES: usize = 10;
/// Bars of the score histogram.
const BINS: usize = 10;
/// Characters of an example failure message.
const EXAMPLE_CHARS: usize = 600;

/// What every page shares: wording, the inline style sheet and script, and the policy that allows them.
#[derive(Serialize)]
struct Page {
    lang: &'static str,
    t: BTreeMap<String, String>,
    css: &'static str,
    js: &'static str,
    csp: String,
    chapter: String,
    title: String,
}

impl Page {
    fn new(lang: Lang, chapter: &str, title: &str) -> Page {
        let css = templates::text("class/report.css");
        let js = templates::text("class/report.js");
        let csp = format!(
            "default-src 'none'; style-src '{}'; script-src '{}'; img-src 'none'; base-uri 'none'; \
             form-action 'none'",
            hash(css),
            hash(js)
        );
        Page {
            lang: lang.code(),
            t: lang.texts("class-html-"),
            css,
            js,
            csp,
            chapter: chapter.to_string(),
            title: title.to_string(),
        }
    }
}

/// A CSP source for an inline element's exact text.
fn hash(text: &str) -> String {
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
    )
}

/// `name` as one path segment of a URL: every byte but the unreserved ones percent-encoded.
pub fn url_segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn status_text(status: &str, lang: Lang) -> String {
    match status {
        "pass" => lang.t("grade-status-pass", &[]),
        "fail" => lang.t("grade-status-fail", &[]),
        "timeout" => lang.t("grade-status-timeout", &[]),
        _ => lang.t("grade-status-error", &[]),
    }
}

fn points(x: f64) -> String {
    crate::outcome::format_points(x)
}

#[derive(Serialize)]
struct Index {
    #[serde(flatten)]
    page: Page,
    learners: usize,
    passed: usize,
    failed: usize,
    unbuilt: usize,
    ungraded: usize,
    average: String,
    max: String,
    labs: Vec<LabBar>,
    bins: Vec<Bin>,
    failures: Vec<Failure>,
    columns: Vec<Column>,
    rows: Vec<TableRow>,
}

#[derive(Serialize)]
struct LabBar {
    lab: String,
    slug: String,
    name: String,
    optional: bool,
    passed: usize,
    /// The share of the class that passed, 0 to 1.
    rate: f64,
    percent: String,
    /// The bar's length in the chart's units (0 to 100).
    width: f64,
}

#[derive(Serialize)]
struct Bin {
    label: String,
    count: usize,
    /// The bar's height in the chart's units (0 to 100).
    height: f64,
}

/// A failing test, or several of one Lab that fail for exactly the same learners (as every test of a
/// Lab does for those who have not started it): one entry, so that a tie of many such tests does not
/// fill the list.
#[derive(Serialize)]
struct Failure {
    test: String,
    /// The other tests of the entry, by name.
    also: Vec<String>,
    lab: String,
    count: usize,
    example: String,
    example_from: Link,
    learners: Vec<Link>,
}

#[derive(Serialize, Clone)]
struct Link {
    name: String,
    href: String,
}

#[derive(Serialize)]
struct Column {
    key: String,
    label: String,
    numeric: bool,
}

#[derive(Serialize)]
struct TableRow {
    name: String,
    href: String,
    status: String,
    verdict: String,
    cells: Vec<Cell>,
}

#[derive(Serialize)]
struct Cell {
    key: String,
    /// What the table sorts by.
    value: String,
    text: String,
    /// A status, for the cell's color.
    status: String,
}

/// `index.html` for the class in `summary`; `reports` holds each learner's JSON report by name (a learner
/// whose report cannot be read counts in the table, not in the list of failures).
pub fn index(
    summary: &Summary,
    reports: &BTreeMap<String, Value>,
    lang: Lang,
    title: &str,
) -> Result<String, String> {
    let rows = &summary.learners;
    let n = rows.len();
    let count = |verdict: &str| rows.iter().filter(|r| r.verdict() == verdict).count();
    let average = if n == 0 {
        0.0
    } else {
        rows.iter().map(|r| r.total).sum::<f64>() / n as f64
    };
    let labs = summary
        .groups
        .iter()
        .map(|g| {
            let passed = rows
                .iter()
                .filter(|r| {
                    r.groups
                        .iter()
                        .any(|c| c.slug == g.slug && c.status == "pass")
                })
                .count();
            let rate = if n == 0 {
                0.0
            } else {
                passed as f64 / n as f64
            };
            LabBar {
                lab: g.lab.clone(),
                slug: g.slug.clone(),
                name: g.name.clone(),
                optional: g.optional,
                passed,
                rate,
                percent: format!("{:.0}%", rate * 100.0),
                width: (rate * 1000.0).round() / 10.0,
            }
        })
        .collect();
    let mut counts = [0usize; BINS];
    for r in rows {
        let share = if summary.max > 0.0 {
            r.total / summary.max
        } else {
            0.0
        };
        counts[((share * BINS as f64).floor() as usize).min(BINS - 1)] += 1;
    }
    let highest = counts.iter().copied().max().unwrap_or(0).max(1);
    let step = summary.max / BINS as f64;
    let bins = counts
        .iter()
        .enumerate()
        .map(|(i, &count)| Bin {
            label: format!(
                "{}–{}",
                points(step * i as f64),
                points(step * (i + 1) as f64)
            ),
            count,
            height: (count as f64 / highest as f64 * 1000.0).round() / 10.0,
        })
        .collect();

    let mut columns = vec![
        Column {
            key: "name".into(),
            label: lang.t("class-html-col-name", &[]),
            numeric: false,
        },
        Column {
            key: "status".into(),
            label: lang.t("class-html-col-status", &[]),
            numeric: false,
        },
        Column {
            key: "total".into(),
            label: lang.t("class-html-col-total", &[("max", &points(summary.max))]),
            numeric: true,
        },
    ];
    for g in &summary.groups {
        columns.push(Column {
            key: g.slug.clone(),
            label: format!("{} ({})", g.lab, g.points),
            numeric: true,
        });
    }
    columns.push(Column {
        key: "build".into(),
        label: lang.t("class-html-col-build", &[]),
        numeric: false,
    });
    columns.push(Column {
        key: "seconds".into(),
        label: lang.t("class-html-col-seconds", &[]),
        numeric: true,
    });
    let table = rows.iter().map(|r| table_row(r, summary, lang)).collect();

    let index = Index {
        page: Page::new(lang, &summary.chapter, title),
        learners: n,
        passed: count("pass"),
        failed: count("fail"),
        unbuilt: count("unbuilt"),
        ungraded: count("ungraded"),
        average: points(average),
        max: points(summary.max),
        labs,
        bins,
        failures: common_failures(summary, reports),
        columns,
        rows: table,
    };
    templates::render("class/index.html", &index)
}

fn link(name: &str) -> Link {
    Link {
        name: name.to_string(),
        href: format!("learners/{}.html", url_segment(name)),
    }
}

fn table_row(r: &Row, summary: &Summary, lang: Lang) -> TableRow {
    let mut cells = vec![
        Cell {
            key: "name".into(),
            value: r.name.clone(),
            text: r.name.clone(),
            status: String::new(),
        },
        Cell {
            key: "status".into(),
            value: r.verdict().into(),
            text: r.verdict_text(lang),
            status: r.status.clone(),
        },
        Cell {
            key: "total".into(),
            value: r.total.to_string(),
            text: points(r.total),
            status: r.status.clone(),
        },
    ];
    for g in &summary.groups {
        let cell = r.groups.iter().find(|c| c.slug == g.slug);
        cells.push(Cell {
            key: g.slug.clone(),
            value: cell.map_or(-1.0, |c| c.score).to_string(),
            text: cell.map_or(String::new(), |c| points(c.score)),
            status: cell.map_or(String::new(), |c| c.status.clone()),
        });
    }
    cells.push(Cell {
        key: "build".into(),
        value: r.build.clone(),
        text: lang.t(&format!("class-build-{}", r.build), &[]),
        status: if r.build == "ok" { "pass" } else { "error" }.into(),
    });
    cells.push(Cell {
        key: "seconds".into(),
        value: r.seconds.to_string(),
        text: format!("{:.1}", r.seconds),
        status: String::new(),
    });
    TableRow {
        name: r.name.clone(),
        href: link(&r.name).href,
        status: r.status.clone(),
        verdict: r.verdict().into(),
        cells,
    }
}

/// The failing tests most common across the class: how many learners share each, which, and the message
/// of the first of them (by name).
fn common_failures(summary: &Summary, reports: &BTreeMap<String, Value>) -> Vec<Failure> {
    let labs: BTreeMap<String, String> = summary
        .groups
        .iter()
        .map(|g| (g.slug.clone(), g.lab.clone()))
        .collect();
    let mut by_test: BTreeMap<String, Failure> = BTreeMap::new();
    for row in &summary.learners {
        let Some(report) = reports.get(&row.name) else {
            continue;
        };
        for group in report["groups"].as_array().into_iter().flatten() {
            let lab = labs
                .get(group["slug"].as_str().unwrap_or_default())
                .cloned()
                .unwrap_or_default();
            for test in group["tests"].as_array().into_iter().flatten() {
                if test["status"] == "pass" {
                    continue;
                }
                let name = test["name"].as_str().unwrap_or_default().to_string();
                let entry = by_test.entry(name.clone()).or_insert_with(|| Failure {
                    test: name,
                    also: Vec::new(),
                    lab: lab.clone(),
                    count: 0,
                    example: cut(test["message"].as_str().unwrap_or_default()),
                    example_from: link(&row.name),
                    learners: Vec::new(),
                });
                entry.count += 1;
                entry.learners.push(link(&row.name));
            }
        }
    }
    // Tests of one Lab that fail for the same learners become one entry, under the first by name.
    let mut shared: BTreeMap<(String, Vec<String>), Failure> = BTreeMap::new();
    for failure in by_test.into_values() {
        let who: Vec<String> = failure.learners.iter().map(|l| l.name.clone()).collect();
        match shared.entry((failure.lab.clone(), who)) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(failure);
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                slot.get_mut().also.push(failure.test)
            }
        }
    }
    let mut failures: Vec<Failure> = shared.into_values().collect();
    failures.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.test.cmp(&b.test)));
    failures.truncate(COMMON_FAILURES);
    failures
}

fn cut(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= EXAMPLE_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(EXAMPLE_CHARS).collect();
    cut.push('…');
    cut
}

#[derive(Serialize)]
struct Learner {
    #[serde(flatten)]
    page: Page,
    name: String,
    status: String,
    status_text: String,
    score: String,
    max: String,
    summary: String,
    /// The reason in full when the tests did not run (for a compile error, rustc's output).
    problem: Option<String>,
    warnings: Vec<String>,
    sandbox: String,
    groups: Vec<LearnerGroup>,
    report: String,
    junit: String,
}

#[derive(Serialize)]
struct LearnerGroup {
    lab: String,
    name: String,
    optional: bool,
    status: String,
    status_text: String,
    passed: u64,
    total: u64,
    score: String,
    max: String,
    failures: Vec<TestFailure>,
}

#[derive(Serialize)]
struct TestFailure {
    name: String,
    status: String,
    message: String,
    /// The expected and the actual timeline side by side (`pi-course explain`), when the test ran.
    timeline: Option<String>,
}

/// A learner's own page: their groups, every failure with its message, and the build's output when
/// their code did not build.
pub fn learner(
    row: &Row,
    report: &Value,
    timelines: &BTreeMap<String, String>,
    lang: Lang,
    title: &str,
    chapter: &str,
) -> Result<String, String> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let message = text(&report["message"]);
    let (summary, rest) = match message.split_once('\n') {
        Some((first, rest)) => (first.to_string(), Some(rest.trim().to_string())),
        None => (message.clone(), None),
    };
    let sandbox = &report["sandbox"];
    let layers: Vec<String> = sandbox["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let sandbox = match sandbox["reason"].as_str() {
        None => lang.t("grade-sandbox-on", &[("layers", &layers.join(", "))]),
        Some(reason) => lang.t(
            "grade-sandbox-off",
            &[("reason", &reason), ("layers", &layers.join(", "))],
        ),
    };
    let groups = report["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| LearnerGroup {
            lab: text(&g["lab"]),
            name: text(&g["name"]),
            optional: g["optional"] == true,
            status: text(&g["status"]),
            status_text: status_text(g["status"].as_str().unwrap_or_default(), lang),
            passed: g["passed"].as_u64().unwrap_or(0),
            total: g["total"].as_u64().unwrap_or(0),
            score: points(g["score"].as_f64().unwrap_or(0.0)),
            max: points(g["max"].as_f64().unwrap_or(0.0)),
            failures: g["tests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| t["status"] != "pass")
                .map(|t| TestFailure {
                    name: text(&t["name"]),
                    status: text(&t["status"]),
                    message: text(&t["message"]),
                    timeline: timelines.get(&text(&t["name"])).cloned(),
                })
                .collect(),
        })
        .collect();
    let page = Learner {
        page: Page::new(lang, chapter, title),
        name: row.name.clone(),
        status: row.status.clone(),
        status_text: row.verdict_text(lang),
        score: points(row.total),
        max: points(row.max),
        summary,
        problem: rest.filter(|r| !r.is_empty()),
        warnings: report["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect(),
        sandbox,
        groups,
        report: format!("{}.json", url_segment(&row.name)),
        junit: format!("{}.xml", url_segment(&row.name)),
    };
    templates::render("class/learner.html", &page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_safe_url_segments() {
        assert_eq!(url_segment("alice"), "alice");
        assert_eq!(url_segment("a b#?/\"<"), "a%20b%23%3F%2F%22%3C");
        assert_eq!(url_segment("张三"), "%E5%BC%A0%E4%B8%89");
    }

    /// Tests of one Lab that fail for the same learners are one entry: a class where two learners have
    /// not started Lab 7.2 sees that once, beside the test a third learner fails as well.
    #[test]
    fn failures_the_same_learners_share_in_one_lab_are_one_entry() {
        let row = |name: &str| {
            serde_json::json!({ "name": name, "status": "graded", "graded": true, "groups": [],
                "total": 0.0, "max": 100.0, "build": "", "sandbox": "", "track": "rust", "warnings": [],
                "seconds": 1.0, "sha256": "", "message": "", "report": "", "junit": "", "page": "" })
        };
        let summary: Summary = serde_json::from_value(serde_json::json!({
            "format": "pi-course-class", "version": 1, "pi_course": "0", "chapter": "07", "lang": "en",
            "max": 100.0,
            "groups": [
                { "slug": "plain-stop", "lab": "7.1", "name": "p", "points": 20, "optional": false },
                { "slug": "single-tool", "lab": "7.2", "name": "s", "points": 20, "optional": false },
            ],
            "learners": [row("ann"), row("bob"), row("cat")],
        }))
        .unwrap();
        let report = |tests: &[(&str, &str)]| {
            let groups: Vec<Value> = tests
                .iter()
                .map(|(slug, name)| {
                    serde_json::json!({ "slug": slug, "tests": [
                        { "name": name, "status": "fail", "message": format!("{name} failed") }] })
                })
                .collect();
            serde_json::json!({ "groups": groups })
        };
        let untouched = [
            ("single-tool", "t1"),
            ("single-tool", "t2"),
            ("single-tool", "t3"),
        ];
        let reports = BTreeMap::from([
            ("ann".to_string(), report(&untouched)),
            ("bob".to_string(), report(&untouched)),
            (
                "cat".to_string(),
                report(&[("plain-stop", "p1"), ("single-tool", "t2")]),
            ),
        ]);
        let failures = common_failures(&summary, &reports);
        let seen: Vec<(&str, Vec<&str>, usize)> = failures
            .iter()
            .map(|f| {
                (
                    f.test.as_str(),
                    f.also.iter().map(String::as_str).collect(),
                    f.count,
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![("t2", vec![], 3), ("t1", vec!["t3"], 2), ("p1", vec![], 1)]
        );
    }

    #[test]
    fn every_text_a_class_template_uses_exists_in_both_languages() {
        for name in ["class/index.html", "class/learner.html", "class/base.html"] {
            let template = templates::text(name);
            let uses = template.match_indices("t.").filter(|(at, _)| {
                template[..*at]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '.')
            });
            for (at, _) in uses {
                let key: String = template[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if key.is_empty() {
                    continue;
                }
                for lang in [Lang::Zh, Lang::En] {
                    assert!(
                        lang.texts("class-html-").contains_key(&key),
                        "{name}: t.{key} is not in templates/messages.toml ({lang:?})"
                    );
                }
            }
        }
    }
}
