//! The chapters embedded in this binary, read into plain types. Knows nothing about processes or terminals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::i18n::Lang;
pub use crate::i18n::Text;
use crate::sandbox::Policy;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// One test group of a chapter: a Lab, run by the module named after its slug.
#[derive(Debug, Clone, Deserialize)]
pub struct Group {
    pub slug: String,
    pub lab: String,
    pub name: Text,
    pub hint: Text,
    /// Optional groups are graded and shown, but never decide the verdict.
    #[serde(default)]
    pub optional: bool,
    /// What the group is worth. An optional group's points are a bonus: a grade's total never goes past
    /// the points of the groups that decide it (see `GradeResult::score`).
    pub points: u32,
}

impl Group {
    /// The test module that holds this group's tests (`plain-stop` → `plain_stop`).
    pub fn module(&self) -> String {
        self.slug.replace('-', "_")
    }

    /// The group's name in `lang`, marked when the group is optional: `重复 call id（可选）`.
    pub fn title(&self, lang: Lang) -> String {
        let mut title = self.name.get(lang).to_string();
        if self.optional {
            title.push_str(&lang.t("list-optional", &[]));
        }
        title
    }

    /// Does `query` name this group? Slug (either spelling), either language's name, or the Lab number.
    pub fn is_named(&self, query: &str) -> bool {
        let q = query.trim();
        q.eq_ignore_ascii_case(&self.slug)
            || q.eq_ignore_ascii_case(&self.module())
            || q == self.name.zh
            || q.eq_ignore_ascii_case(&self.name.en)
            || q == self.lab
            || q.strip_prefix("Lab ").or_else(|| q.strip_prefix("lab ")) == Some(self.lab.as_str())
    }
}

/// The language a learner does a chapter in: its course code, its tests and the toolchain that grades
/// them. A chapter's Rust track lives at the top of its folder; another track in a folder of its own
/// (`typescript/`) with a `track.toml` that says what differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    #[default]
    Rust,
    #[serde(rename = "typescript")]
    TypeScript,
}

impl Track {
    pub const ALL: [Track; 2] = [Track::Rust, Track::TypeScript];

    /// The name users type and metadata records: `rust`, `typescript`.
    pub fn name(self) -> &'static str {
        match self {
            Track::Rust => "rust",
            Track::TypeScript => "typescript",
        }
    }

    /// The prefix of the full names of `group`'s tests in this track (see [`Chapter::test_prefix`]).
    pub fn test_prefix(self, group: &Group) -> String {
        match self {
            Track::Rust => format!("{}::", group.module()),
            Track::TypeScript => format!("{} › ", group.name.zh),
        }
    }

    /// The full name of the test of scenario `scenario` (snake case) in `group`: `plain_stop::the_x` in
    /// Rust, `纯文本 stop › the x` in TypeScript (docs/JUDGE.md).
    pub fn test_name(self, group: &Group, scenario: &str) -> String {
        match self {
            Track::Rust => format!("{}{scenario}", self.test_prefix(group)),
            Track::TypeScript => {
                format!("{}{}", self.test_prefix(group), scenario.replace('_', " "))
            }
        }
    }

    /// The track's folder inside a chapter's folder (`""` for the Rust track, which is the chapter's top).
    fn folder(self) -> &'static str {
        match self {
            Track::Rust => "",
            Track::TypeScript => "typescript/",
        }
    }
}

/// What a chapter's second track changes (`chapters/<chapter>/typescript/track.toml`): everything else,
/// the groups above all (their slugs, Labs, names and points), is the chapter's.
#[derive(Debug, Clone, Deserialize)]
struct TrackManifest {
    snapshot: Option<String>,
    default_dir: String,
    editable: Vec<String>,
    test_target: String,
    guide: Text,
    #[serde(default = "first_layout")]
    layout: u32,
    /// The track's layouts that an older pi-course made (`typescript/layouts/<n>/`).
    #[serde(default, rename = "old_layout")]
    old_layouts: Vec<OldLayout>,
    /// Hints by group slug: a track's hints name its own code and commands.
    #[serde(default)]
    hints: BTreeMap<String, Text>,
}

