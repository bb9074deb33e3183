//! Constructs the learner's crate has no use for, refused before the build.
//!
//! `#![forbid(unsafe_code)]` keeps the loop inside safe Rust, but some constructs act below the language,
//! where the linker and the loader take over, and the lint lets a few through: a naked function
//! (`#[unsafe(naked)]` with `naked_asm!`) can list itself in `.init_array` and run before the tests'
//! `main`. A loop needs none of them, so the file is parsed (not searched: a string or a comment that
//! mentions `asm!` is fine) and each one is refused, naming its line:
//!
//! - inline, naked and global assembly (`asm!`, `naked_asm!`, `global_asm!`, by any path or import);
//! - attributes that name symbols or sections, or replace a runtime piece: `#[unsafe(...)]` of any kind,
//!   `#[naked]`, `#[link]`, `#[link_name]`, `#[link_section]`, `#[used]`, `#[no_mangle]`,
//!   `#[export_name]`, `#[global_allocator]`, `#[panic_handler]` and the like, also inside `cfg_attr`;
//! - `extern` blocks and `extern crate`.
//!
//! Names are compared as the compiler resolves them: a raw identifier is its name (`r#naked_asm!` is
//! `naked_asm!`). What syn leaves as tokens (macro arguments, `macro_rules!` bodies) is checked token by
//! token with the same rules, and an attribute a macro fills in is refused too, whatever part of it the
//! macro fills (`#[$attr]`, `#[cfg_attr(all(), $attr)]`, `# $attr`): it could be any of these. So is an
//! attribute, or a `cfg_attr`, whose contents do not read as attributes. A file that does not parse is
//! left to rustc, whose error is what the learner needs.
//!
//! **Depth.** syn parses by recursion, so a file nested deep enough (5,000 parentheses, or a run of
//! 100,000 `&`) would overflow the grader's stack and end the whole process, a class included. Before
//! parsing, [`too_deep`] measures the file over its tokens (the tokenizer and its drop use no recursion)
//! and refuses it above [`MAX_BRACKETS`] nested brackets, or above [`MAX_OPEN`] tokens that may still be
//! open at one point ([`open_tokens`]): far beyond any loop, far below what the parse can take. The parse
//! then runs on a thread of its own whose stack ([`CHECK_STACK`]) holds any file within the bounds.

use proc_macro2::{Delimiter, Ident, Span, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Meta, Token};

use crate::i18n::Lang;

/// One refused construct: where it starts (line from 1, column from 1) and what it is, as code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub line: usize,
    pub column: usize,
    pub construct: String,
}

/// The assembly macros.
const ASSEMBLY: &[&str] = &["asm", "naked_asm", "global_asm"];

/// Attributes that act on symbols, sections, linking or the runtime.
const ATTRIBUTES: &[&str] = &[
    "naked",
    "link",
    "link_name",
    "link_section",
    "link_ordinal",
    "linkage",
    "used",
    "no_mangle",
    "export_name",
    "global_allocator",
    "panic_handler",
    "alloc_error_handler",
    "no_main",
    "no_builtins",
    "windows_subsystem",
    "crate_type",
    "crate_name",
    "lang",
    "start",
    "ffi_const",
    "ffi_pure",
];

/// Attribute macros that can be imported under another name (`use core::prelude::v1::global_allocator
/// as ga`): refused in `use` too.
const IMPORTABLE: &[&str] = &["global_allocator", "alloc_error_handler"];

/// The most brackets (`(`, `[`, `{`) a file may nest: a loop nests a dozen.
pub const MAX_BRACKETS: usize = 256;

/// The most tokens a file may hold open at one point (see [`open_tokens`]): the chapter's reference and
/// its alternatives hold 120 to 200.
pub const MAX_OPEN: usize = 2048;

/// The stack the parse runs on: enough for [`MAX_BRACKETS`] brackets and [`MAX_OPEN`] open tokens of the
/// costliest kind (a type nested by `&` or `A<...>` costs syn 16 to 32 KiB of stack per token in a debug
/// build: 4,096 of them need between 64 and 128 MiB), twice over at least. Only what a file uses is ever
/// touched.
pub const CHECK_STACK: usize = 256 << 20;

