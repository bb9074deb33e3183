//! The command line: one subcommand per thing a learner or instructor does.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::i18n::Lang;
pub use crate::report::Format;
use crate::ui::ColorChoice;

#[derive(Debug, Parser)]
#[command(name = "pi-course", version, about = "Practice and grade the pi coding-agent course", long_about = None)]
pub struct Cli {
    /// Language of learner-facing text: zh (default) or en; a locale such as en_US.UTF-8 counts as en
    #[arg(long, global = true, env = "PI_COURSE_LANG", value_parser = parse_lang)]
    pub lang: Option<Lang>,

    /// Colors: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

/// `--format` of `grade-class` and `merge-class`: a summary for a person, or `summary.json`. (Gradescope's
/// results are one learner's: `grade --format gradescope`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClassFormat {
    Human,
    Json,
}

impl From<ClassFormat> for Format {
    fn from(format: ClassFormat) -> Format {
        match format {
            ClassFormat::Human => Format::Human,
            ClassFormat::Json => Format::Json,
        }
    }
}

/// `--track`: the tracks a chapter can have (see `catalog::Track`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TrackArg {
    Rust,
    #[value(name = "typescript", alias = "ts")]
    TypeScript,
}

impl From<TrackArg> for crate::catalog::Track {
    fn from(track: TrackArg) -> Self {
        match track {
            TrackArg::Rust => crate::catalog::Track::Rust,
            TrackArg::TypeScript => crate::catalog::Track::TypeScript,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a fresh practice directory for a chapter
    Practice {
        /// Chapter id, e.g. 07
        chapter: String,
        /// Where to create it (must not exist, or be empty); default pi-practice-<chapter>
        dir: Option<PathBuf>,
        /// Also write .github/workflows/classroom.yml: GitHub Classroom grades every push, one step per
        /// group with its points
        #[arg(long)]
        classroom: bool,
        /// The language to do the chapter in: rust (default) or typescript (Node 20 or newer and npm)
        #[arg(long, value_enum, default_value_t = TrackArg::Rust, value_name = "TRACK")]
        track: TrackArg,
    },
    /// Build the learner's code and run the chapter's test groups against the pristine tests
    Grade(GradeArgs),
    /// Grade a whole class: each entry of SUBMISSIONS is one learner; reports, summaries and a class page
    /// go to --out
    GradeClass(ClassArgs),
    /// Join the parts of a class graded with `grade-class --shard K/N` into the class's results, as one
    /// machine grading the whole class would have written them
    MergeClass(MergeArgs),
    /// Grade now, then again each time an editable file is saved (keys: h hint, e explain the first
    /// failing test, r grade again, q quit)
    Watch {
        /// The practice directory (default: the one this folder is in)
        dir: Option<PathBuf>,
        /// Only poll the files for changes (when saves go unnoticed: network drives, WSL, some editors)
        #[arg(long)]
        poll: bool,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Show the hint for the first Lab that does not pass yet, or for the Lab named
    Hint {
        /// The practice directory (default: the one this folder is in; `pi-course hint 7.3` inside one
        /// names the Lab)
        dir: Option<PathBuf>,
        /// A Lab number (7.3), group slug or group name
        lab: Option<String>,
    },
    /// Show a failing test of the last grade: what the chapter expected beside what your loop did, step by
    /// step, with the first divergence marked
    Explain {
        /// The practice directory (default: the one this folder is in; `pi-course explain TEST` inside
        /// one names the test)
        dir: Option<PathBuf>,
        /// A group (Lab number 7.1, slug plain-stop or plain_stop, or name: its first failing test), a
        /// test's full name, or a part of a name only one failing test has (default: the first failing
        /// test)
        test: Option<String>,
    },
    /// Show the chapter, each Lab's last grade, changed given files, and how to start over
    Status {
        /// The practice directory (default: the one this folder is in)
        dir: Option<PathBuf>,
    },
    /// List the chapters and their test groups
    List,
    /// Print a chapter's pristine skeleton of the file you edit to stdout (never writes a file), e.g.
    /// `pi-course skeleton 07 > src/agent_loop.rs` to get back a deleted file
    Skeleton {
        /// Chapter id, e.g. 07
        chapter: String,
        /// The track whose skeleton to print: rust (default) or typescript
        #[arg(long, value_enum, default_value_t = TrackArg::Rust, value_name = "TRACK")]
        track: TrackArg,
    },
    /// Print a shell completion script to stdout, e.g. `pi-course completions bash >
    /// ~/.local/share/bash-completion/completions/pi-course`
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// The shells `completions` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

impl From<Shell> for clap_complete::Shell {
    fn from(shell: Shell) -> clap_complete::Shell {
        match shell {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
            Shell::Powershell => clap_complete::Shell::PowerShell,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    /// The practice directory (default: the one this folder is in, looking upward from here)
    pub dir: Option<PathBuf>,
    /// Only these groups: slug (plain-stop), name (plain-text stop, in either language) or Lab number
    /// (7.1); repeatable
    #[arg(long = "group", short = 'g', value_name = "G")]
    pub groups: Vec<String>,
    /// Show every failing test with its message, in every group (by default: the Lab at hand in full,
    /// one line for each other group, to fit a screen)
    #[arg(long)]
    pub all: bool,
    /// Output format on stdout
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Also write a JUnit XML report to FILE
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// With --format gradescope: one entry per test instead of one per group
    #[arg(long)]
    pub per_test: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Debug, clap::Args)]
pub struct ClassArgs {
    /// The folder of submissions, one entry per learner, named after it: a practice directory (either
    /// track), a folder holding agent_loop.rs or src/agent_loop.rs (agent-loop.ts or src/agent-loop.ts
    /// for TypeScript), or a file NAME.rs or NAME.ts
    pub submissions: PathBuf,
    /// Where the results go: a new or empty directory, or the results of an earlier run (which this run
    /// resumes)
    #[arg(long, value_name = "RESULTS")]
    pub out: PathBuf,
    /// Learners graded at once (default: the number of cores)
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Grade every learner again, also those whose file is unchanged since the last run
    #[arg(long)]
    pub force: bool,
    /// Start over: remove the earlier results in RESULTS first (also results of another submissions
    /// folder, which are otherwise refused) and grade every learner
    #[arg(long)]
    pub fresh: bool,
    /// The chapter the submissions are for
    #[arg(long, default_value = "07")]
    pub chapter: String,
    /// Output format on stdout: a summary for a person, or summary.json
    #[arg(long, value_enum, default_value_t = ClassFormat::Human)]
    pub format: ClassFormat,
    /// Grade only part K of N (K counts from 0: 0/4 … 3/4), for N machines; the same submissions and N
    /// give the same parts everywhere. Join the parts with merge-class
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<crate::class::shard::Shard>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The --out folders of `grade-class --shard K/N`, one per part (0 to N-1), in any order
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Where the class's results go: a new or empty directory
    #[arg(long, value_name = "RESULTS")]
    pub out: PathBuf,
    /// Output format on stdout: a summary for a person, or summary.json
    #[arg(long, value_enum, default_value_t = ClassFormat::Human)]
    pub format: ClassFormat,
}

impl From<MergeArgs> for crate::class::merge::MergeRequest {
    fn from(args: MergeArgs) -> Self {
        crate::class::merge::MergeRequest {
            parts: args.parts,
            out: args.out,
            format: args.format.into(),
        }
    }
}

/// How learner code is confined and bounded while it is graded (grade and watch).
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// Per-test timeout in seconds (at least 1)
    #[arg(long, value_name = "SECS", default_value_t = crate::grade::DEFAULT_TIMEOUT_SECS,
          value_parser = parse_secs)]
    pub timeout: u64,
    /// The build's time limit in seconds (at least 1)
    #[arg(long, value_name = "SECS", default_value_t = crate::grade::DEFAULT_BUILD_TIMEOUT_SECS,
          value_parser = parse_secs)]
    pub build_timeout: u64,
    /// The build cache, an absolute path (default: ~/.cache/pi-course, ~/Library/Caches/pi-course on
    /// macOS)
    #[arg(long, value_name = "DIR", env = crate::cache::ENV)]
    pub cache: Option<PathBuf>,
    /// Memory a test process may use: 1G, 512M, or a number of MiB
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,
    /// Confine learner code: auto (when the platform can, and say so when not), require (refuse to grade
    /// unconfined), off (debugging only)
    #[arg(long, value_enum, default_value_t = SandboxMode::Auto)]
    pub sandbox: SandboxMode,
    /// Draw the tests' instances from this seed, to replay a grade exactly (every report names the seed
    /// it used; by default each grade draws fresh ones). For grade-class, the class's secret seed: each
    /// learner's is derived from it, their name and their file; anyone who knows a seed can compute its
    /// expected traces, so never grade with one learners could know
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxMode {
    Auto,
    Require,
    Off,
}

impl From<SandboxMode> for crate::sandbox::Mode {
    fn from(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::Auto => crate::sandbox::Mode::Auto,
            SandboxMode::Require => crate::sandbox::Mode::Require,
            SandboxMode::Off => crate::sandbox::Mode::Off,
        }
    }
}

