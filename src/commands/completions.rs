//! `pi-course completions SHELL`: the shell's completion script for `command` (the command line as
//! `crate::cli` defines it, handed in by `main`, so that the commands never import the command line).
//! Where a word names something of the course, the script offers what the catalog holds: the chapters'
//! ids where a chapter is asked for, the Labs' numbers and slugs where a group is, each with its name
//! in the learner's language where the shell shows one.

use std::process::ExitCode;

use clap::builder::{PossibleValue, PossibleValuesParser};

use crate::catalog::Catalog;
use crate::error::Result;
use crate::i18n::Lang;

pub fn run(
    catalog: &Catalog,
    lang: Lang,
    command: clap::Command,
    shell: clap_complete::Shell,
) -> Result<ExitCode> {
    let mut command = offering_the_course(command, catalog, lang);
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "pi-course", &mut script);
    crate::report::emit(&String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// `command` with the catalog's names as the values its chapter and group words may take. Only the
/// script sees them: the command line itself parses these words as before (a group may also be named by
/// its name, in either language, which a shell's word list cannot hold).
fn offering_the_course(command: clap::Command, catalog: &Catalog, lang: Lang) -> clap::Command {
    let chapters: Vec<PossibleValue> = catalog
        .chapters
        .iter()
        .map(|c| PossibleValue::new(c.id.clone()).help(c.title.get(lang).to_string()))
        .collect();
    let mut groups: Vec<PossibleValue> = Vec::new();
    for chapter in &catalog.chapters {
        for group in &chapter.groups {
            for value in [&group.lab, &group.slug] {
                if !groups.iter().any(|g| g.get_name() == value.as_str()) {
                    groups.push(PossibleValue::new(value.clone()).help(group.title(lang)));
                }
            }
        }
    }
    let chapter = |arg: clap::Arg| arg.value_parser(PossibleValuesParser::new(chapters.clone()));
    // Changing an argument moves it to the end of its command's list, and a positional's place comes
    // from that list unless it is given: `practice`'s chapter stays the first word, its folder the second.
    let first_chapter = |arg: clap::Arg| chapter(arg).index(1);
    let group = |arg: clap::Arg| arg.value_parser(PossibleValuesParser::new(groups.clone()));
    command
        .mut_subcommand("practice", |s| {
            s.mut_arg("chapter", first_chapter)
                .mut_arg("dir", |arg| arg.index(2))
        })
        .mut_subcommand("skeleton", |s| s.mut_arg("chapter", chapter))
        .mut_subcommand("grade-class", |s| s.mut_arg("chapter", chapter))
        .mut_subcommand("grade", |s| s.mut_arg("groups", group))
        .mut_subcommand("hint", |s| s.mut_arg("lab", group))
        .mut_subcommand("explain", |s| s.mut_arg("test", group))
}
