//! One class, graded as N parts on N machines: `grade-class --shard K/N`, joined by `merge-class`.
//!
//! **Which learner goes where.** Every part sees the whole class: the same entries, sorted by name (never
//! in the order the file system lists them), each with an expected cost known before grading (see
//! [`cost`]). [`partition`] deals them out longest first, each to the part with the least cost so far, the
//! lowest index on a tie: the same submissions and N give the same parts on every machine, and the parts'
//! costs differ by at most one entry's cost.
//!
//! **K counts from 0**, as Kubernetes' `JOB_COMPLETION_INDEX`, GitHub's `strategy.job-index` and a Slurm
//! array `--array=0-7` do: the parts of 4 are `0/4`, `1/4`, `2/4` and `3/4`.
//!
//! **What a part records** (`part.json` beside its summary): the tool's version, the chapter, the
//! language, the seed policy, K and N, and the whole class's entries with their costs and parts, so that
//! the merge can tell parts of one class graded one way from anything else, and a learner missing from
//! the part that should hold them.
//!
//! **Seeds.** A class is graded with a secret class seed: `--seed N`, which the recipes draw at run time
//! and hand to every part unseen, or without `--seed` one drawn fresh for this run alone. Each learner's
//! instances are drawn with a seed derived from the class seed, the learner's name and the sha256 of the
//! submission graded ([`learner_seed`]): a learner draws the same instances whichever part or machine
//! grades the same file, a changed file draws new ones (never a seed an earlier report named), and the
//! report names that seed (`pi-course grade DIR --seed S` replays it). A known class seed is an answer key
//! (anyone computes the expected traces with `pi-course grade --seed`), so no file holds it: a part
//! records only its fingerprint ([`fingerprint`]), and the merge refuses parts whose policies differ.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::catalog::Track;
use crate::i18n::Lang;

/// The file a part's results hold beside `summary.json`.
pub const FILE: &str = "part.json";
/// What `format` says in every `part.json`.
pub const FORMAT: &str = "pi-course grade-class part";

/// `--shard K/N`: part K (from 0) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: usize,
    pub n: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// Parses `K/N` (for clap): both whole numbers, N at least 1, K from 0 to N-1.
pub fn parse(text: &str, lang: Lang) -> Result<Shard, String> {
    let how = lang.t("usage-shard-how", &[]);
    let Some((k, n)) = text.split_once('/') else {
        return Err(lang.t("usage-shard-not-k-n", &[("value", &text), ("how", &how)]));
    };
    let number = |what: &str, word: &str| -> Result<usize, String> {
        let args: [(&str, &dyn std::fmt::Display); 4] = [
            ("value", &text),
            ("what", &what),
            ("word", &word),
            ("how", &how),
        ];
        if word.trim().is_empty() {
            return Err(lang.t("usage-shard-empty", &args));
        }
        word.trim()
            .parse()
            .map_err(|_| lang.t("usage-shard-not-a-number", &args))
    };
    let (k, n) = (number("K", k)?, number("N", n)?);
    if n == 0 {
        return Err(lang.t("usage-shard-no-parts", &[("value", &text)]));
    }
    if k >= n {
        let last = n - 1;
        return Err(lang.t(
            "usage-shard-no-such-part",
            &[("value", &text), ("k", &k), ("n", &n), ("last", &last)],
        ));
    }
    Ok(Shard { k, n })
}

/// How a class's instances were drawn, as a part records it: never the class seed itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "lowercase")]
pub enum Seeds {
    /// No `--seed`: a class seed drawn for this run alone, known to no one.
    Fresh,
    /// `--seed N`: the class seed's [`fingerprint`], so that parts graded with one seed can be told from
    /// others without it.
    Class { fingerprint: String },
}

impl fmt::Display for Seeds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seeds::Fresh => write!(f, "fresh seeds (no --seed)"),
            Seeds::Class { fingerprint } => write!(f, "a --seed of fingerprint {fingerprint}"),
        }
    }
}

/// The secret a class is graded with, and the policy its parts record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSeed {
    secret: u64,
    pub policy: Seeds,
}

