//! The templates under `templates/` (the class report's pages, the GitHub Classroom workflow), rendered
//! with minijinja. Templates are data: wording lives in `templates/messages.toml` and reaches a template
//! as `t`, a table of the messages under one prefix in the chosen language (see [`Lang::texts`]).
//!
//! HTML templates (`.html`) escape every value they print; others print values as they are, so a
//! template for another language must quote what it prints itself (the workflow uses `tojson`, whose
//! output is a valid YAML string).

use std::sync::OnceLock;

use minijinja::Environment;
use serde::Serialize;

use crate::catalog::Catalog;

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        // HTML escapes what it prints; the workflow quotes what it prints itself (with `tojson`).
        env.set_auto_escape_callback(|name| {
            if name.ends_with(".html") {
                minijinja::AutoEscape::Html
            } else {
                minijinja::AutoEscape::None
            }
        });
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .expect("the default delimiters"),
        );
        // Templates are the pages and the workflow; the messages, style sheets and scripts are data.
        let is_template = |path: &str| [".html", ".yml"].iter().any(|e| path.ends_with(e));
        for (path, bytes) in Catalog::files_under("templates/").filter(|(p, _)| is_template(p)) {
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            env.add_template(path, text)
                .unwrap_or_else(|e| panic!("templates/{path}: {e}"));
        }
        env
    })
}

/// Renders `templates/<name>` with `context`. An error is a bug in a template (the project's tests render
/// each one); it comes back as text, with the template's name and line.
pub fn render(name: &str, context: impl Serialize) -> Result<String, String> {
    let template = environment()
        .get_template(name)
        .map_err(|e| format!("templates/{name}: {e}"))?;
    template
        .render(minijinja::value::Serde(&context))
        .map_err(|e| format!("templates/{name}: {e:#}"))
}

/// The text of an embedded file under `templates/` (a style sheet, a script), as it is.
pub fn text(name: &str) -> &'static str {
    let bytes = Catalog::file(&format!("templates/{name}"))
        .unwrap_or_else(|| panic!("templates/{name} is embedded"));
    std::str::from_utf8(bytes).expect("templates are UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_and_other_templates_do_not() {
        let mut env = Environment::new();
        env.add_template("a.html", "{{ x }}").unwrap();
        env.add_template("a.yml", "{{ x|tojson }}").unwrap();
        let x = "<b>\"x\"</b>";
        let html = env.get_template("a.html").unwrap();
        assert_eq!(
            html.render(minijinja::context! { x }).unwrap(),
            "&lt;b&gt;&quot;x&quot;&lt;&#x2f;b&gt;"
        );
        let yml = env.get_template("a.yml").unwrap();
        let out = yml.render(minijinja::context! { x }).unwrap();
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), x);
    }

    #[test]
    fn every_template_parses() {
        assert!(environment().templates().count() > 0);
    }
}