/// A file nested deeper than the grader reads: where, and how deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// The line (from 1) of the token past the bound.
    pub line: usize,
    /// How deep it is there.
    pub depth: usize,
    /// The bound it is past.
    pub max: usize,
}

/// Whether `source` nests past [`MAX_BRACKETS`] or [`MAX_OPEN`], and where first; `None` also when it
/// does not tokenize (rustc then says why). Runs on a thread of its own, so that the tokenizer's record of
/// the file's lines goes with it.
pub fn too_deep(source: &str) -> Option<TooDeep> {
    let source = source.to_string();
    match std::thread::Builder::new()
        .name("pi-course-depth".into())
        .spawn(move || measure(&source))
        .map(|thread| thread.join())
    {
        Ok(Ok(found)) => found,
        // Neither happens (the measure allocates and loops, nothing more); if one did, the file is
        // refused rather than parsed unmeasured.
        _ => Some(TooDeep {
            line: 1,
            depth: usize::MAX,
            max: MAX_OPEN,
        }),
    }
}

/// How many tokens may be open at each token: the brackets around it, and at each bracket's level the
/// tokens since the last `;` there (a `;` ends every construct begun at its level). Every recursion of
/// syn's parse, and every level of the tree it builds, takes at least one token, so this bounds how deep
/// syn goes: `&&&&x`, `A<A<A<u8>>>`, `return return x`, `x.f().f()`, `(((x)))` all count one per level.
/// Attributes (`#[...]`, `#![...]`, doc comments) count nothing at their level: syn reads them one after
/// another, never one inside another. `each` gets every token with its open tokens and brackets, and
/// stops the walk by answering `false`.
pub fn open_tokens(tokens: TokenStream, mut each: impl FnMut(&TokenTree, usize, usize) -> bool) {
    struct Level {
        trees: proc_macro2::token_stream::IntoIter,
        /// Tokens open at its start.
        outer: usize,
        /// Tokens since its last `;`.
        since: usize,
        /// After an attribute's `#` (1) or `#!` (2), before its brackets.
        attribute: u8,
    }
    let mut levels = vec![Level {
        trees: tokens.into_iter(),
        outer: 0,
        since: 0,
        attribute: 0,
    }];
    while let Some(level) = levels.last_mut() {
        let Some(tree) = level.trees.next() else {
            levels.pop();
            continue;
        };
        let attribute = match &tree {
            TokenTree::Punct(p) if p.as_char() == ';' => {
                (level.since, level.attribute) = (0, 0);
                continue;
            }
            TokenTree::Punct(p) if p.as_char() == '#' => {
                level.attribute = 1;
                true
            }
            TokenTree::Punct(p) if p.as_char() == '!' && level.attribute == 1 => {
                level.attribute = 2;
                true
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket && level.attribute > 0 => {
                level.attribute = 0;
                true
            }
            _ => {
                level.attribute = 0;
                false
            }
        };
        if !attribute {
            level.since += 1;
        }
        let open = level.outer + level.since;
        let brackets = levels.len() - 1 + usize::from(matches!(tree, TokenTree::Group(_)));
        if !each(&tree, open, brackets) {
            return;
        }
        if let TokenTree::Group(group) = tree {
            levels.push(Level {
                trees: group.stream().into_iter(),
                outer: open,
                since: 0,
                attribute: 0,
            });
        }
    }
}

fn measure(source: &str) -> Option<TooDeep> {
    let tokens: TokenStream = source.parse().ok()?;
    let mut found = None;
    open_tokens(tokens, |tree, open, brackets| {
        let line = tree.span().start().line;
        if brackets > MAX_BRACKETS {
            found = Some(TooDeep {
                line,
                depth: brackets,
                max: MAX_BRACKETS,
            });
        } else if open > MAX_OPEN {
            found = Some(TooDeep {
                line,
                depth: open,
                max: MAX_OPEN,
            });
        }
        found.is_none()
    });
    found
}

/// The constructs of `source` that are refused, in the order they appear; empty when there are none or
/// when the file does not parse. A file nested past the bounds is not parsed: [`TooDeep`] says where.
pub fn check(source: &str) -> Result<Vec<Refused>, TooDeep> {
    if let Some(deep) = too_deep(source) {
        return Err(deep);
    }
    let owned = source.to_string();
    let checked = std::thread::Builder::new()
        .name("pi-course-refuse".into())
        .stack_size(CHECK_STACK)
        .spawn(move || parse_and_find(&owned))
        .map(|thread| thread.join());
    match checked {
        Ok(Ok(refused)) => Ok(refused),
        // A panic in the parser, or no thread to parse on: the file is refused unread, never built
        // unchecked.
        _ => Ok(vec![Refused {
            line: 1,
            column: 1,
            construct: "(a file the check could not read)".into(),
        }]),
    }
}

fn parse_and_find(source: &str) -> Vec<Refused> {
    let Ok(file) = syn::parse_file(source) else {
        return Vec::new();
    };
    let mut found = Finder::default();
    found.visit_file(&file);
    let mut refused = found.0;
    refused.sort_by_key(|r| (r.line, r.column));
    refused.dedup();
    refused
}

/// `ident` as the compiler resolves it: a raw identifier without its `r#`.
fn name(ident: &Ident) -> String {
    let spelled = ident.to_string();
    match spelled.strip_prefix("r#") {
        Some(unraw) => unraw.to_string(),
        None => spelled,
    }
}

/// Whether `tokens` hold a macro's fragment (`$x`, `$($x)*`) anywhere, in any group.
fn has_fragment(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tree| match tree {
        TokenTree::Punct(p) => p.as_char() == '$',
        TokenTree::Group(g) => has_fragment(&g.stream()),
        _ => false,
    })
}

