//! `pi-course watch [DIR]`: grade now, then again each time an editable file is saved (the loop in
//! `crate::watch`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::error::{Result, UserError};
use crate::grade::{self, GradeOptions};
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::watch;

pub fn run(
    catalog: &Catalog,
    lang: Lang,
    dir: PathBuf,
    poll: bool,
    limits: grade::Limits,
) -> Result<ExitCode> {
    let practice = Practice::open(catalog, lang, &dir)?;
    let mut opts = GradeOptions::from_args(&limits, lang)?;
    let tty = std::io::stdout().is_terminal();
    opts.color = crate::ui::color_on(tty);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UserError::new(e.to_string()))?;
    let code = runtime.block_on(watch::watch(&practice, lang, &opts, poll, tty));
    // A grade cancelled while it waited for the build directory's lock leaves a blocking thread behind;
    // do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    Ok(ExitCode::from(code))
}
