//! pi-course: make practice directories for the pi course and grade them.
//!
//! The tool is a library (`pi_course`) with this thin `main` binary, so the tests and the benches `use`
//! the grader's own code (`pi_course::spec`, the judge crate) instead of compiling copies of its files.

mod atomic_file;
mod cache;
mod catalog;
mod class;
mod classroom;
mod cli;
mod cli_lang;
mod commands;
mod error;
mod file_identity;
mod grade;
mod i18n;
mod metadata;
mod outcome;
mod practice;
mod process;
mod regular_file;
mod remove_tree;
mod report;
mod sandbox;
pub mod spec;
mod templates;
mod time;
mod track;
mod ui;
mod watch;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::catalog::Catalog;
use crate::cli::{Cli, Command};
use crate::i18n::Lang;

/// The command line, parsed and run: what `pi-course` does.
pub fn run() -> ExitCode {
    // An empty PI_COURSE_LANG or PI_COURSE_CACHE counts as unset, as is usual for such variables (clap,
    // which reads them, would take the empty string as a value). Done before any thread starts.
    for name in ["PI_COURSE_LANG", cache::ENV] {
        if std::env::var_os(name).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(name);
        }
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The help and the usage errors are learner-facing text: in the language asked for, read from the
    // raw words first (`--lang`, then `PI_COURSE_LANG`), then the one of the practice directory this
    // folder is in, then Chinese.
    let help_lang = Lang::resolve(
        cli::scan_raw(&args)
            .1
            .or_else(Lang::from_env)
            .or_else(|| metadata::lang_of(&metadata::find())),
    );
    let _ = cli::PARSE_LANG.set(help_lang);
    let mut command = Cli::command().after_help(help_lang.t("help-after", &[]));
    // Each subcommand's help ends with its own examples and exit codes.
    for name in [
        "practice",
        "grade",
        "grade-class",
        "merge-class",
        "watch",
        "hint",
        "explain",
        "status",
        "list",
        "skeleton",
        "completions",
    ] {
        let text = help_lang.t(&format!("help-after-{name}"), &[]);
        command = command.mut_subcommand(name, |sub| sub.after_help(text));
    }
    let command = cli_lang::localized(command, help_lang);
    let cli = match command
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches))
    {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, &args, help_lang),
    };
    ui::set_color_choice(cli.color);
    // `--lang`, then `PI_COURSE_LANG` (clap reads both into `cli.lang`), then the language the practice
    // directory was made in, then Chinese.
    let lang = Lang::resolve(cli.lang.or_else(|| {
        cli.command
            .practice_dir()
            .and_then(|dir| metadata::lang_of(&dir))
    }));
    let format = cli.command.format();
    let catalog = Catalog::embedded();
    let outcome = match cli.command {
        Command::Practice {
            chapter,
            dir,
            classroom,
            track,
        } => commands::practice::run(&catalog, lang, &chapter, track.into(), dir, classroom),
        Command::Grade(args) => commands::grade::run(&catalog, lang, args.into()),
        Command::GradeClass(args) => {
            commands::grade_class::run(&catalog, lang, cli.lang, args.into())
        }
        Command::MergeClass(args) => commands::merge_class::run(&catalog, lang, args.into()),
        Command::List => commands::list::run(&catalog, lang),
        Command::Skeleton { chapter, track } => {
            commands::skeleton::run(&catalog, lang, &chapter, track.into())
        }
        Command::Completions { shell } => {
            let command = cli_lang::localized(Cli::command(), lang);
            commands::completions::run(&catalog, lang, command, shell.into())
        }
        Command::Watch { dir, poll, limits } => {
            let dir = dir.unwrap_or_else(metadata::find);
            commands::watch::run(&catalog, lang, dir, poll, limits.into())
        }
        Command::Hint { dir, lab } => {
            let dir = dir.unwrap_or_else(metadata::find);
            commands::hint::run(&catalog, lang, dir, lab)
        }
        Command::Explain { dir, test } => {
            let dir = dir.unwrap_or_else(metadata::find);
            commands::explain::run(&catalog, lang, dir, test)
        }
        Command::Status { dir } => {
            commands::status::run(&catalog, lang, dir.unwrap_or_else(metadata::find))
        }
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            report::bad_input(&e, lang, format);
            ExitCode::from(2)
        }
    }
}

/// A command line that does not parse. Help and version go out as clap prints them; a usage error asked
/// for a document (`--format json`) is that document too, with exit status 2.
fn usage_error(e: clap::Error, args: &[std::ffi::OsString], lang: Lang) -> ExitCode {
    use clap::error::ErrorKind;
    let format = cli::scan_raw(args).0;
    let printed_as_is = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let ours = cli_lang::usage_error(&e, lang);
    if printed_as_is {
        e.exit();
    }
    if !format.is_some_and(cli::Format::is_machine) {
        match ours {
            Some(text) => {
                eprint!("{text}");
                return ExitCode::from(2);
            }
            None => e.exit(),
        }
    }
    let rendered = ours.unwrap_or_else(|| e.render().to_string());
    let problem = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .trim_start_matches("错误：")
        .to_string();
    let error = error::UserError::new(problem).with_fix(lang.t("usage-fix", &[]));
    report::bad_input(&error, lang, format);
    ExitCode::from(2)
}
