//! The command line in the learner's language. clap speaks English: its headings, its notes on defaults
//! and its usage errors. In Chinese every command's description and every argument's help come from
//! `templates/cli.zh.toml`, the headings and notes are ours, and a usage error is told in our words;
//! names (commands, flags, values, placeholders) stay as they are typed.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use clap::error::{ContextKind, ErrorKind};
use clap::{Arg, Command};
use serde::Deserialize;

use crate::i18n::Lang;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Words {
    commands: BTreeMap<String, String>,
    args: BTreeMap<String, String>,
}

fn words() -> &'static Words {
    static WORDS: OnceLock<Words> = OnceLock::new();
    WORDS.get_or_init(|| {
        toml::from_str(include_str!("../templates/cli.zh.toml"))
            .expect("templates/cli.zh.toml parses")
    })
}

/// `command` as it speaks `lang`: as written (English), or with every text of it and of its subcommands
/// in Chinese. The command is built here (clap adds its help flags and the help subcommand then), so
/// those are translated too.
pub fn localized(mut command: Command, lang: Lang) -> Command {
    if lang == Lang::En {
        return command;
    }
    command.build();
    translate(&mut command, "");
    command
}

/// One command and, below it, its subcommands. `name` is its key in the table: "" for pi-course.
fn translate(command: &mut Command, name: &str) {
    let words = words();
    let taken = std::mem::replace(command, Command::new(""));
    let mut translated = taken.mut_args(|arg| translate_arg(arg, name));
    if let Some(about) = words.commands.get(name) {
        translated = translated.about(about.clone()).long_about(None);
    }
    let template = template(&translated);
    translated = translated.help_template(template);
    let usage = translated.render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim().to_string();
    translated = translated.override_usage(usage_words(&usage));
    for sub in translated.get_subcommands_mut() {
        let key = sub.get_name().to_string();
        translate(sub, &key);
    }
    *command = translated;
}

/// clap's placeholders in a usage line, in Chinese; the names of arguments stay.
fn usage_words(usage: &str) -> String {
    usage
        .replace("[OPTIONS]", "[选项]")
        .replace("<COMMAND>", "<命令>")
        .replace("[COMMAND]", "[命令]")
}