#[derive(Debug, Clone, Deserialize)]
struct Manifest {
    id: String,
    title: Text,
    snapshot: Option<String>,
    default_dir: String,
    editable: Vec<String>,
    test_target: String,
    guide: Text,
    /// Whether a group that does not pass earns part of its points, by the share of its tests that
    /// passed. Off by default: a group is all or nothing, as the guide teaches it.
    #[serde(default)]
    partial_credit: bool,
    #[serde(rename = "group")]
    groups: Vec<Group>,
    #[serde(default = "first_layout")]
    layout: u32,
    #[serde(default, rename = "old_layout")]
    old_layouts: Vec<OldLayout>,
    /// What the chapter's tests may do; by default only what every test may (see [`Policy`]).
    #[serde(default)]
    sandbox: Policy,
}

fn first_layout() -> u32 {
    1
}

/// A layout of the practice directory that an older pi-course made: still graded, never made again.
#[derive(Debug, Clone, Deserialize)]
pub struct OldLayout {
    pub layout: u32,
    /// Paths of `files/` that this layout does not have; one ending in `/` is a directory.
    #[serde(default)]
    pub without: Vec<String>,
}

/// A chapter: its manifest plus where its files live in the embedded tree.
#[derive(Debug, Clone)]
pub struct Chapter {
    pub id: String,
    /// The folder name under `chapters/`, e.g. `07-agent-loop`.
    pub folder: String,
    pub title: Text,
    pub snapshot: Option<String>,
    pub default_dir: String,
    pub editable: Vec<String>,
    pub test_target: String,
    pub guide: Text,
    /// See `Manifest::partial_credit`.
    pub partial_credit: bool,
    pub groups: Vec<Group>,
    /// The layout whose given files this value describes: the current one, unless a practice directory
    /// of an older layout was opened (see [`Chapter::with_layout`]).
    pub layout: u32,
    /// The layout `practice` makes now.
    pub current_layout: u32,
    pub old_layouts: Vec<OldLayout>,
    /// The track this value describes (see [`Chapter::with_track`]).
    pub track: Track,
    /// The chapter's other tracks, as their manifests describe them.
    other_tracks: Vec<(Track, TrackManifest)>,
    /// What the chapter's tests may do, in every track.
    pub sandbox: Policy,
}

/// Which Lab the learner is on, the one place this is decided: the first of `labs` (in chapter order)
/// that does not pass among the required ones; when every required one passes, the first optional one
/// that does not. `None` when every Lab passes. Works on groups, their results, or their last verdicts.
pub fn lab_to_work_on<T>(
    labs: &[T],
    optional: impl Fn(&T) -> bool,
    passes: impl Fn(&T) -> bool,
) -> Option<&T> {
    let first = |want_optional: bool| {
        labs.iter()
            .find(|lab| optional(lab) == want_optional && !passes(lab))
    };
    first(false).or_else(|| first(true))
}

/// A file as it goes into a practice directory.
#[derive(Debug, Clone, Copy)]
pub struct File {
    /// Path inside the practice directory, `/`-separated.
    pub path: &'static str,
    pub bytes: &'static [u8],
}

