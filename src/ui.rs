//! How text meets the terminal: whether to color it. One process-wide choice, made from `--color` once
//! at start, so that every command, the spinner included, follows the same rule.

use std::sync::OnceLock;

/// `--color`: `auto` colors a terminal unless `NO_COLOR` is set (<https://no-color.org>); `always` and
/// `never` do what they say, whatever the terminal and `NO_COLOR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Records the command line's choice; the first call wins.
pub fn set_color_choice(choice: ColorChoice) {
    let _ = CHOICE.set(choice);
}

/// `NO_COLOR` set to anything but the empty string.
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Whether to write ANSI colors to a stream that is (or is not) a terminal.
pub fn color_on(is_terminal: bool) -> bool {
    match CHOICE.get().copied().unwrap_or_default() {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && !no_color_env(),
    }
}
