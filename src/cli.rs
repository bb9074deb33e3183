//! The command line: one subcommand per thing a learner or instructor does.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::i18n::Lang;

#[derive(Debug, Parser)]
#[command(name = "pi-course", version, about = "Practice and grade the pi coding-agent course", long_about = None)]
pub struct Cli {
    /// Language of learner-facing text (default: PI_COURSE_LANG, else zh)
    #[arg(long, global = true, value_enum)]
    pub lang: Option<Lang>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a fresh practice directory for a chapter
    Practice {
        /// Chapter id, e.g. 07
        chapter: String,
        /// Where to create it (must not exist, or be empty); default pi-practice-<chapter>
        dir: Option<PathBuf>,
    },
    /// Build the learner's code and run the chapter's test groups against the pristine tests
    Grade(GradeArgs),
    /// Grade now, then again each time an editable file is saved (keys: h hint, r grade again, q quit)
    Watch {
        /// The practice directory
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Only poll the files for changes (when saves go unnoticed: network drives, WSL, some editors)
        #[arg(long)]
        poll: bool,
        /// Per-test timeout in seconds
        #[arg(long, value_name = "SECS", default_value_t = crate::grade::DEFAULT_TIMEOUT_SECS)]
        timeout: u64,
    },
    /// Show the hint for the first Lab that does not pass yet, or for the Lab named
    Hint {
        /// The practice directory (`pi-course hint 7.3` inside one names the Lab)
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// A Lab number (7.3), group slug or group name
        lab: Option<String>,
    },
    /// Show the chapter, each Lab's last grade, changed given files, and how to start over
    Status {
        /// The practice directory
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// List the chapters and their test groups
    List,
}

#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    /// The practice directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Only these groups: slug (plain-stop), name (纯文本 stop) or Lab number (7.1); repeatable
    #[arg(long = "group", short = 'g', value_name = "G")]
    pub groups: Vec<String>,
    /// Output format on stdout
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Also write a JUnit XML report to FILE
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Per-test timeout in seconds
    #[arg(long, value_name = "SECS", default_value_t = crate::grade::DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}
