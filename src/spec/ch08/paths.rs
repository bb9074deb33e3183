//! Lab 8.2: the one resolution every file tool's path goes through (docs/chapters/08-coding-tools.md,
//! R8.2). First by the string: the path made absolute against the workspace must be the workspace or
//! lie below it. Then through the links: where it really leads, or, for a path that does not exist yet,
//! where its nearest existing parent really is, must be inside the workspace too.
//!
//! Not settled yet (docs/chapters/08-coding-tools.md, Q10): a link whose target is missing. The course's
//! own tools let it through (the walk goes on to its parent); a resolution that refuses a dangling link
//! to the outside is not forbidden by the chapter either. Scenarios draw no dangling link until the
//! specification allows both.

use super::tree::{lexical, parent, within, Tree, WORKSPACE};

/// Why a path is refused, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The path itself leaves the workspace.
    Outside,
    /// It stays inside by its name, but a link on the way leads out.
    ThroughLink,
}

/// The path the tools use for `input` (absolute, by its name: links are not resolved in it), or why it
/// is refused. A path outside by its name is refused as such, even where a link would also lead out.
pub fn resolve(tree: &Tree, input: &str) -> Result<String, Refusal> {
    let path = lexical(WORKSPACE, input);
    if !within(&path, WORKSPACE) {
        return Err(Refusal::Outside);
    }
    let root = tree
        .realpath(WORKSPACE)
        .expect("the workspace exists and is no link");
    // The path itself when it exists, else its nearest parent that does.
    let mut at = path.as_str();
    let real = loop {
        match tree.realpath(at) {
            Ok(real) => break real,
            Err(_) => at = parent(at).expect("`/` always resolves"),
        }
    };
    match within(&real, &root) {
        true => Ok(path),
        false => Err(Refusal::ThroughLink),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tree::{Entry, OUTSIDE};
    use super::*;

    fn tree() -> Tree {
        let mut tree = Tree::default();
        tree.put("/ws/task.txt", Entry::File("status: draft".into()));
        tree.put("/ws/sub/inner.txt", Entry::File("x".into()));
        tree.put("/outside/secret.txt", Entry::File("keep".into()));
        tree.put("/ws/escape", Entry::Link(OUTSIDE.into()));
        tree.put("/ws/secret-link", Entry::Link("/outside/secret.txt".into()));
        tree.put("/ws/inner-link", Entry::Link("sub".into()));
        tree.put("/ws/up", Entry::Link("..".into()));
        tree.put("/ws/dangling", Entry::Link("/outside/missing.txt".into()));
        tree
    }

    #[test]
    fn a_path_by_its_name() {
        let tree = tree();
        assert_eq!(resolve(&tree, "task.txt"), Ok("/ws/task.txt".into()));
        assert_eq!(resolve(&tree, "sub/../task.txt"), Ok("/ws/task.txt".into()));
        assert_eq!(resolve(&tree, "/ws/task.txt"), Ok("/ws/task.txt".into()));
        assert_eq!(
            resolve(&tree, "new/deep/file"),
            Ok("/ws/new/deep/file".into())
        );
        assert_eq!(resolve(&tree, "../secret.txt"), Err(Refusal::Outside));
        assert_eq!(resolve(&tree, "/outside/secret.txt"), Err(Refusal::Outside));
        assert_eq!(resolve(&tree, "/ws-other/x"), Err(Refusal::Outside));
        // Outside by its name and through a link: the name decides first.
        assert_eq!(
            resolve(&tree, "escape/../../outside/secret.txt"),
            Err(Refusal::Outside)
        );
        assert_eq!(
            resolve(&tree, "../ws/escape/secret.txt"),
            Err(Refusal::ThroughLink)
        );
    }

    #[test]
    fn a_path_through_its_links() {
        let tree = tree();
        assert_eq!(
            resolve(&tree, "escape/secret.txt"),
            Err(Refusal::ThroughLink)
        );
        assert_eq!(resolve(&tree, "secret-link"), Err(Refusal::ThroughLink));
        assert_eq!(
            resolve(&tree, "up/outside/secret.txt"),
            Err(Refusal::ThroughLink)
        );
        // Not there yet: the nearest parent that is decides, however deep the missing part.
        assert_eq!(resolve(&tree, "escape/new.txt"), Err(Refusal::ThroughLink));
        assert_eq!(
            resolve(&tree, "escape/a/b/new.txt"),
            Err(Refusal::ThroughLink)
        );
        // A link that stays inside is fine, and the path keeps its name.
        assert_eq!(
            resolve(&tree, "inner-link/inner.txt"),
            Ok("/ws/inner-link/inner.txt".into())
        );
        assert_eq!(
            resolve(&tree, "up/ws/task.txt"),
            Ok("/ws/up/ws/task.txt".into())
        );
    }
}
