//! `pi-course list`: the chapters in the catalog with their groups.

use std::process::ExitCode;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::i18n::Lang;

pub fn run(catalog: &Catalog, lang: Lang) -> Result<ExitCode> {
    for chapter in &catalog.chapters {
        println!("{}  {}", chapter.id, chapter.title.get(lang));
        for g in &chapter.groups {
            let optional = if g.optional {
                lang.t("list-optional", &[])
            } else {
                String::new()
            };
            println!(
                "  Lab {:<4} {:<18} {}{}",
                g.lab,
                g.slug,
                g.name.get(lang),
                optional
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
