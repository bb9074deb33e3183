//! The file system a chapter 08 instance sets up, as the specification models it: the workspace, a
//! place outside it, and what is in them (files, directories, symbolic links). Paths are absolute,
//! `/`-separated strings over a symbolic root ([`WORKSPACE`]); a driver lays the tree out under a
//! directory of its own and writes its paths back in these terms.

use std::collections::BTreeMap;

/// The workspace root, `cwd` of the tools.
pub const WORKSPACE: &str = "/ws";
/// A directory beside the workspace that links may point into, and that nothing may change.
pub const OUTSIDE: &str = "/outside";

/// What a path holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File(String),
    Dir,
    /// A symbolic link, and its target as written (absolute, or relative to the link's directory).
    Link(String),
}

/// Why a path does not resolve to an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A component is missing.
    Missing,
    /// A component before the last is a file.
    NotADirectory,
    /// Links that point at each other, or too many in a row.
    Loop,
}

/// Every entry of the workspace and the outside directory, by absolute path. The root `/` and the
/// two top directories always exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    entries: BTreeMap<String, Entry>,
}

/// The most links one resolution follows, as Linux allows.
const MAX_LINKS: usize = 40;

impl Default for Tree {
    fn default() -> Tree {
        let mut entries = BTreeMap::new();
        for dir in ["/", WORKSPACE, OUTSIDE] {
            entries.insert(dir.to_string(), Entry::Dir);
        }
        Tree { entries }
    }
}

impl Tree {
    /// Puts `entry` at `path`, with every directory above it.
    pub fn put(&mut self, path: &str, entry: Entry) {
        let mut parent = parent(path);
        while let Some(dir) = parent {
            self.entries.entry(dir.to_string()).or_insert(Entry::Dir);
            parent = self::parent(dir);
        }
        self.entries.insert(path.to_string(), entry);
    }

    /// What `path` itself holds (a link is not followed).
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.get(path)
    }

    /// Every entry, by path.
    pub fn entries(&self) -> &BTreeMap<String, Entry> {
        &self.entries
    }

    /// Removes `path` and everything below it.
    pub fn remove(&mut self, path: &str) {
        let below = format!("{path}/");
        self.entries
            .retain(|p, _| p != path && !p.starts_with(&below));
    }

    /// Whether the directory `path` holds anything.
    pub fn has_children(&self, path: &str) -> bool {
        let below = match path {
            "/" => "/".to_string(),
            _ => format!("{path}/"),
        };
        self.entries
            .range(below.clone()..)
            .take_while(|(p, _)| p.starts_with(&below))
            .any(|(p, _)| p != path)
    }

    /// The path with every link resolved, as `realpath(3)` gives it: every component must exist.
    pub fn realpath(&self, path: &str) -> Result<String, Fault> {
        let mut links = 0;
        self.walk("/".to_string(), components(path), &mut links)
    }

    fn walk(&self, mut at: String, rest: Vec<String>, links: &mut usize) -> Result<String, Fault> {
        let mut rest = rest.into_iter();
        while let Some(name) = rest.next() {
            match name.as_str() {
                "." => continue,
                ".." => {
                    at = parent(&at).unwrap_or("/").to_string();
                    continue;
                }
                _ => {}
            }
            let next = join(&at, &name);
            match self.entries.get(&next) {
                None => return Err(Fault::Missing),
                Some(Entry::Dir) => at = next,
                Some(Entry::File(_)) => {
                    if rest.len() > 0 {
                        return Err(Fault::NotADirectory);
                    }
                    at = next;
                }
                Some(Entry::Link(target)) => {
                    *links += 1;
                    if *links > MAX_LINKS {
                        return Err(Fault::Loop);
                    }
                    let from = if target.starts_with('/') {
                        "/".to_string()
                    } else {
                        at.clone()
                    };
                    let mut more = components(target);
                    more.extend(rest);
                    return self.walk(from, more, links);
                }
            }
        }
        Ok(at)
    }
}