impl Chapter {
    fn embedded_under(prefix: &str) -> impl Iterator<Item = File> + '_ {
        embedded::FILES.iter().filter_map(move |(path, bytes)| {
            path.strip_prefix(prefix)
                .map(|rest| File { path: rest, bytes })
        })
    }

    /// The tracks a learner can do this chapter in, the default first.
    pub fn tracks(&self) -> Vec<Track> {
        let mut tracks = vec![Track::Rust];
        tracks.extend(self.other_tracks.iter().map(|(t, _)| *t));
        tracks
    }

    /// This chapter in `track`, `None` when the chapter has no such track. Called on the chapter as the
    /// catalog holds it (its Rust track).
    pub fn with_track(&self, track: Track) -> Option<Chapter> {
        if track == self.track {
            return Some(self.clone());
        }
        let (_, m) = self.other_tracks.iter().find(|(t, _)| *t == track)?;
        let groups = self
            .groups
            .iter()
            .map(|g| Group {
                hint: m
                    .hints
                    .get(&g.slug)
                    .cloned()
                    .unwrap_or_else(|| g.hint.clone()),
                ..g.clone()
            })
            .collect();
        Some(Chapter {
            snapshot: m.snapshot.clone(),
            default_dir: m.default_dir.clone(),
            editable: m.editable.clone(),
            test_target: m.test_target.clone(),
            guide: m.guide.clone(),
            groups,
            layout: m.layout,
            current_layout: m.layout,
            old_layouts: m.old_layouts.clone(),
            track,
            ..self.clone()
        })
    }

    /// The prefix of the full names of `group`'s tests: the Rust track's test module
    /// (`plain_stop::`), the TypeScript track's Chinese group name (`纯文本 stop › `), which is what the
    /// chapter's text tells learners to pass to `node --test --test-name-pattern`.
    pub fn test_prefix(&self, group: &Group) -> String {
        self.track.test_prefix(group)
    }

    /// This chapter as a practice directory of `layout` sees it: the current layout, or an older one it
    /// still grades. `None` for a layout this pi-course does not know (a newer one).
    pub fn with_layout(&self, layout: u32) -> Option<Chapter> {
        let known =
            layout == self.current_layout || self.old_layouts.iter().any(|o| o.layout == layout);
        known.then(|| Chapter {
            layout,
            ..self.clone()
        })
    }

    /// The given files of this layout, in the order they are written: the test harness, the snapshot,
    /// then the chapter's own files (a chapter file overrides a snapshot file of the same path); for an
    /// old layout, the chapter's files it had, then its own versions from `layouts/<n>/`.
    pub fn given_files(&self) -> Vec<File> {
        let mut by_path: BTreeMap<&'static str, File> = BTreeMap::new();
        // Every chapter's tests run on its track's harness, which speaks the grader's verdict channel:
        // `harness/` for Rust, `harness-node/harness/` for TypeScript (both land in `harness/`).
        let harness: Vec<File> = match self.track {
            Track::Rust => Self::embedded_under("")
                .filter(|f| f.path.starts_with("harness/"))
                .collect(),
            Track::TypeScript => Self::embedded_under("harness-node/").collect(),
        };
        for f in harness {
            by_path.insert(f.path, f);
        }
        if let Some(snapshot) = &self.snapshot {
            for f in Self::embedded_under(&format!("snapshots/{snapshot}/")) {
                by_path.insert(f.path, f);
            }
        }
        let old = self.old_layouts.iter().find(|o| o.layout == self.layout);
        let without = old.map_or(&[][..], |o| o.without.as_slice());
        for f in Self::embedded_under(&self.content_dir("files")) {
            let dropped = without.iter().any(|w| match w.strip_suffix('/') {
                Some(dir) => f.path.starts_with(&format!("{dir}/")),
                None => f.path == w,
            });
            if !dropped {
                by_path.insert(f.path, f);
            }
        }
        if old.is_some() {
            let layout_dir = self.content_dir(&format!("layouts/{}", self.layout));
            for f in Self::embedded_under(&layout_dir) {
                by_path.insert(f.path, f);
            }
        }
        for editable in &self.editable {
            by_path.remove(editable.as_str());
        }
        by_path.into_values().collect()
    }

    /// Where a folder of this chapter's track lives in the embedded tree: `chapters/07-agent-loop/files/`,
    /// `chapters/07-agent-loop/typescript/files/`.
    fn content_dir(&self, name: &str) -> String {
        format!("chapters/{}/{}{name}/", self.folder, self.track.folder())
    }

    /// The editable files as the learner first receives them by default (the Chinese skeleton).
    #[cfg(test)]
    pub fn skeleton_files(&self) -> Vec<File> {
        self.skeleton_files_in(Lang::Zh)
    }

    /// The skeleton in `lang`: `skeleton.<lang>/` where the chapter has one (its comments and `todo!()`
    /// texts translated), else `skeleton/`. Both declare the same code, so grading never depends on it.
    pub fn skeleton_files_in(&self, lang: Lang) -> Vec<File> {
        let dir =
            |name: &str| -> Vec<File> { Self::embedded_under(&self.content_dir(name)).collect() };
        let (default, translated) = match lang {
            Lang::Zh => (dir("skeleton"), Vec::new()),
            Lang::En => (dir("skeleton"), dir("skeleton.en")),
        };
        self.editable
            .iter()
            .filter_map(|path| {
                let find = |files: &[File]| files.iter().find(|f| f.path == path).copied();
                find(&translated).or_else(|| find(&default))
            })
            .collect()
    }

    /// One line per group, `  7.1   plain-stop           纯文本 stop`: how errors and `list` name the
    /// groups a learner can choose from.
    pub fn group_lines(&self, lang: Lang) -> String {
        self.groups
            .iter()
            .map(|g| format!("  {:<5} {:<20} {}", g.lab, g.slug, g.title(lang)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Finds a group by slug, name or Lab number.
    pub fn group(&self, query: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.is_named(query))
    }

    /// Is `query` a name of this chapter? `07`, `7`, `07-agent-loop` or `agent-loop`.
    fn is_named(&self, query: &str) -> bool {
        let q = query.trim();
        q == self.id
            || q == self.folder
            || self
                .folder
                .split_once('-')
                .is_some_and(|(_, slug)| q == slug)
            || (q.parse::<u32>().ok()).is_some_and(|n| self.id.parse::<u32>() == Ok(n))
    }
}

/// Every chapter embedded in the binary.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub chapters: Vec<Chapter>,
}