/// An argument's help from the table, with its default, its values and its environment variable said in
/// Chinese instead of clap's English notes.
fn translate_arg(arg: Arg, command: &str) -> Arg {
    let words = words();
    let id = arg.get_id().as_str().to_string();
    let Some(text) = words
        .args
        .get(&format!("{command} {id}"))
        .or_else(|| words.args.get(&id))
    else {
        return arg;
    };
    let mut notes = Vec::new();
    if arg.get_action().takes_values() {
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && !arg.is_hide_default_value_set() {
            notes.push(format!("默认：{}", defaults.join(" ")));
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        if !values.is_empty() && !arg.is_hide_possible_values_set() {
            notes.push(format!("可选：{}", values.join("、")));
        }
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        notes.push(format!("环境变量：{}", env.to_string_lossy()));
    }
    // Notes go inside the help's own closing parenthesis, if it ends with one.
    let mut help = text.clone();
    if !notes.is_empty() {
        let notes = notes.join("；");
        match help.strip_suffix('）') {
            Some(open) => help = format!("{open}；{notes}）"),
            None => help.push_str(&format!("（{notes}）")),
        }
    }
    arg.help(help)
        .long_help(None)
        .hide_default_value(true)
        .hide_possible_values(true)
        .hide_env(true)
}

/// The help's layout with Chinese headings, and only the sections this command has.
fn template(command: &Command) -> String {
    let mut template = String::from("{about-with-newline}\n用法：{usage}");
    if command.has_subcommands() {
        template.push_str("\n\n命令：\n{subcommands}");
    }
    let shown = |positional: bool| {
        command
            .get_arguments()
            .any(|a| a.is_positional() == positional && !a.is_hide_set())
    };
    if shown(true) {
        template.push_str("\n\n参数：\n{positionals}");
    }
    if shown(false) {
        template.push_str("\n\n选项：\n{options}");
    }
    template.push_str("{after-help}");
    template
}

/// A usage error told in Chinese: what is wrong, what clap suggests, the usage line and where to read
/// more. `None` in English: clap's own words are English.
pub fn usage_error(error: &clap::Error, lang: Lang) -> Option<String> {
    if lang == Lang::En {
        return None;
    }
    let get = |kind| error.get(kind).map(|v| v.to_string());
    let arg = get(ContextKind::InvalidArg).unwrap_or_default();
    let value = get(ContextKind::InvalidValue).unwrap_or_default();
    let problem = match error.kind() {
        ErrorKind::UnknownArgument => format!("不认识的参数 {arg}"),
        ErrorKind::InvalidSubcommand => format!(
            "没有 {} 这个命令",
            get(ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        ErrorKind::InvalidValue if value.is_empty() => format!("{arg} 需要一个值"),
        ErrorKind::InvalidValue => format!("{arg} 不接受“{value}”"),
        ErrorKind::ValueValidation => {
            let why = std::error::Error::source(error)
                .map(|s| format!("：{s}"))
                .unwrap_or_default();
            format!("{arg} 的值“{value}”不可用{why}")
        }
        ErrorKind::MissingRequiredArgument => format!("缺少必需的参数：{arg}"),
        ErrorKind::MissingSubcommand => "缺少命令".to_string(),
        ErrorKind::ArgumentConflict => format!(
            "{arg} 不能和 {} 一起用",
            get(ContextKind::PriorArg).unwrap_or_default()
        ),
        ErrorKind::TooManyValues => format!("多出来的值“{value}”：{arg} 不再接受值"),
        ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            format!("{arg} 的值的个数不对")
        }
        ErrorKind::NoEquals => format!("{arg} 的值要用 = 连着写，例如 {arg}=VALUE"),
        ErrorKind::InvalidUtf8 => "命令行里有不是 UTF-8 的文字".to_string(),
        _ => "命令行无法解析".to_string(),
    };
    let mut text = format!("错误：{problem}\n");
    if let Some(valid) = get(ContextKind::ValidValue).filter(|v| !v.is_empty()) {
        text.push_str(&format!("\n  可选的值：{}\n", valid.replace(", ", "、")));
    }
    if let Some(s) = get(ContextKind::SuggestedArg) {
        text.push_str(&format!("\n  提示：也许是 {s}\n"));
    }
    if let Some(s) = get(ContextKind::SuggestedSubcommand) {
        text.push_str(&format!("\n  提示：也许是命令 {}\n", s.replace(", ", "、")));
    }
    if error.kind() == ErrorKind::UnknownArgument && arg.starts_with('-') {
        text.push_str(&format!(
            "\n  提示：若 {arg} 是一个值而不是参数，写成 -- {arg}\n"
        ));
    }
    if let Some(usage) = get(ContextKind::Usage) {
        let usage = usage.trim().trim_start_matches("Usage:").trim();
        text.push_str(&format!("\n用法：{}\n", usage_words(usage)));
    }
    text.push_str("\n运行 pi-course --help（或 pi-course <命令> --help）查看用法。\n");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use std::collections::BTreeSet;

    /// Every (command, argument) of the built command line, by the keys the table uses.
    fn keys(command: &Command, name: &str, commands: &mut Vec<String>, args: &mut Vec<String>) {
        commands.push(name.to_string());
        for arg in command.get_arguments() {
            args.push(format!("{name} {}", arg.get_id()));
        }
        for sub in command.get_subcommands() {
            keys(sub, sub.get_name(), commands, args);
        }
    }

    #[test]
    fn every_command_and_argument_has_its_chinese_text_and_none_is_left_over() {
        let mut command = crate::cli::Cli::command();
        command.build();
        let (mut commands, mut args) = (Vec::new(), Vec::new());
        keys(&command, "", &mut commands, &mut args);
        let words = words();
        let mut used = BTreeSet::new();
        for name in &commands {
            assert!(
                words.commands.contains_key(name),
                "templates/cli.zh.toml has no [commands] {name:?}"
            );
        }
        for key in &args {
            let id = key.split(' ').nth(1).unwrap();
            let found = if words.args.contains_key(key) {
                key.clone()
            } else {
                id.to_string()
            };
            assert!(
                words.args.contains_key(&found),
                "templates/cli.zh.toml has no [args] {key:?} (nor {id:?})"
            );
            used.insert(found);
        }
        for key in words.args.keys() {
            assert!(
                used.contains(key),
                "templates/cli.zh.toml: {key:?} is no argument"
            );
        }
        let names: BTreeSet<&String> = commands.iter().collect();
        for key in words.commands.keys() {
            assert!(
                names.contains(key),
                "templates/cli.zh.toml: {key:?} is no command"
            );
        }
    }

    #[test]
    fn a_chinese_help_keeps_names_and_says_the_rest_in_chinese() {
        let mut command = localized(crate::cli::Cli::command(), Lang::Zh);
        let grade = command.find_subcommand_mut("grade").unwrap();
        let help = grade.render_help().to_string();
        for english in [
            "Usage:",
            "Options:",
            "Arguments:",
            "[default:",
            "[env:",
            "possible values",
        ] {
            assert!(!help.contains(english), "{english}:\n{help}");
        }
        for kept in [
            "用法：pi-course grade [选项] [DIR]",
            "--group <G>",
            "默认：human",
            "环境变量：PI_COURSE_LANG",
        ] {
            assert!(help.contains(kept), "{kept}:\n{help}");
        }
    }
}
