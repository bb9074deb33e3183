//! `pi-course list`: the chapters in the catalog with their groups.

use std::process::ExitCode;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::i18n::Lang;

pub fn run(catalog: &Catalog, lang: Lang) -> Result<ExitCode> {
    for chapter in &catalog.chapters {
        let tracks: Vec<&str> = chapter.tracks().iter().map(|t| t.name()).collect();
        println!(
            "{}  {}  ({})",
            chapter.id,
            chapter.title.get(lang),
            lang.t("list-tracks", &[("tracks", &tracks.join(", "))])
        );
        println!("{}", chapter.group_lines(lang));
    }
    Ok(ExitCode::SUCCESS)
}