/// The language of messages about the command line itself, before it is parsed (`main` sets it from the
/// raw `--lang` and `PI_COURSE_LANG`).
pub static PARSE_LANG: std::sync::OnceLock<Lang> = std::sync::OnceLock::new();

/// A time limit in whole seconds, at least 1.
fn parse_secs(text: &str) -> Result<u64, String> {
    let lang = parse_lang_now();
    match text.trim().parse::<u64>() {
        Ok(secs) if secs >= 1 => Ok(secs),
        Ok(_) => Err(lang.t("usage-secs-zero", &[])),
        Err(_) => Err(lang.t("usage-secs-not-a-number", &[("value", &text)])),
    }
}

/// `zh` or `en`, or a locale that starts with one (`en_US.UTF-8`), as `--lang` or `PI_COURSE_LANG`.
fn parse_lang(text: &str) -> Result<Lang, String> {
    Lang::from_prefix(text)
        .ok_or_else(|| parse_lang_now().t("usage-lang-unknown", &[("value", &text)]))
}

/// `--shard K/N`, with its errors in the language of the command line.
fn parse_shard(text: &str) -> Result<crate::class::shard::Shard, String> {
    crate::class::shard::parse(text, parse_lang_now())
}

/// The language the command line's own errors are told in.
fn parse_lang_now() -> Lang {
    PARSE_LANG.get().copied().unwrap_or_default()
}