/// The refusals as rustc would render errors, in `lang`, each pointing into `shown` (the file as the
/// learner names it).
pub fn render(refused: &[Refused], shown: &str, lang: Lang) -> String {
    refused
        .iter()
        .map(|r| {
            let construct = format!("`{}`", r.construct);
            format!(
                "{}\n --> {shown}:{}:{}\n\n",
                lang.t("grade-refused", &[("construct", &construct)]),
                r.line,
                r.column
            )
        })
        .collect()
}

#[derive(Default)]
struct Finder(Vec<Refused>);

impl Finder {
    fn refuse(&mut self, span: Span, construct: String) {
        let start = span.start();
        self.0.push(Refused {
            line: start.line,
            column: start.column + 1,
            construct,
        });
    }

    /// An attribute's contents (`naked`, `unsafe(no_mangle)`, `cfg_attr(all(), used)`).
    fn meta(&mut self, meta: &Meta, span: Span) {
        let Some(name) = meta.path().segments.last().map(|s| name(&s.ident)) else {
            return;
        };
        match (name.as_str(), meta) {
            ("unsafe", _) => {
                let inner = match meta {
                    Meta::List(list) => list.tokens.to_string(),
                    _ => String::new(),
                };
                self.refuse(span, format!("#[unsafe({inner})]"));
            }
            ("cfg_attr", Meta::List(list)) => {
                // `cfg_attr(predicate, attr, ...)`: every attribute it may add.
                // Contents that do not read as attributes (a macro's `$attr`) could add any: refused.
                let parser = Punctuated::<Meta, Token![,]>::parse_terminated;
                match list.parse_args_with(parser) {
                    Ok(metas) if !has_fragment(&list.tokens) => {
                        for inner in metas.iter().skip(1) {
                            self.meta(inner, span);
                        }
                    }
                    _ => self.refuse(span, "#[cfg_attr(...)]".into()),
                }
            }
            (name, _) if ATTRIBUTES.contains(&name) => self.refuse(span, format!("#[{name}]")),
            _ => {}
        }
    }