impl ClassSeed {
    /// `--seed N`, or without it a seed drawn now from the system's randomness.
    pub fn of(seed: Option<u64>) -> std::io::Result<ClassSeed> {
        Ok(match seed {
            Some(seed) => ClassSeed {
                secret: seed,
                policy: Seeds::Class {
                    fingerprint: fingerprint(seed),
                },
            },
            None => {
                let mut bytes = [0u8; 8];
                std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
                ClassSeed {
                    secret: u64::from_le_bytes(bytes),
                    policy: Seeds::Fresh,
                }
            }
        })
    }

    /// The seed to grade learner `name`'s submission of sha256 `sha256` with.
    pub fn for_learner(&self, name: &str, sha256: &str) -> u64 {
        learner_seed(self.secret, name, sha256)
    }
}

/// The seed of learner `name`'s submission whose sha256 (hex, as the summary's rows have it) is `sha256`,
/// in a class of seed `class_seed`: the first 8 bytes (big-endian) of the sha256 of
/// `<class_seed>:<name>:<sha256>`. Depends on nothing but the three, so every part, machine and run draws
/// the same instances for the same file; another learner, or another file, draws others. Knowing a seed
/// tells nothing of the class seed or of any other seed.
pub fn learner_seed(class_seed: u64, name: &str, sha256: &str) -> u64 {
    let digest = Sha256::digest(format!("{class_seed}:{name}:{sha256}").as_bytes());
    u64::from_be_bytes(digest[..8].try_into().expect("a sha256 has 32 bytes"))
}

/// What a part records of the class seed `seed`: the first 8 bytes of the sha256 of
/// `pi-course class seed:<seed>`, in hex. It tells parts of one seed apart from others; it gives the seed
/// away only if the seed can be guessed (a seed drawn at random, as the recipes draw it, cannot).
pub fn fingerprint(seed: u64) -> String {
    let digest = Sha256::digest(format!("pi-course class seed:{seed}").as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The expected cost of grading an entry, from what is known before grading it: whether it can be graded
/// at all, its track, and its file's size.
///
/// In units of about a tenth of a second of one grade on a 2-core machine: an entry with nothing to grade
/// costs 1 (a row and three small files); a Rust file 10 (the build of the learner's crate, the link and
/// the tests); a TypeScript file 40 (`tsc` compiles the whole project for every learner, about four times
/// a Rust build); plus 1 for every 4 KiB of the file, which the compiler reads and checks. Whether a file
/// compiles is not known before it is built, so a compile error counts as a full run.
pub fn cost(gradable: Option<(Track, u64)>) -> u64 {
    match gradable {
        None => 1,
        Some((track, bytes)) => {
            let base = match track {
                Track::Rust => 10,
                Track::TypeScript => 40,
            };
            base + bytes / 4096
        }
    }
}

/// The part (from 0) of every entry, in the order given: longest first (by cost, then by name), each to
/// the part with the least cost so far, the lowest index on a tie. `entries` are (name, cost), names
/// unique. The parts' costs then differ by at most the largest entry's cost.
pub fn partition(entries: &[(String, u64)], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| {
        entries[b]
            .1
            .cmp(&entries[a].1)
            .then_with(|| entries[a].0.cmp(&entries[b].0))
    });
    let mut loads = vec![0u64; n.max(1)];
    let mut parts = vec![0; entries.len()];
    for i in order {
        let (lightest, _) = loads
            .iter()
            .enumerate()
            .min_by_key(|&(k, load)| (*load, k))
            .expect("at least one part");
        parts[i] = lightest;
        loads[lightest] += entries[i].1;
    }
    parts
}

/// One entry of the class, as every part records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassEntry {
    pub name: String,
    /// The graded file's sha256 (empty: nothing to grade), as in the summary's rows.
    pub sha256: String,
    pub cost: u64,
    pub part: usize,
}

/// `part.json`: what a part was, so that parts can be checked against each other before they merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFile {
    pub format: String,
    pub version: u32,
    pub pi_course: String,
    pub chapter: String,
    pub lang: String,
    pub seeds: Seeds,
    pub part: usize,
    pub parts: usize,
    /// The whole class, sorted by name.
    pub class: Vec<ClassEntry>,
}

impl PartFile {
    /// The part.json an earlier run left in `dir`, if any and readable.
    pub fn load(dir: &Path) -> Option<PartFile> {
        let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
        let part: PartFile = serde_json::from_str(&text).ok()?;
        (part.format == FORMAT).then_some(part)
    }

