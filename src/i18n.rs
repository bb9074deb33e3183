//! Learner-facing text: one message table (`templates/messages.toml`), Chinese first, English on request.
//!
//! Every message has both languages; `{name}` placeholders are filled by [`Lang::t`]. The table is data,
//! so wording changes never touch code, and a test checks that every key used in code exists in both languages.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// A text in each language the course speaks.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Text {
    pub zh: String,
    pub en: String,
}

impl Text {
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Zh => &self.zh,
            Lang::En => &self.en,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Lang {
    #[default]
    Zh,
    En,
}

impl Lang {
    /// `zh` or `en`, or a locale that starts with one (`en_US.UTF-8`); any case.
    pub fn from_prefix(text: &str) -> Option<Lang> {
        let text = text.trim().to_ascii_lowercase();
        if text.starts_with("en") {
            Some(Lang::En)
        } else if text.starts_with("zh") {
            Some(Lang::Zh)
        } else {
            None
        }
    }

    /// `--lang` wins, then `PI_COURSE_LANG`, then Chinese. The command line reads both (clap's `env`);
    /// this is for the moments before it has parsed (help text, a command line that does not parse).
    pub fn resolve(flag: Option<Lang>) -> Lang {
        flag.or_else(Lang::from_env).unwrap_or_default()
    }

    /// The language `PI_COURSE_LANG` names, if it names one.
    pub fn from_env() -> Option<Lang> {
        std::env::var("PI_COURSE_LANG")
            .ok()
            .and_then(|v| Lang::from_prefix(&v))
    }

    /// This language for the judge's messages (`harness/judge/src/compare.rs`, which knows no `Lang` of ours).
    pub fn judge(self) -> pi_course_judge::compare::Lang {
        match self {
            Lang::Zh => pi_course_judge::compare::Lang::Zh,
            Lang::En => pi_course_judge::compare::Lang::En,
        }
    }

    /// `zh` or `en`, as `PI_COURSE_LANG` spells it.
    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }

    /// The message `key` in this language with `{name}` placeholders filled from `args`.
    /// An unknown key is a bug: it panics, and the table test catches it.
    pub fn t(self, key: &str, args: &[(&str, &dyn std::fmt::Display)]) -> String {
        let text = table()
            .get(key)
            .unwrap_or_else(|| panic!("message {key:?} is missing from templates/messages.toml"))
            .get(self);
        let mut out = text.to_string();
        for (name, value) in args {
            out = out.replace(
                &format!("{{{name}}}"),
                &self.system_words(value.to_string()),
            );
        }
        out
    }

    /// `value` with the system's own words for an error (`No such file or directory (os error 2)`, as
    /// an `io::Error` shows itself, wherever it was put into text) said in this language: in Chinese a
    /// known error reads `没有这个文件或目录（os error 2）`, its number kept for a search. The words are
    /// found by the number, as the system would say them, so nothing else in the value changes.
    fn system_words(self, value: String) -> String {
        if self == Lang::En || !value.contains("(os error ") {
            return value;
        }
        let mut out = value.clone();
        for part in value.split("(os error ").skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            let Ok(code) = digits.parse::<i32>() else {
                continue;
            };
            let error = std::io::Error::from_raw_os_error(code);
            if let Some(key) = os_error_key(error.kind()) {
                out = out.replace(
                    &error.to_string(),
                    &format!("{}（os error {code}）", self.t(key, &[])),
                );
            }
        }
        out
    }

    /// The message `key` for a count `n`: `key-one` when `n` is 1 and the table has it ("1 error", not
    /// "1 errors"), else `key`. `n` is not filled in by itself: pass it in `args`.
    pub fn t_count(self, key: &str, n: usize, args: &[(&str, &dyn std::fmt::Display)]) -> String {
        let one = format!("{key}-one");
        if n == 1 && table().contains_key(&one) {
            self.t(&one, args)
        } else {
            self.t(key, args)
        }
    }
}

impl Lang {
    /// Every message whose key starts with `prefix`, in this language, keyed by the rest of the key with
    /// `-` written `_` (`class-html-pass-rate` → `pass_rate` for the prefix `class-html-`): how a
    /// template gets its wording.
    pub fn texts(self, prefix: &str) -> BTreeMap<String, String> {
        table()
            .iter()
            .filter_map(|(key, text)| {
                let rest = key.strip_prefix(prefix)?;
                Some((rest.replace('-', "_"), text.get(self).to_string()))
            })
            .collect()
    }
}

/// The message that says what an error of `kind` is, for the kinds a learner or an instructor meets
/// (a place that cannot be written, a full disk, a missing file); others keep the system's words.
fn os_error_key(kind: std::io::ErrorKind) -> Option<&'static str> {
    use std::io::ErrorKind as K;
    Some(match kind {
        K::NotFound => "os-error-not-found",
        K::PermissionDenied => "os-error-permission-denied",
        K::AlreadyExists => "os-error-already-exists",
        K::ReadOnlyFilesystem => "os-error-read-only",
        K::StorageFull => "os-error-storage-full",
        K::QuotaExceeded => "os-error-quota",
        K::NotADirectory => "os-error-not-a-directory",
        K::IsADirectory => "os-error-is-a-directory",
        K::DirectoryNotEmpty => "os-error-not-empty",
        K::InvalidFilename => "os-error-invalid-name",
        K::FileTooLarge => "os-error-too-large",
        K::ResourceBusy => "os-error-busy",
        K::CrossesDevices => "os-error-crosses-devices",
        K::TooManyLinks => "os-error-too-many-links",
        K::Interrupted => "os-error-interrupted",
        _ => return None,
    })
}