    /// Tokens syn does not parse further: macro arguments, `macro_rules!` bodies, verbatim items.
    fn tokens(&mut self, tokens: &TokenStream) {
        let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            let next = |n: usize| trees.get(i + n);
            match tree {
                TokenTree::Ident(ident) if ASSEMBLY.contains(&name(ident).as_str()) => {
                    self.refuse(ident.span(), format!("{}!", name(ident)));
                }
                TokenTree::Ident(ident) if name(ident) == "extern" => match (next(1), next(2)) {
                    (Some(TokenTree::Ident(c)), _) if name(c) == "crate" => {
                        self.refuse(ident.span(), "extern crate".into());
                    }
                    // `extern $abi { ... }`, `extern $kw name;`: a macro fills in the rest.
                    (Some(TokenTree::Punct(d)), _) if d.as_char() == '$' => {
                        self.refuse(ident.span(), "extern $...".into());
                    }
                    (Some(TokenTree::Group(g)), _) if g.delimiter() == Delimiter::Brace => {
                        self.refuse(ident.span(), "extern { ... }".into());
                    }
                    (Some(TokenTree::Literal(abi)), Some(TokenTree::Group(g)))
                        if g.delimiter() == Delimiter::Brace =>
                    {
                        self.refuse(ident.span(), format!("extern {abi} {{ ... }}"));
                    }
                    _ => {}
                },
                TokenTree::Punct(p) if p.as_char() == '#' => {
                    let after = match next(1) {
                        Some(TokenTree::Punct(bang)) if bang.as_char() == '!' => next(2),
                        after => after,
                    };
                    match after {
                        // `# $attr`: the whole attribute is a macro's fragment.
                        Some(TokenTree::Punct(d)) if d.as_char() == '$' => {
                            self.refuse(p.span(), "#[$...]".into());
                        }
                        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => {
                            // Any part filled in by a macro, or contents that are no attribute:
                            // it could be any attribute.
                            if has_fragment(&g.stream()) {
                                self.refuse(p.span(), "#[$...]".into());
                            } else {
                                match syn::parse2::<Meta>(g.stream()) {
                                    Ok(meta) => self.meta(&meta, p.span()),
                                    Err(_) => self.refuse(p.span(), "#[...]".into()),
                                }
                            }
                        }
                        _ => {}
                    }
                }
                TokenTree::Group(g) => self.tokens(&g.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        self.meta(&attr.meta, attr.pound_token.span);
        visit::visit_attribute(self, attr);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if let Some(last) = mac.path.segments.last() {
            if ASSEMBLY.contains(&name(&last.ident).as_str()) {
                self.refuse(last.ident.span(), format!("{}!", name(&last.ident)));
            }
        }
        self.tokens(&mac.tokens);
        visit::visit_macro(self, mac);
    }

    fn visit_item_foreign_mod(&mut self, item: &'ast syn::ItemForeignMod) {
        let abi = item
            .abi
            .name
            .as_ref()
            .map(|name| format!("{} ", name.token()))
            .unwrap_or_default();
        self.refuse(item.abi.extern_token.span, format!("extern {abi}{{ ... }}"));
        visit::visit_item_foreign_mod(self, item);
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        self.refuse(item.extern_token.span, "extern crate".into());
        visit::visit_item_extern_crate(self, item);
    }

    fn visit_use_name(&mut self, name: &'ast syn::UseName) {
        self.imported(&name.ident);
    }

    fn visit_use_rename(&mut self, rename: &'ast syn::UseRename) {
        self.imported(&rename.ident);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if let syn::Item::Verbatim(tokens) = item {
            self.tokens(tokens);
        }
        visit::visit_item(self, item);
    }

    fn visit_expr(&mut self, expr: &'ast syn::Expr) {
        if let syn::Expr::Verbatim(tokens) = expr {
            self.tokens(tokens);
        }
        visit::visit_expr(self, expr);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if let syn::ImplItem::Verbatim(tokens) = item {
            self.tokens(tokens);
        }
        visit::visit_impl_item(self, item);
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        if let syn::TraitItem::Verbatim(tokens) = item {
            self.tokens(tokens);
        }
        visit::visit_trait_item(self, item);
    }

    fn visit_type(&mut self, ty: &'ast syn::Type) {
        if let syn::Type::Verbatim(tokens) = ty {
            self.tokens(tokens);
        }
        visit::visit_type(self, ty);
    }

    fn visit_pat(&mut self, pat: &'ast syn::Pat) {
        if let syn::Pat::Verbatim(tokens) = pat {
            self.tokens(tokens);
        }
        visit::visit_pat(self, pat);
    }
}

impl Finder {
    /// A `use` of an assembly macro or an importable attribute, under any name.
    fn imported(&mut self, ident: &syn::Ident) {
        let name = name(ident);
        if ASSEMBLY.contains(&name.as_str()) {
            self.refuse(ident.span(), format!("{name}!"));
        } else if IMPORTABLE.contains(&name.as_str()) {
            self.refuse(ident.span(), format!("#[{name}]"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constructs refused in `source`, as (line, construct).
    fn refused(source: &str) -> Vec<(usize, String)> {
        check(source)
            .expect("within the bounds")
            .into_iter()
            .map(|r| (r.line, r.construct))
            .collect()
    }

    #[test]
    fn a_naked_function_is_refused_at_its_attribute_and_its_assembly() {
        let source = "pub fn f() {}\n#[unsafe(naked)]\npub extern \"C\" fn g() {\n    std::arch::naked_asm!(\"ret\")\n}\n";
        assert_eq!(
            refused(source),
            [(2, "#[unsafe(naked)]".into()), (4, "naked_asm!".into())]
        );
        assert_eq!(check(source).unwrap()[0].column, 1);
        assert_eq!(check(source).unwrap()[1].column, 16);
    }

    #[test]
    fn every_linker_level_construct_is_refused() {
        let cases = [
            ("fn f() { unsafe { core::arch::asm!(\"nop\") } }", "asm!"),
            ("core::arch::global_asm!(\"\");", "global_asm!"),
            ("use std::arch::naked_asm as n;", "naked_asm!"),
            ("use std::arch::{asm};", "asm!"),
            (
                "use core::prelude::v1::global_allocator as ga;",
                "#[global_allocator]",
            ),
            ("#[naked] fn f() {}", "#[naked]"),
            ("#[unsafe(no_mangle)] fn f() {}", "#[unsafe(no_mangle)]"),
            ("#[no_mangle] fn f() {}", "#[no_mangle]"),
            ("#[export_name = \"main\"] fn f() {}", "#[export_name]"),
            ("#[link_section = \".init_array\"] static S: u8 = 0;", "#[link_section]"),
            ("#[used] static S: u8 = 0;", "#[used]"),
            (
                "#[global_allocator] static A: std::alloc::System = std::alloc::System;",
                "#[global_allocator]",
            ),
            (
                "#[core::prelude::v1::global_allocator] static A: std::alloc::System = std::alloc::System;",
                "#[global_allocator]",
            ),
            ("#[link(name = \"c\")] unsafe extern \"C\" {}", "#[link]"),
            ("extern \"C\" { fn abs(x: i32) -> i32; }", "extern \"C\" { ... }"),
            ("extern crate alloc;", "extern crate"),
            ("#[panic_handler] fn p(_: &core::panic::PanicInfo) -> ! { loop {} }", "#[panic_handler]"),
            ("#[cfg_attr(all(), used)] static S: u8 = 0;", "#[used]"),
            (
                "#[cfg_attr(all(), cfg_attr(all(), unsafe(link_section = \"x\")))] static S: u8 = 0;",
                "#[unsafe(link_section = \"x\")]",
            ),
            // Inside a function, a closure, an impl.
            ("fn f() { #[used] static S: u8 = 0; }", "#[used]"),
            ("struct S; impl S { #[no_mangle] fn f() {} }", "#[no_mangle]"),
            // Made by a macro: its body is tokens.
            (
                "macro_rules! m { () => { #[unsafe(no_mangle)] pub extern \"C\" fn f() {} } } m!();",
                "#[unsafe(no_mangle)]",
            ),
            (
                "macro_rules! m { ($($t:tt)*) => { std::arch::naked_asm!($($t)*) } }",
                "naked_asm!",
            ),
            ("macro_rules! m { ($a:meta) => { #[$a] fn f() {} } }", "#[$...]"),
            ("macro_rules! m { () => { extern \"C\" { fn f(); } } }", "extern \"C\" { ... }"),
            ("macro_rules! m { () => { extern crate alloc; } }", "extern crate"),
            ("fn f() { m!(naked_asm); }", "naked_asm!"),
        ];
        for (source, construct) in cases {
            let found = refused(source);
            assert!(
                found.iter().any(|(_, c)| c == construct),
                "{source}: expected {construct}, found {found:?}"
            );
        }
    }

    #[test]
    fn strings_comments_and_ordinary_code_are_fine() {
        let source = r##"
//! Notes: `asm!`, `#[no_mangle]`, `extern "C" {}` are not used here.
/// Not `#[unsafe(naked)]` either; see naked_asm! in the reference.
#[derive(Debug, Clone)]
#[allow(dead_code)]
pub struct Used { link: String, used: bool }
// global_asm!("") in a comment
/* extern crate alloc; */
pub fn f(link: &str) -> String {
    let used = "asm!(\"nop\") #[used] extern \"C\" { }";
    let naked = r#"naked_asm!("ret")"#;
    let ptr: extern "C" fn() = g;
    let _ = ptr;
    println!("{used} {naked} {link}");
    format!("{}", used)
}
pub extern "C" fn g() {}
#[cfg_attr(test, derive(Default))]
#[tokio::main]
async fn main() {}
"##;
        assert_eq!(refused(source), []);
    }

    #[test]
    fn raw_spellings_and_macro_filled_attributes_are_refused() {
        let cases = [
            ("fn f() { std::arch::r#naked_asm!(\"ret\") }", "naked_asm!"),
            ("fn f() { core::arch::r#asm!(\"nop\") }", "asm!"),
            ("use std::arch::r#naked_asm as n;", "naked_asm!"),
            ("use std::arch::{r#global_asm};", "global_asm!"),
            ("#[r#no_mangle] fn f() {}", "#[no_mangle]"),
            ("#[cfg_attr(all(), r#used)] static S: u8 = 0;", "#[used]"),
            (
                "macro_rules! m { () => { std::arch::r#naked_asm!(\"ret\") } }",
                "naked_asm!",
            ),
            ("fn f() { m!(r#naked_asm); }", "naked_asm!"),
            // A macro fills in the attribute `cfg_attr` adds, or part of it.
            (
                "macro_rules! m { ($a:meta) => { #[cfg_attr(all(), $a)] fn f() {} } } m!(unsafe(naked));",
                "#[$...]",
            ),
            (
                "macro_rules! m { ($($a:tt)*) => { #[cfg_attr(all(), $($a)*)] fn f() {} } }",
                "#[$...]",
            ),
            ("macro_rules! m { ($a:tt) => { #[unsafe($a)] fn f() {} } }", "#[$...]"),
            ("macro_rules! m { ($a:tt) => { # $a fn f() {} } } m!([used]);", "#[$...]"),
            ("macro_rules! m { ($a:tt) => { #! $a } }", "#[$...]"),
            ("macro_rules! m { ($v:expr) => { #[link_section = $v] static S: u8 = 0; } }", "#[$...]"),
            ("macro_rules! m { ($a:literal) => { extern $a { fn f(); } } }", "extern $..."),
            ("macro_rules! m { ($k:ident) => { extern $k alloc; } }", "extern $..."),
            // Contents that are no attribute, in tokens and in the file.
            ("macro_rules! m { () => { #[cfg_attr(all(), = used)] fn f() {} } }", "#[cfg_attr(...)]"),
            ("macro_rules! m { () => { #[= used] fn f() {} } }", "#[...]"),
            ("#[cfg_attr(all(), unsafe(naked) = = 1)] fn f() {}", "#[cfg_attr(...)]"),
        ];
        for (source, construct) in cases {
            let found = refused(source);
            assert!(
                found.iter().any(|(_, c)| c == construct),
                "{source}: expected {construct}, found {found:?}"
            );
        }
    }

    /// The chapter's own files: the skeletons, the reference and every alternative.
    fn chapter_files() -> Vec<(String, String)> {
        let chapter =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("chapters/07-agent-loop");
        let mut paths = vec![
            chapter.join("skeleton/src/agent_loop.rs"),
            chapter.join("skeleton.en/src/agent_loop.rs"),
            chapter.join("solution/src/agent_loop.rs"),
        ];
        for entry in std::fs::read_dir(chapter.join("alternatives")).unwrap() {
            paths.push(entry.unwrap().path());
        }
        paths
            .into_iter()
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect()
    }

    /// The most brackets and open tokens at any point of `source`.
    fn deepest(source: &str) -> (usize, usize) {
        let (mut brackets, mut open) = (0, 0);
        open_tokens(source.parse().unwrap(), |_, o, b| {
            (brackets, open) = (brackets.max(b), open.max(o));
            true
        });
        (brackets, open)
    }

    #[test]
    fn every_loop_of_the_chapter_is_far_within_the_bounds() {
        for (path, source) in chapter_files() {
            let (brackets, open) = deepest(&source);
            eprintln!("{path}: {brackets} brackets, {open} open tokens");
            assert!(brackets * 8 < MAX_BRACKETS, "{path}: {brackets}");
            assert!(open * 8 < MAX_OPEN, "{path}: {open}");
            assert_eq!(too_deep(&source), None, "{path}");
            assert!(check(&source).is_ok(), "{path}");
        }
    }

    #[test]
    fn five_thousand_parentheses_are_refused_unparsed_naming_the_line() {
        let nested = format!(
            "fn f() {{\n    let _ = {}1{};\n}}\n",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        let source = format!("{}\n{nested}", chapter_files()[0].1);
        let line = source.lines().position(|l| l.contains("((")).unwrap() + 1;
        let deep = check(&source).unwrap_err();
        assert_eq!((deep.line, deep.max), (line, MAX_BRACKETS), "{deep:?}");
        assert_eq!(deep.depth, MAX_BRACKETS + 1);
        assert_eq!(too_deep(&source), Some(deep));

        // At the bound, parsed; one past it, refused.
        let at = |n: usize| format!("fn f() {{ let _ = {}1{}; }}", "(".repeat(n), ")".repeat(n));
        assert_eq!(check(&at(MAX_BRACKETS - 2)), Ok(vec![]));
        assert!(check(&at(MAX_BRACKETS)).is_err());
    }

    /// Shapes syn parses by recursion, or into trees as deep as they are long, `n` levels deep.
    fn shapes(n: usize) -> Vec<(&'static str, String)> {
        vec![
            (
                "parens",
                format!("fn f() {{ let _ = {}x{}; }}", "(".repeat(n), ")".repeat(n)),
            ),
            ("not", format!("fn f() {{ let _ = {}x; }}", "!".repeat(n))),
            ("refs", format!("fn f() {{ let _ = {}x; }}", "&".repeat(n))),
            ("assign", format!("fn f() {{ x{}; }}", "=x".repeat(n))),
            ("return", format!("fn f() {{ {}x; }}", "return ".repeat(n))),
            (
                "closures",
                format!("fn f() {{ let _ = {}x; }}", "|| ".repeat(n)),
            ),
            ("ref types", format!("type T = {}u8;", "&".repeat(n))),
            (
                "pointer types",
                format!("type T = {}u8;", "*const ".repeat(n)),
            ),
            (
                "generics",
                format!("type T = {}u8{};", "A<".repeat(n), ">".repeat(n)),
            ),
            ("fn types", format!("type T = {}u8;", "fn()->".repeat(n))),
            (
                "patterns",
                format!("fn f() {{ let {}x = 1; }}", "&".repeat(n)),
            ),
            ("sums", format!("fn f() {{ let _ = x{}; }}", "+x".repeat(n))),
            (
                "methods",
                format!("fn f() {{ let _ = x{}; }}", ".f()".repeat(n)),
            ),
            (
                "casts",
                format!("fn f() {{ let _ = x{}; }}", " as T".repeat(n)),
            ),
            (
                "else ifs",
                format!("fn f() {{ if x {{}}{} }}", " else if x {}".repeat(n)),
            ),
            (
                "in a macro",
                format!("m!{{{}{}}}", "[".repeat(n.min(300)), "]".repeat(n.min(300))),
            ),
            (
                "attributes",
                format!("fn f() {{ let _ = {}x; }}", "#[a] ".repeat(n)),
            ),
        ]
    }

    #[test]
    fn no_shape_at_the_bounds_or_at_the_file_limit_overflows_the_check() {
        let within = |source: &str| {
            let (brackets, open) = deepest(source);
            brackets <= MAX_BRACKETS && open <= MAX_OPEN
        };
        for (i, (shape, _)) in shapes(0).into_iter().enumerate() {
            let of = |n: usize| shapes(n).swap_remove(i).1;
            // As deep as the bounds let it be: parsed, on the check's own stack.
            let (mut low, mut high) = (0, MAX_OPEN + 1);
            while low + 1 < high {
                let mid = (low + high) / 2;
                if within(&of(mid)) {
                    low = mid;
                } else {
                    high = mid;
                }
            }
            assert!(check(&of(low)).is_ok(), "{shape}, {low} deep");
            // As long as an editable file may be: refused unparsed (a macro's tokens stop at the
            // bracket bound).
            let per_level = of(1).len() - of(0).len();
            let longest = of((1 << 20) / per_level - 64);
            assert!(longest.len() <= 1 << 20, "{shape}");
            match shape {
                // Tokens stop at the bracket bound; attributes are read one after another.
                "in a macro" | "attributes" => _ = check(&longest),
                _ => assert!(check(&longest).is_err(), "{shape}"),
            }
        }
    }

    /// A small generator of pseudo-random numbers (xorshift64*), seeded.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Random text built from the pieces the check looks at, nested up to `depth`.
    fn random_source(rng: &mut Rng, depth: usize) -> String {
        const PIECES: &[&str] = &[
            "#",
            "!",
            "$",
            "$a",
            "$($t)*",
            "r#naked_asm",
            "naked_asm",
            "asm",
            "r#asm",
            "global_asm",
            "unsafe",
            "naked",
            "cfg_attr",
            "all()",
            "used",
            "no_mangle",
            "link_section",
            "=",
            "\"x\"",
            "extern",
            "\"C\"",
            "crate",
            "use",
            "as",
            "macro_rules",
            "m",
            "fn",
            "f",
            "()",
            "->",
            ",",
            ";",
            ":",
            "::",
            "&",
            "*",
            "<",
            ">",
            "|",
            "+",
            ".",
            "..",
            "?",
            "'a",
            "1",
            "x",
            "let",
            "if",
            "else",
            "return",
            "move",
            "async",
            "impl",
            "dyn",
            "type",
            "struct",
            "mod",
            "static",
            "=>",
            "'c'",
            "b\"y\"",
            "r\"z\"",
            "/* c */",
            "// c\n",
            "\n",
        ];
        let mut out = String::new();
        let mut open: Vec<char> = Vec::new();
        for _ in 0..rng.below(200) {
            match rng.below(10) {
                0 | 1 if open.len() < depth => {
                    let (o, c) = [('(', ')'), ('[', ']'), ('{', '}')][rng.below(3)];
                    out.push(o);
                    open.push(c);
                }
                2 if !open.is_empty() => out.push(open.pop().unwrap()),
                // Now and then, an unbalanced bracket.
                3 if rng.below(20) == 0 => out.push([')', ']', '}', '('][rng.below(4)]),
                _ => {
                    out.push_str(PIECES[rng.below(PIECES.len())]);
                    out.push(' ');
                }
            }
        }
        while let Some(c) = open.pop() {
            out.push(c);
        }
        out
    }

    #[test]
    fn random_and_deeply_nested_token_streams_never_crash_the_check() {
        let seed = std::env::var("PI_COURSE_FUZZ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
                    | 1
            });
        eprintln!("fuzz seed {seed} (PI_COURSE_FUZZ_SEED={seed} repeats this run)");
        let mut rng = Rng(seed);
        for round in 0..3000 {
            let depth = [4, 16, 64, MAX_BRACKETS + 8][round % 4];
            let source = random_source(&mut rng, depth);
            // Any answer will do: what matters is that there is one.
            let _ = check(&source);
            // The same text inside a macro's body and a `cfg_attr`, where it stays tokens.
            let _ = check(&format!("macro_rules! m {{ () => {{ {source} }} }}"));
            let _ = check(&format!("#[cfg_attr(all(), {source})] fn f() {{}}"));
        }
        // Deep random nests, past the bound and at it.
        for _ in 0..20 {
            let n = MAX_BRACKETS - 2 + rng.below(16);
            let mut source = String::from("fn f() { ");
            let mut close = Vec::new();
            for _ in 0..n {
                let (o, c) = [
                    ("(", ")"),
                    ("[", "]"),
                    ("{", "}"),
                    ("m!(", ")"),
                    ("#[a(", ")]"),
                ][rng.below(5)];
                source.push_str(o);
                close.push(c);
            }
            source.extend(close.into_iter().rev());
            source.push_str(" }");
            let _ = check(&source);
        }
    }

    #[test]
    fn a_file_that_does_not_parse_is_left_to_rustc() {
        assert_eq!(refused("#[unsafe(naked)] fn f( {"), []);
    }
}
