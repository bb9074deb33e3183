//! pi-course: make practice directories for the pi course and grade them.

mod cache;
mod catalog;
mod cli;
mod error;
mod grade;
mod hint;
mod i18n;
mod list;
mod metadata;
mod practice;
mod process;
mod regular_file;
mod report;
mod sandbox;
mod status;
mod watch;

use std::process::ExitCode;

use clap::Parser;

use crate::catalog::Catalog;
use crate::cli::{Cli, Command};
use crate::i18n::Lang;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let lang = Lang::resolve(cli.lang);
    let catalog = Catalog::embedded();
    let outcome = match cli.command {
        Command::Practice { chapter, dir } => practice::run(&catalog, lang, &chapter, dir),
        Command::Grade(args) => grade::run(&catalog, lang, args),
        Command::List => list::run(&catalog, lang),
        Command::Watch { dir, poll, limits } => watch::run(&catalog, lang, dir, poll, limits),
        Command::Hint { dir, lab } => hint::run(&catalog, lang, dir, lab),
        Command::Status { dir } => status::run(&catalog, lang, dir),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: {e}", lang.t("error-prefix", &[]));
            ExitCode::from(2)
        }
    }
}