impl Catalog {
    /// Reads the embedded manifests. A malformed manifest is a bug in this build, so it panics with the
    /// manifest's path; the project's tests load the catalog, so such a build never ships.
    pub fn embedded() -> Catalog {
        let mut chapters = Vec::new();
        for (path, bytes) in embedded::FILES {
            let Some(rest) = path.strip_prefix("chapters/") else {
                continue;
            };
            let Some((folder, "chapter.toml")) = rest.split_once('/') else {
                continue;
            };
            let text = std::str::from_utf8(bytes).expect("chapter.toml is UTF-8");
            let m: Manifest =
                toml::from_str(text).unwrap_or_else(|e| panic!("invalid {path}: {e}"));
            let other_tracks = Track::ALL
                .into_iter()
                .filter(|t| *t != Track::Rust)
                .filter_map(|t| {
                    let path = format!("chapters/{folder}/{}track.toml", t.folder());
                    let bytes = Catalog::file(&path)?;
                    let text = std::str::from_utf8(bytes).expect("track.toml is UTF-8");
                    let m: TrackManifest =
                        toml::from_str(text).unwrap_or_else(|e| panic!("invalid {path}: {e}"));
                    Some((t, m))
                })
                .collect();
            chapters.push(Chapter {
                id: m.id,
                folder: folder.to_string(),
                title: m.title,
                snapshot: m.snapshot,
                default_dir: m.default_dir,
                editable: m.editable,
                test_target: m.test_target,
                layout: m.layout,
                current_layout: m.layout,
                old_layouts: m.old_layouts,
                guide: m.guide,
                partial_credit: m.partial_credit,
                groups: m.groups,
                track: Track::Rust,
                other_tracks,
                sandbox: m.sandbox,
            });
        }
        chapters.sort_by(|a, b| a.id.cmp(&b.id));
        Catalog { chapters }
    }

    pub fn chapter(&self, query: &str) -> Option<&Chapter> {
        self.chapters.iter().find(|c| c.is_named(query))
    }

    /// Chapter 07, embedded: the chapter the unit tests work on.
    #[cfg(test)]
    pub fn chapter_07() -> Chapter {
        Catalog::embedded()
            .chapter("07")
            .expect("chapter 07")
            .clone()
    }

