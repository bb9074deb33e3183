//! `pi-course practice CHAPTER [DIR]`: make a fresh practice directory (the part in `crate::practice`),
//! then say where it is and what to run first.
//!
//! Exit status: 0 made; 2 bad input (unknown chapter, DIR not usable), with nothing on disk touched;
//! 1 the file system failed part way (disk full, I/O error), after removing everything written.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::catalog::{Catalog, Chapter, Track};
use crate::error::{Result, UserError};
use crate::i18n::Lang;
use crate::practice::{self, Failure, Target};

/// Resolve the chapter and DIR, make the directory, say what to do next.
pub fn run(
    catalog: &Catalog,
    lang: Lang,
    query: &str,
    track: Track,
    dir: Option<PathBuf>,
    classroom: bool,
) -> Result<ExitCode> {
    let chapter = &practice::chapter_in(catalog, lang, query, track)?;
    // `components` drops a trailing `/` and inner `./`, so `foo/` and `foo` are the same directory.
    let dir: PathBuf = match dir {
        Some(dir) => dir.components().collect(),
        None => PathBuf::from(&chapter.default_dir),
    };
    let target = Target::check(lang, chapter, &dir)?;
    let mut extra: Vec<(&str, Vec<u8>)> = Vec::new();
    if classroom {
        let workflow = crate::classroom::workflow(chapter, lang).map_err(UserError::new)?;
        extra.push((crate::classroom::PATH, workflow.into_bytes()));
    }
    match practice::make(lang, chapter, &target, &extra) {
        Ok(()) => {
            print_next_steps(lang, chapter, &dir);
            if classroom {
                crate::report::emit(&format!(
                    "\n{}\n",
                    lang.t(
                        "practice-classroom-next",
                        &[
                            ("file", &crate::classroom::PATH),
                            ("placeholder", &crate::classroom::PLACEHOLDER)
                        ],
                    )
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(Failure::Input(e)) => Err(e),
        Err(Failure::Io { error, leftover }) => {
            let mut message = lang.t(
                "practice-failed",
                &[("dir", &dir.display()), ("error", &error)],
            );
            message.push('\n');
            message.push_str(&match leftover {
                None => lang.t("practice-failed-cleaned", &[]),
                Some(path) => lang.t("practice-failed-leftover", &[("path", &path.display())]),
            });
            eprintln!("{}{message}", lang.t("error-prefix", &[]));
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Where the directory is, and the commands to start with.
fn print_next_steps(lang: Lang, chapter: &Chapter, dir: &Path) {
    let absolute = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let is_here = std::env::current_dir()
        .and_then(fs::canonicalize)
        .is_ok_and(|here| here == absolute);
    let mut commands = String::new();
    if !is_here {
        commands.push_str(&format!(
            "  cd {}\n",
            practice::shell_quote(&dir.to_string_lossy())
        ));
    }
    commands.push_str("  pi-course grade");
    if chapter.track == Track::TypeScript {
        commands.push('\n');
        let group = chapter.groups.first().map_or("", |g| g.name.zh.as_str());
        commands.push_str(&lang.t(
            "practice-next-typescript",
            &[("chapter", &chapter.id), ("group", &group)],
        ));
    }
    let made = lang.t(
        "practice-made",
        &[
            ("chapter", &chapter.id),
            ("title", &chapter.title.get(lang)),
            ("dir", &absolute.display()),
        ],
    );
    let next = lang.t(
        "practice-next",
        &[
            ("commands", &commands),
            ("guide", &chapter.guide.get(lang)),
            ("editable", &chapter.editable.join(", ")),
        ],
    );
    // The directory is made whether or not anyone reads this (`| head` closes the pipe early).
    crate::report::emit(&format!("{made}\n\n{next}\n"));
}
