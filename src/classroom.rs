//! GitHub Classroom: the workflow `practice --classroom` adds to a practice directory, so that GitHub's
//! runners grade every push with GitHub Classroom's own autograding actions, one graded step per group
//! with its points. The workflow is the template `templates/classroom.yml`; this fills in the chapter.

use serde::Serialize;

use crate::catalog::Chapter;
use crate::i18n::Lang;

/// Where the workflow goes in the practice directory (the repository GitHub Classroom hands out).
pub const PATH: &str = ".github/workflows/classroom.yml";

/// What `PI_COURSE_GIT` says until the instructor fills in the repository pi-course is installed from.
pub const PLACEHOLDER: &str = "https://github.com/YOUR-ORG/pi-course";

/// Minutes one graded step may take (the autograding action's `timeout`); the build before the graded
/// steps compiles the dependencies, so each step only runs its group.
const STEP_MINUTES: u32 = 10;

#[derive(Serialize)]
struct Workflow {
    chapter: String,
    version: &'static str,
    lang: &'static str,
    install: String,
    placeholder: &'static str,
    timeout: u32,
    /// The TypeScript track: the runner needs Node.js.
    typescript: bool,
    groups: Vec<Step>,
    runners: String,
}

#[derive(Serialize)]
struct Step {
    /// The step's id, which the reporter names in `runners` and in `<ID>_RESULTS`.
    id: String,
    env: String,
    name: String,
    command: String,
    points: u32,
    optional: bool,
}

pub fn workflow(chapter: &Chapter, lang: Lang) -> Result<String, String> {
    let version = env!("CARGO_PKG_VERSION");
    let groups: Vec<Step> = chapter
        .groups
        .iter()
        .map(|g| Step {
            id: g.slug.clone(),
            env: format!("{}_RESULTS", g.slug.to_ascii_uppercase()),
            name: format!("Lab {} {}", g.lab, g.title(lang)),
            command: format!("pi-course grade --group {}", g.slug),
            points: g.points,
            optional: g.optional,
        })
        .collect();
    let runners = groups
        .iter()
        .map(|s| s.id.as_str())
        .collect::<Vec<_>>()
        .join(",");
    crate::templates::render(
        "classroom.yml",
        Workflow {
            chapter: chapter.id.clone(),
            version,
            lang: lang.code(),
            // pi-course is not in a package registry: installed from its repository, which the
            // instructor names in `PI_COURSE_GIT`.
            install: "cargo install --locked --git \"$PI_COURSE_GIT\" pi-course".to_string(),
            placeholder: PLACEHOLDER,
            timeout: STEP_MINUTES,
            typescript: chapter.track == crate::catalog::Track::TypeScript,
            groups,
            runners,
        },
    )
}