    /// Every embedded file under `prefix` (e.g. `templates/`): (path after the prefix, bytes).
    pub fn files_under(prefix: &str) -> impl Iterator<Item = (&'static str, &'static [u8])> + '_ {
        embedded::FILES
            .iter()
            .filter_map(move |(path, bytes)| Some((path.strip_prefix(prefix)?, *bytes)))
    }

    /// A chapter's file from `templates/` or elsewhere in the embedded tree, by repository path.
    pub fn file(path: &str) -> Option<&'static [u8]> {
        embedded::FILES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, bytes)| *bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_to_work_on_is_the_first_required_one_not_passing_then_an_optional_one() {
        // (lab, optional, passes)
        let labs = [
            ("7.1", false, true),
            ("7.2", false, false),
            ("7.6", true, false),
        ];
        let on = |labs: &[(&'static str, bool, bool)]| {
            lab_to_work_on(labs, |l| l.1, |l| l.2).map(|l| l.0)
        };
        assert_eq!(on(&labs), Some("7.2"));
        assert_eq!(
            on(&[("7.6", true, false), ("7.1", false, false)]),
            Some("7.1")
        );
        assert_eq!(
            on(&[("7.1", false, true), ("7.6", true, false)]),
            Some("7.6")
        );
        assert_eq!(on(&[("7.1", false, true), ("7.6", true, true)]), None);
    }

    #[test]
    fn chapter_07_is_embedded_without_its_solution() {
        let catalog = Catalog::embedded();
        let ch = catalog.chapter("07").expect("chapter 07");
        assert_eq!(ch.groups.len(), 6);
        let required: u32 = ch
            .groups
            .iter()
            .filter(|g| !g.optional)
            .map(|g| g.points)
            .sum();
        assert_eq!(required, 100, "the required groups are worth 100 points");
        assert!(ch.groups.iter().all(|g| g.points > 0));
        assert!(
            !ch.partial_credit,
            "all or nothing per group, as the guide teaches it"
        );
        assert!(embedded::FILES
            .iter()
            .all(|(p, _)| !p.contains("/solution/")
                && !p.contains("/alternatives/")
                && !p.ends_with("mutants.toml")
                && !p.ends_with("staged.toml")));
        assert!(ch
            .given_files()
            .iter()
            .all(|f| f.path != "src/agent_loop.rs"));
        assert_eq!(ch.skeleton_files().len(), ch.editable.len());
        let english = ch.skeleton_files_in(Lang::En);
        assert_eq!(english.len(), ch.editable.len());
        for (zh, en) in ch.skeleton_files().iter().zip(&english) {
            assert_eq!(zh.path, en.path);
            assert_ne!(zh.bytes, en.bytes, "{} has an English skeleton", zh.path);
        }
    }

    #[test]
    fn chapter_07_has_a_typescript_track_with_the_same_groups() {
        let catalog = Catalog::embedded();
        let rust = catalog.chapter("07").unwrap();
        assert_eq!(rust.tracks(), vec![Track::Rust, Track::TypeScript]);
        let ts = rust
            .with_track(Track::TypeScript)
            .expect("the TypeScript track");
        assert_eq!(ts.track, Track::TypeScript);
        assert_eq!(ts.editable, vec!["src/agent-loop.ts".to_string()]);
        let slugs = |c: &Chapter| c.groups.iter().map(|g| g.slug.clone()).collect::<Vec<_>>();
        assert_eq!(slugs(&ts), slugs(rust));
        for (r, t) in rust.groups.iter().zip(&ts.groups) {
            assert_eq!(
                (r.points, &r.lab, &r.name.zh),
                (t.points, &t.lab, &t.name.zh)
            );
            assert_ne!(
                r.hint.zh, t.hint.zh,
                "{}: the track has its own hint",
                r.slug
            );
        }
        let given = ts.given_files();
        let has = |path: &str| given.iter().any(|f| f.path == path);
        assert!(has("package.json") && has("package-lock.json") && has("tsconfig.json"));
        assert!(has("harness/run.mjs") && has("src/message.ts") && has("test/support.ts"));
        assert!(!has("src/agent-loop.ts") && !has("Cargo.toml") && !has("harness/Cargo.toml"));
        assert!(!rust.given_files().iter().any(|f| f.path.ends_with(".ts")));
        assert_eq!(ts.skeleton_files_in(Lang::En).len(), 1);
        assert_ne!(
            ts.skeleton_files_in(Lang::En)[0].bytes,
            ts.skeleton_files_in(Lang::Zh)[0].bytes
        );
        let plain = &ts.groups[0];
        assert_eq!(ts.test_prefix(plain), "纯文本 stop › ");
        assert_eq!(rust.test_prefix(plain), "plain_stop::");
    }

    #[test]
    fn groups_are_found_by_slug_name_and_lab() {
        let catalog = Catalog::embedded();
        let ch = catalog.chapter("7").unwrap();
        for q in ["plain-stop", "plain_stop", "纯文本 stop", "7.1", "Lab 7.1"] {
            assert_eq!(
                ch.group(q).map(|g| g.slug.as_str()),
                Some("plain-stop"),
                "{q}"
            );
        }
        assert!(ch.group("7.9").is_none());
    }
}
