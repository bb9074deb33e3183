//! Lab 8.3, `write`: what a write leaves in the tree (docs/chapters/08-coding-tools.md, R8.3). The
//! content goes to a temporary file beside the target, which is then renamed onto it: the target's
//! entry is replaced whole, a hard link to the old file keeps the old content, a link at the target is
//! replaced rather than followed, and no temporary file is left on any path. Missing parents are
//! made first; a directory at the target is refused and stays as it was. (A refusal always comes
//! before any parent is made: a directory just made holds nothing that could refuse the write.)

use super::paths::{self, resolve};
use super::tree::{join, name, parent, Entry, Tree, WORKSPACE};

/// What a write call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Result {
    /// Written: the path the tools use, and the UTF-8 bytes of the content.
    Written {
        path: String,
        bytes: usize,
    },
    Refused(Refusal),
}

/// Why a write is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Path(paths::Refusal),
    /// A parent on the way is a file.
    NotADirectory,
    /// The target is a directory.
    IsADirectory,
}

/// One outcome the chapter allows: the result and the tree after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub result: Result,
    pub tree: Tree,
}

/// Every outcome the chapter allows for writing `content` to `input`, without repeats.
pub fn outcomes(tree: &Tree, input: &str, content: &str) -> Vec<Outcome> {
    let path = match resolve(tree, input) {
        Ok(path) => path,
        Err(refusal) => {
            return vec![Outcome {
                result: Result::Refused(Refusal::Path(refusal)),
                tree: tree.clone(),
            }]
        }
    };
    let mut after = tree.clone();
    // The parents, made where missing, each where it really is (a parent may be a link inside).
    let mut dirs = Vec::new();
    let mut dir = parent(&path);
    while let Some(d) = dir.filter(|d| d.len() > WORKSPACE.len()) {
        dirs.push(d);
        dir = parent(d);
    }
    for d in dirs.into_iter().rev() {
        match after.realpath(d) {
            Ok(real) => {
                if !matches!(after.get(&real), Some(Entry::Dir)) {
                    return refused(tree, Refusal::NotADirectory);
                }
            }
            Err(_) => {
                let real_parent = after
                    .realpath(parent(d).expect("below the workspace"))
                    .expect("made or checked before");
                let made = join(&real_parent, name(d));
                if after.get(&made).is_some() {
                    // A dangling link in the way: the scenarios draw none (see `paths`).
                    return refused(tree, Refusal::NotADirectory);
                }
                after.put(&made, Entry::Dir);
            }
        }
    }
    let real_parent = after
        .realpath(parent(&path).expect("below the workspace"))
        .expect("made above");
    let target = join(&real_parent, name(&path));
    if let Some(Entry::Dir) = after.get(&target) {
        return refused(tree, Refusal::IsADirectory);
    }
    after.put(&target, Entry::File(content.to_string()));
    vec![Outcome {
        result: Result::Written {
            path,
            bytes: content.len(),
        },
        tree: after,
    }]
}

/// A refusal, the tree as it was.
fn refused(before: &Tree, refusal: Refusal) -> Vec<Outcome> {
    vec![Outcome {
        result: Result::Refused(refusal),
        tree: before.clone(),
    }]
}

#[cfg(test)]
mod tests {
    use super::super::tree::OUTSIDE;
    use super::*;

    fn tree() -> Tree {
        let mut tree = Tree::default();
        tree.put("/ws/task.txt", Entry::File("old".into()));
        // A hard link of task.txt: another name of the old file, which keeps the old content.
        tree.put("/ws/witness.txt", Entry::File("old".into()));
        tree.put("/ws/nested/blocked/keep.txt", Entry::File("keep".into()));
        tree.put("/ws/escape", Entry::Link(OUTSIDE.into()));
        tree.put("/ws/inner", Entry::Link("nested".into()));
        tree.put("/ws/alias.txt", Entry::Link("task.txt".into()));
        tree
    }

    fn written(path: &str, bytes: usize) -> Result {
        Result::Written {
            path: path.into(),
            bytes,
        }
    }

    #[test]
    fn a_write_replaces_the_whole_entry_and_nothing_else() {
        let before = tree();
        let [one] = &outcomes(&before, "task.txt", "最终答案")[..] else {
            panic!()
        };
        assert_eq!(one.result, written("/ws/task.txt", 12));
        let mut want = before.clone();
        want.put("/ws/task.txt", Entry::File("最终答案".into()));
        assert_eq!(one.tree, want);
        assert_eq!(
            one.tree.get("/ws/witness.txt"),
            Some(&Entry::File("old".into()))
        );
        // A link at the target is replaced by the file; what it pointed at keeps its content.
        let [one] = &outcomes(&before, "alias.txt", "new")[..] else {
            panic!()
        };
        assert_eq!(
            one.tree.get("/ws/alias.txt"),
            Some(&Entry::File("new".into()))
        );
        assert_eq!(
            one.tree.get("/ws/task.txt"),
            Some(&Entry::File("old".into()))
        );
    }

    #[test]
    fn missing_parents_are_made_where_they_really_are() {
        let before = tree();
        let [one] = &outcomes(&before, "a/b/c.txt", "")[..] else {
            panic!()
        };
        assert_eq!(one.result, written("/ws/a/b/c.txt", 0));
        assert_eq!(one.tree.get("/ws/a/b"), Some(&Entry::Dir));
        // Through a link that stays inside: made in the linked directory, reported by its name.
        let [one] = &outcomes(&before, "inner/new/x.txt", "x")[..] else {
            panic!()
        };
        assert_eq!(one.result, written("/ws/inner/new/x.txt", 1));
        assert_eq!(
            one.tree.get("/ws/nested/new/x.txt"),
            Some(&Entry::File("x".into()))
        );
    }

    #[test]
    fn a_refused_write_changes_nothing() {
        let before = tree();
        for (input, refusal) in [
            ("../x", Refusal::Path(paths::Refusal::Outside)),
            ("escape/x", Refusal::Path(paths::Refusal::ThroughLink)),
            ("nested/blocked", Refusal::IsADirectory),
            ("task.txt/x", Refusal::NotADirectory),
        ] {
            let all = outcomes(&before, input, "x");
            assert_eq!(all.len(), 1, "{input}");
            assert_eq!(all[0].result, Result::Refused(refusal), "{input}");
            assert_eq!(all[0].tree, before, "{input}");
        }
        let all = outcomes(&before, "new/task.txt/x", "x");
        assert_eq!(all.len(), 1);
        let all = outcomes(&before, "made/task.txt", "x");
        assert_eq!(all[0].result, written("/ws/made/task.txt", 1));
        let mut dir_at_target = before.clone();
        dir_at_target.put("/ws/made/x/inner", Entry::Dir);
        let all = outcomes(&dir_at_target, "made/x", "x");
        assert_eq!(all[0].result, Result::Refused(Refusal::IsADirectory));
        assert_eq!(all.len(), 1);
    }
}