/// `input` made absolute against `base` and normalised without looking at the tree, as
/// `path.resolve(base, input)` does: `.` dropped, `..` taking off the component before it.
pub fn lexical(base: &str, input: &str) -> String {
    let start = if input.starts_with('/') { "/" } else { base };
    let mut parts: Vec<String> = components(start);
    for name in components(input) {
        match name.as_str() {
            "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(name),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `root` or below it, component by component.
pub fn within(path: &str, root: &str) -> bool {
    path == root || path.starts_with(&format!("{root}/"))
}

/// The directory that holds `path`; `None` for `/`.
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// The last component of `path`.
pub fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `name` inside the directory `dir`.
pub fn join(dir: &str, name: &str) -> String {
    match dir {
        "/" => format!("/{name}"),
        _ => format!("{dir}/{name}"),
    }
}

fn components(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_lexically_as_node_resolves_them() {
        assert_eq!(lexical(WORKSPACE, "task.txt"), "/ws/task.txt");
        assert_eq!(lexical(WORKSPACE, "./a/../b/./c"), "/ws/b/c");
        assert_eq!(lexical(WORKSPACE, "../secret.txt"), "/secret.txt");
        assert_eq!(lexical(WORKSPACE, "/outside/x"), "/outside/x");
        assert_eq!(lexical(WORKSPACE, "a//b/"), "/ws/a/b");
        assert_eq!(lexical(WORKSPACE, ""), "/ws");
        assert_eq!(lexical(WORKSPACE, "../../../.."), "/");
        assert!(within("/ws", WORKSPACE) && within("/ws/a", WORKSPACE));
        assert!(!within("/ws-other/a", WORKSPACE) && !within("/", WORKSPACE));
    }

    #[test]
    fn realpath_follows_links_and_finds_faults() {
        let mut tree = Tree::default();
        tree.put("/ws/a/file", Entry::File("x".into()));
        tree.put("/ws/up", Entry::Link("..".into()));
        tree.put("/ws/escape", Entry::Link(OUTSIDE.into()));
        tree.put("/ws/a/rel", Entry::Link("file".into()));
        tree.put("/ws/loop", Entry::Link("loop".into()));
        tree.put("/ws/dangling", Entry::Link("/nowhere".into()));
        assert_eq!(tree.realpath("/ws/a/rel").unwrap(), "/ws/a/file");
        assert_eq!(tree.realpath("/ws/up/ws/a").unwrap(), "/ws/a");
        assert_eq!(tree.realpath("/ws/up").unwrap(), "/");
        assert_eq!(tree.realpath("/ws/escape").unwrap(), "/outside");
        // `..` after a link climbs from where the link led, not from the link.
        assert_eq!(tree.realpath("/ws/escape/..").unwrap(), "/");
        assert_eq!(tree.realpath("/ws/escape/new"), Err(Fault::Missing));
        assert_eq!(tree.realpath("/ws/a/file/x"), Err(Fault::NotADirectory));
        assert_eq!(tree.realpath("/ws/loop"), Err(Fault::Loop));
        assert_eq!(tree.realpath("/ws/dangling"), Err(Fault::Missing));
    }

    #[test]
    fn a_tree_knows_what_it_holds() {
        let mut tree = Tree::default();
        assert!(!tree.has_children(WORKSPACE));
        tree.put("/ws/d/e/f", Entry::File(String::new()));
        assert_eq!(tree.get("/ws/d/e"), Some(&Entry::Dir));
        assert!(tree.has_children("/ws/d"));
        assert!(!tree.has_children("/ws/d/e/f"));
        tree.remove("/ws/d");
        assert_eq!(tree.get("/ws/d/e/f"), None);
        assert!(!tree.has_children(WORKSPACE));
        assert_eq!(parent("/ws"), Some("/"));
        assert_eq!(name("/ws/d/e"), "e");
    }
}