fn table() -> &'static BTreeMap<String, Text> {
    static TABLE: OnceLock<BTreeMap<String, Text>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // Read here, not through the catalog: the catalog speaks in languages, so it depends on this
        // module, never the other way round.
        let text = include_str!("../templates/messages.toml");
        toml::from_str(text).unwrap_or_else(|e| panic!("invalid templates/messages.toml: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_loads_and_fills_placeholders() {
        assert!(!table().is_empty());
        let key = table().keys().next().unwrap().clone();
        for lang in [Lang::Zh, Lang::En] {
            assert!(!lang.t(&key, &[]).is_empty());
        }
    }

    #[test]
    fn a_system_error_is_said_in_the_learners_language_with_its_number() {
        let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
        let value = format!("/tmp/x: {missing}");
        let zh = Lang::Zh.t(
            "practice-no-access",
            &[("path", &"/proc"), ("error", &value)],
        );
        assert_eq!(
            zh,
            format!(
                "无法在 /proc 中写入：/tmp/x: 没有这个文件或目录（os error {}）。",
                libc::ENOENT
            )
        );
        let en = Lang::En.t(
            "practice-no-access",
            &[("path", &"/proc"), ("error", &value)],
        );
        assert!(en.ends_with(&format!("{missing}.")), "{en}");
        // Text that only looks like an error's number, and an error this table does not know, stay.
        for value in ["(os error x)", "a (os error 99999) b"] {
            let zh = Lang::Zh.t("practice-no-access", &[("path", &"p"), ("error", &value)]);
            assert!(zh.contains(value), "{zh}");
        }
        // Every kind that has words has them in both languages, and English's are the system's.
        for code in 1..134 {
            let error = std::io::Error::from_raw_os_error(code);
            if let Some(key) = os_error_key(error.kind()) {
                let zh = Lang::Zh.t(key, &[]);
                assert!(!zh.is_empty() && !zh.is_ascii(), "{key}: {zh}");
                assert!(!Lang::En.t(key, &[]).is_empty(), "{key}");
            }
        }
    }

    /// The `{name}` placeholders of a message (names of lowercase letters, digits and `_`).
    fn placeholders(text: &str) -> std::collections::BTreeSet<&str> {
        text.split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .filter(|name| {
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
            .collect()
    }

    /// Both languages of a message take the same placeholders: a `{name}` in one and not the other
    /// would show a raw `{name}` (or drop a value) in one language only. A `-one` form (see
    /// [`Lang::t_count`]) takes no placeholder its general form lacks.
    #[test]
    fn both_languages_take_the_same_placeholders() {
        assert!(placeholders("{a} x {b_2} {\"json\": 1} {}").len() == 2);
        for (key, text) in table() {
            let (zh, en) = (placeholders(&text.zh), placeholders(&text.en));
            assert_eq!(zh, en, "message {key:?}: zh and en placeholders differ");
            assert!(
                !text.zh.trim().is_empty() && !text.en.trim().is_empty(),
                "{key:?} is empty"
            );
            // (`grade-run-one` is "run one test", not a count form: only keys with a general form.)
            if let Some((name, general)) = key
                .strip_suffix("-one")
                .and_then(|name| table().get(name).map(|g| (name, g)))
            {
                let general_name = name;
                assert!(
                    zh.is_subset(&placeholders(&general.zh)),
                    "{key:?} takes a placeholder {general_name:?} does not"
                );
            }
        }
    }

    /// Keys the code builds from a value (`class-verdict-{verdict}`, `class-build-{build}`) or picks
    /// from a few (`watch-next-…`), which the search for `t("key"` below cannot see: every one exists.
    #[test]
    fn every_computed_key_exists() {
        let families: [(&str, &[&str]); 3] = [
            ("class-verdict-", &["pass", "fail", "unbuilt", "ungraded"]),
            ("class-build-", &["ok", "error", "timeout", "none"]),
            ("watch-next-", &["lab", "optional"]),
        ];
        for (prefix, values) in families {
            for value in values {
                let key = format!("{prefix}{value}");
                assert!(table().contains_key(&key), "message {key:?} missing");
            }
        }
    }

    /// Every `t("key"` in the source names a message that exists.
    #[test]
    fn every_key_used_in_code_exists() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for entry in walkdir::WalkDir::new(src) {
            let entry = entry.unwrap();
            if entry.path().extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let code = std::fs::read_to_string(entry.path()).unwrap();
            let calls = code.split(".t(\"").skip(1);
            for piece in calls.chain(code.split(".t_count(\"").skip(1)) {
                let key = piece.split('"').next().unwrap();
                assert!(
                    table().contains_key(key),
                    "{}: message {key:?} missing",
                    entry.path().display()
                );
            }
        }
    }
}
