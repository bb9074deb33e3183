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
//! What syn leaves as tokens (macro arguments, `macro_rules!` bodies) is checked token by token with the
//! same rules, and an attribute a macro fills in (`#[$attr]`) is refused too: it could be any of these.
//! A file that does not parse is left to rustc, whose error is what the learner needs.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
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

/// The constructs of `source` that are refused, in the order they appear; empty when there are none or
/// when the file does not parse.
pub fn check(source: &str) -> Vec<Refused> {
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
        let Some(name) = meta.path().segments.last().map(|s| s.ident.to_string()) else {
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
                let parser = Punctuated::<Meta, Token![,]>::parse_terminated;
                if let Ok(metas) = list.parse_args_with(parser) {
                    for inner in metas.iter().skip(1) {
                        self.meta(inner, span);
                    }
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
                TokenTree::Ident(ident) if ASSEMBLY.contains(&ident.to_string().as_str()) => {
                    self.refuse(ident.span(), format!("{ident}!"));
                }
                TokenTree::Ident(ident) if ident == "extern" => match (next(1), next(2)) {
                    (Some(TokenTree::Ident(c)), _) if c == "crate" => {
                        self.refuse(ident.span(), "extern crate".into());
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
                    let bracket = match (next(1), next(2)) {
                        (Some(TokenTree::Group(g)), _) => Some(g),
                        (Some(TokenTree::Punct(bang)), Some(TokenTree::Group(g)))
                            if bang.as_char() == '!' =>
                        {
                            Some(g)
                        }
                        _ => None,
                    };
                    if let Some(g) = bracket.filter(|g| g.delimiter() == Delimiter::Bracket) {
                        let filled_in = matches!(
                            g.stream().into_iter().next(),
                            Some(TokenTree::Punct(d)) if d.as_char() == '$'
                        );
                        if filled_in {
                            self.refuse(p.span(), "#[$...]".into());
                        } else if let Ok(meta) = syn::parse2::<Meta>(g.stream()) {
                            self.meta(&meta, p.span());
                        }
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
            if ASSEMBLY.contains(&last.ident.to_string().as_str()) {
                self.refuse(last.ident.span(), format!("{}!", last.ident));
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
        let name = ident.to_string();
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
        assert_eq!(check(source)[0].column, 1);
        assert_eq!(check(source)[1].column, 16);
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
    fn a_file_that_does_not_parse_is_left_to_rustc() {
        assert_eq!(refused("#[unsafe(naked)] fn f( {"), []);
    }
}