impl From<LimitArgs> for crate::grade::Limits {
    fn from(args: LimitArgs) -> Self {
        crate::grade::Limits {
            timeout: args.timeout,
            build_timeout: args.build_timeout,
            memory_limit: args.memory_limit,
            sandbox: args.sandbox.into(),
            cache: args.cache,
            seed: args.seed,
        }
    }
}

impl From<GradeArgs> for crate::commands::grade::GradeRequest {
    fn from(args: GradeArgs) -> Self {
        crate::commands::grade::GradeRequest {
            dir: args.dir.unwrap_or_else(crate::metadata::find),
            groups: args.groups,
            all: args.all,
            format: args.format,
            junit: args.junit,
            per_test: args.per_test,
            limits: args.limits.into(),
        }
    }
}

impl From<ClassArgs> for crate::class::ClassRequest {
    fn from(args: ClassArgs) -> Self {
        crate::class::ClassRequest {
            submissions: args.submissions,
            out: args.out,
            jobs: args.jobs,
            force: args.force,
            chapter: args.chapter,
            format: args.format.into(),
            limits: args.limits.into(),
            shard: args.shard,
            fresh: args.fresh,
        }
    }
}

/// A size in bytes from `1G`, `512M`, `2GiB`, `64MiB` or a plain number of MiB; at least 16 MiB.
fn parse_size(text: &str) -> Result<u64, String> {
    let lang = parse_lang_now();
    let say = |key: &str| lang.t(key, &[("value", &text)]);
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: u64 = number.parse().map_err(|_| say("usage-size-not-a-size"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(say("usage-size-unit")),
    };
    let bytes = number
        .checked_mul(1 << shift)
        .ok_or_else(|| say("usage-size-too-large"))?;
    if bytes < 16 << 20 {
        return Err(say("usage-size-too-small"));
    }
    Ok(bytes)
}

impl Command {
    /// The practice directory whose language this command speaks, when it works on one. `hint 7.3` and
    /// `explain TEST` inside a practice directory name a Lab or a test, not a directory: the current one.
    pub fn practice_dir(&self) -> Option<PathBuf> {
        let named_or_found =
            |dir: &Option<PathBuf>| dir.clone().unwrap_or_else(crate::metadata::find);
        match self {
            Command::Grade(args) => Some(named_or_found(&args.dir)),
            Command::Watch { dir, .. } | Command::Status { dir } => Some(named_or_found(dir)),
            Command::Hint { dir, .. } | Command::Explain { dir, .. } => {
                Some(named_or_found(&dir.clone().filter(|d| d.is_dir())))
            }
            // `pi-course skeleton 07 > src/agent_loop.rs` is run inside the directory to mend.
            Command::Skeleton { .. } => Some(crate::metadata::find()),
            _ => None,
        }
    }

    /// The output format this command was asked for, when it has one.
    pub fn format(&self) -> Option<Format> {
        match self {
            Command::Grade(args) => Some(args.format),
            Command::GradeClass(args) => Some(args.format.into()),
            Command::MergeClass(args) => Some(args.format.into()),
            _ => None,
        }
    }
}

/// `--format` and `--lang` as written on a command line that did not parse, so that even a usage error
/// can be reported as the document the caller asked for, in their language.
pub fn scan_raw(args: &[std::ffi::OsString]) -> (Option<Format>, Option<Lang>) {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let value_of = |flag: &str| -> Option<String> {
        let mut found = None;
        for (i, word) in words.iter().enumerate() {
            if word == flag {
                found = words.get(i + 1).cloned();
            } else if let Some(value) = word.strip_prefix(&format!("{flag}=")) {
                found = Some(value.to_string());
            }
        }
        found
    };
    let format = value_of("--format").and_then(|v| Format::from_str(&v, true).ok());
    let lang = value_of("--lang").and_then(|v| Lang::from_str(&v, true).ok());
    (format, lang)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("256"), Ok(256 << 20));
        assert!(parse_size("1K").is_err());
        assert!(parse_size("8M").is_err());
        assert!(parse_size("lots").is_err());
    }
}