    pub fn shard(&self) -> Shard {
        Shard {
            k: self.part,
            n: self.parts,
        }
    }

    /// The learners this part holds.
    pub fn own(&self) -> impl Iterator<Item = &ClassEntry> {
        self.class.iter().filter(move |e| e.part == self.part)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("part.json serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_of_n_parses_from_zero_and_says_what_is_wrong() {
        let parse = |text| parse(text, Lang::En);
        assert_eq!(parse("0/4"), Ok(Shard { k: 0, n: 4 }));
        assert_eq!(parse("3/4"), Ok(Shard { k: 3, n: 4 }));
        assert_eq!(parse("0/1"), Ok(Shard { k: 0, n: 1 }));
        assert!(parse("4/4").unwrap_err().contains("0/4 to 3/4"));
        assert!(parse("0/0").unwrap_err().contains("at least 1"));
        assert!(parse("/8").unwrap_err().contains("K is empty"));
        assert!(parse("three/4").unwrap_err().contains("not a whole number"));
        assert!(parse("-1/4").unwrap_err().contains("not a whole number"));
        assert!(parse("2").unwrap_err().contains("not K/N"));
        // The same in Chinese, with the names as they are typed.
        let zh = super::parse("4/4", Lang::Zh).unwrap_err();
        assert!(
            zh.contains("0/4 到 3/4") && zh.contains("--array=0-3"),
            "{zh}"
        );
        let zh = super::parse("/8", Lang::Zh).unwrap_err();
        assert!(zh.contains("K 是空的"), "{zh}");
    }

    #[test]
    fn parts_are_balanced_deterministic_and_cover_every_entry_once() {
        let entries: Vec<(String, u64)> = (0..37)
            .map(|i| (format!("learner-{i:02}"), [1, 10, 12, 40, 43][i % 5]))
            .collect();
        for n in 1..=8 {
            let parts = partition(&entries, n);
            assert_eq!(parts.len(), entries.len());
            let mut loads = vec![0; n];
            for (i, &k) in parts.iter().enumerate() {
                loads[k] += entries[i].1;
            }
            let spread = loads.iter().max().unwrap() - loads.iter().min().unwrap();
            assert!(spread <= 43, "{n} parts: {loads:?}");
            // Another listing order gives the same part to each name.
            let mut reversed = entries.clone();
            reversed.reverse();
            let again = partition(&reversed, n);
            for (i, (name, _)) in reversed.iter().enumerate() {
                let j = entries.iter().position(|(m, _)| m == name).unwrap();
                assert_eq!(again[i], parts[j], "{name}");
            }
        }
    }

    #[test]
    fn a_learner_seed_depends_on_the_class_seed_the_name_and_the_submission() {
        let (a, b) = ("aa".repeat(32), "bb".repeat(32));
        assert_eq!(learner_seed(7, "ann", &a), learner_seed(7, "ann", &a));
        assert_ne!(learner_seed(7, "ann", &a), learner_seed(7, "bob", &a));
        assert_ne!(learner_seed(7, "ann", &a), learner_seed(8, "ann", &a));
        assert_ne!(learner_seed(7, "ann", &a), learner_seed(7, "ann", &b));
        let given = ClassSeed::of(Some(7)).unwrap();
        assert_eq!(given.for_learner("ann", &a), learner_seed(7, "ann", &a));
        assert_eq!(
            given.policy,
            Seeds::Class {
                fingerprint: fingerprint(7)
            }
        );
        // The record names no seed.
        let recorded = serde_json::to_string(&given.policy).unwrap();
        assert!(
            !recorded.contains(":7") && !recorded.contains("\"seed\""),
            "{recorded}"
        );
        assert_ne!(fingerprint(7), fingerprint(8));
        // Without --seed, a class seed of its own for every run.
        let (x, y) = (ClassSeed::of(None).unwrap(), ClassSeed::of(None).unwrap());
        assert_eq!((&x.policy, &y.policy), (&Seeds::Fresh, &Seeds::Fresh));
        assert_ne!(x.for_learner("ann", &a), y.for_learner("ann", &a));
    }
}
