//! The class report in a real browser: headless Chromium (Debian's `chromium`, which `scripts/test.sh`
//! installs) opens `index.html` from disk, driven over the DevTools protocol on a pipe. The page's Lab rates and
//! rows must match `summary.json`, a learner's link must open their page, its script must run (sorting
//! from the address), no script a learner smuggled in may run, and nothing may be fetched but the
//! files themselves: every request the browser makes is recorded, every host name resolves to nowhere,
//! and the page's Content-Security-Policy allows nothing else.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::*;
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
/// How long any one step in the browser may take.
const STEP: Duration = Duration::from_secs(60);

/// A headless Chromium, driven over `--remote-debugging-pipe` (commands on its descriptor 3, answers
/// and events on its descriptor 4, each message ended by a NUL byte).
struct Browser {
    child: Child,
    commands: std::io::PipeWriter,
    messages: mpsc::Receiver<Value>,
    next_id: u64,
    session: String,
    /// Every event seen so far, in order.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Browser {
        assert!(
            Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: run the tests with scripts/test.sh, which installs Debian's chromium \
             (`apt-get install -y chromium`)"
        );
        let profile = tempfile::tempdir().unwrap();
        let (their_commands, commands) = std::io::pipe().unwrap();
        let (answers, their_answers) = std::io::pipe().unwrap();
        let mut cmd = Command::new(CHROMIUM);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            "--disable-default-apps",
            "--remote-debugging-pipe",
            // Every host name resolves to nowhere: the page must render without the network.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        use std::os::fd::AsRawFd;
        let (read_fd, write_fd) = (their_commands.as_raw_fd(), their_answers.as_raw_fd());
        // SAFETY: only fcntl and dup2, which are async-signal-safe, run between fork and exec. The ends
        // are first moved above 4, so that putting them at 3 and 4 never overwrites one with the other and
        // always makes a copy that stays open across exec.
        unsafe {
            cmd.pre_exec(move || {
                let read = libc::fcntl(read_fd, libc::F_DUPFD_CLOEXEC, 10);
                let write = libc::fcntl(write_fd, libc::F_DUPFD_CLOEXEC, 10);
                if read < 0 || write < 0 || libc::dup2(read, 3) < 0 || libc::dup2(write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        drop(their_commands);
        drop(their_answers);
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut answers = answers;
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = match answers.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buffer.extend_from_slice(&chunk[..n]);
                while let Some(end) = buffer.iter().position(|&b| b == 0) {
                    let message: Vec<u8> = buffer.drain(..=end).take(end).collect();
                    if let Ok(value) = serde_json::from_slice(&message) {
                        if tx.send(value).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            commands,
            messages,
            next_id: 0,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page.enable", "Network.enable", "Runtime.enable"] {
            browser.call(domain, json!({}));
        }
        browser
    }

    /// Sends a command (to the page once attached) and returns its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.commands.write_all(&bytes).unwrap();
        let deadline = Instant::now() + STEP;
        loop {
            let message = self.receive(deadline, method);
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    panic!("{method}: {error}");
                }
                return message["result"].clone();
            }
            self.events.push(message);
        }
    }

    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        self.messages
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no answer from chromium for {waiting_for}: {e}"))
    }

    /// Waits for the event `method` that arrives after the first `seen` events.
    fn wait_for(&mut self, method: &str, seen: usize) {
        let deadline = Instant::now() + STEP;
        if self.events[seen..].iter().any(|e| e["method"] == method) {
            return;
        }
        loop {
            let message = self.receive(deadline, method);
            let found = message["method"] == method;
            self.events.push(message);
            if found {
                return;
            }
        }
    }

    /// Opens `url` and waits until it has loaded (its scripts have run).
    fn open(&mut self, url: &str) {
        let seen = self.events.len();
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for("Page.loadEventFired", seen);
    }

    /// Evaluates `expression` in the page and returns its value.
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Clicks the element `selector` and waits for the page it opens to load.
    fn click(&mut self, selector: &str) {
        let seen = self.events.len();
        self.eval(&format!(
            "document.querySelector({}).click()",
            serde_json::to_string(selector).unwrap()
        ));
        self.wait_for("Page.loadEventFired", seen);
    }

    /// Every URL the browser requested so far.
    fn requested(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| e["params"]["request"]["url"].as_str().unwrap().to_string())
            .collect()
    }

    /// Did the page try to open a dialog (an injected `alert`)?
    fn dialogs(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e["method"] == "Page.javascriptDialogOpening")
            .count()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn file_url(path: &Path) -> String {
    let path = fs::canonicalize(path).unwrap();
    let mut url = String::from("file://");
    for byte in path.to_str().unwrap().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                url.push(byte as char)
            }
            _ => url.push_str(&format!("%{byte:02X}")),
        }
    }
    url
}

/// A small class: a pass, an untouched skeleton, a buggy loop, a file that does not compile with
/// markup and a script in its error, and a learner whose very name is markup.
fn class(root: &Path) -> PathBuf {
    let subs = root.join("submissions");
    fs::create_dir(&subs).unwrap();
    fs::write(subs.join("ann.rs"), solution()).unwrap();
    fs::write(subs.join("ben.rs"), skeleton()).unwrap();
    fs::write(subs.join("cy.rs"), mutant("tool-definitions-not-sent")).unwrap();
    let injected = r#"const X: u32 = "</pre><script>document.title='pwned';alert(1)</script><img src=x onerror=alert(2)>";"#;
    fs::write(subs.join("dee.rs"), format!("{}\n{injected}\n", solution())).unwrap();
    fs::write(subs.join("<img src=x onerror=alert(3)>.rs"), solution()).unwrap();
    subs
}

/// The page's Lab bars and table rows, as the browser shows them.
const READ_INDEX: &str = r##"(() => {
  const labs = [...document.querySelectorAll("#labs g.lab")].map(g => ({
    lab: g.dataset.lab, rate: Number(g.dataset.rate), passed: Number(g.dataset.passed),
    shown: g.querySelector("text.value").textContent }));
  const rows = [...document.querySelectorAll("#learners tbody tr")].map(tr => {
    const cells = {};
    for (const td of tr.cells) { cells[td.dataset.key] = { value: td.dataset.value, text: td.textContent }; }
    return { name: tr.dataset.learner, status: tr.dataset.status,
             href: tr.querySelector("a").getAttribute("href"), cells };
  });
  const external = [...document.querySelectorAll("[src],[href]")]
    .map(e => e.getAttribute("src") || e.getAttribute("href"))
    .filter(u => /^[a-z][a-z0-9+.-]*:/i.test(u) || u.startsWith("//"));
  const sorted = [...document.querySelectorAll("#learners th")]
    .filter(th => th.getAttribute("aria-sort")).map(th => th.dataset.key + ":" + th.getAttribute("aria-sort"));
  return { labs, rows, external, sorted, title: document.title, lang: document.documentElement.lang,
           heading: document.querySelector("h1").textContent,
           csp: document.querySelector('meta[http-equiv="Content-Security-Policy"]').content,
           failures: document.querySelectorAll("#failures li.failure").length,
           bins: [...document.querySelectorAll("#histogram g.bin")].map(g => Number(g.dataset.count)) };
})()"##;

fn check_index(page: &Value, summary: &Value) {
    let rows = summary["learners"].as_array().unwrap();
    let n = rows.len() as f64;
    // Per Lab: the share of the class whose group passed, as summary.json says.
    let labs = page["labs"].as_array().unwrap();
    let groups = summary["groups"].as_array().unwrap();
    assert_eq!(labs.len(), groups.len(), "{page:#}");
    for (bar, group) in labs.iter().zip(groups) {
        let slug = group["slug"].as_str().unwrap();
        let passed = rows
            .iter()
            .filter(|r| {
                r["groups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["slug"] == slug && c["status"] == "pass")
            })
            .count();
        assert_eq!(bar["lab"], group["lab"]);
        assert_eq!(bar["passed"].as_u64(), Some(passed as u64), "{slug}");
        assert!((bar["rate"].as_f64().unwrap() - passed as f64 / n).abs() < 1e-9);
        assert_eq!(
            bar["shown"].as_str().unwrap(),
            format!("{:.0}%", passed as f64 / n * 100.0)
        );
    }
    // The histogram counts every learner once.
    let binned: u64 = page["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(binned, rows.len() as u64);
    // One row per learner, with their status, points and a link to their page.
    let shown = page["rows"].as_array().unwrap();
    assert_eq!(shown.len(), rows.len(), "{page:#}");
    let by_name: BTreeMap<&str, &Value> = shown
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r))
        .collect();
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let tr = by_name
            .get(name)
            .unwrap_or_else(|| panic!("no row for {name}: {page:#}"));
        assert_eq!(tr["status"], row["status"], "{name}");
        assert_eq!(tr["cells"]["name"]["text"], row["name"], "{name}");
        assert_eq!(
            tr["cells"]["total"]["value"]
                .as_str()
                .unwrap()
                .parse::<f64>()
                .unwrap(),
            row["total"].as_f64().unwrap(),
            "{name}"
        );
        for cell in row["groups"].as_array().unwrap() {
            let slug = cell["slug"].as_str().unwrap();
            assert_eq!(
                tr["cells"][slug]["value"]
                    .as_str()
                    .unwrap()
                    .parse::<f64>()
                    .unwrap(),
                cell["score"].as_f64().unwrap(),
                "{name} {slug}"
            );
        }
    }
    assert_eq!(page["external"], json!([]), "a reference to elsewhere");
    let csp = page["csp"].as_str().unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
}

#[test]
fn the_class_report_renders_offline_in_a_real_browser_and_matches_the_summary() {
    let dir = tempfile::Builder::new()
        .prefix("class-report-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let subs = class(dir.path());
    let results = dir.path().join("results");
    let out = grade_class(dir.path(), &subs, &results, &["--jobs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let summary = class_summary(&results);
    assert_eq!(
        learner_row(&summary, "dee")["build"],
        "error",
        "the injection is in a compile error"
    );

    let mut browser = Browser::start();
    // Sorted by total, highest first, by the page's own script, from the address.
    let index = file_url(&results.join("index.html"));
    browser.open(&format!("{index}#sort=-total"));
    let page = browser.eval(READ_INDEX);
    check_index(&page, &summary);
    assert_eq!(page["lang"], "zh");
    assert!(
        page["heading"].as_str().unwrap().contains("班级评分报告"),
        "{page:#}"
    );
    assert_eq!(page["sorted"], json!(["total:descending"]), "{page:#}");
    let totals: Vec<f64> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["cells"]["total"]["value"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        totals.windows(2).all(|w| w[0] >= w[1]),
        "not sorted: {totals:?}"
    );
    assert!(page["failures"].as_u64().unwrap() > 0, "{page:#}");
    // The learner whose name is markup is shown as text, and nothing of theirs ran.
    assert!(
        page["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["cells"]["name"]["text"] == "<img src=x onerror=alert(3)>"),
        "{page:#}"
    );

    // A learner's link opens their page: the compile error is shown, as text.
    browser.click(r#"tr[data-learner="dee"] a"#);
    let learner = browser.eval(
        r##"({ url: location.href, name: document.getElementById("learner").textContent,
              status: document.getElementById("status").dataset.status,
              score: document.getElementById("score").textContent,
              build: (document.querySelector("#build pre") || {}).textContent || "",
              title: document.title, scripts: document.scripts.length })"##,
    );
    assert!(
        learner["url"]
            .as_str()
            .unwrap()
            .ends_with("/learners/dee.html"),
        "{learner:#}"
    );
    assert_eq!(learner["name"], "dee");
    assert_eq!(learner["status"], "error");
    assert_eq!(learner["score"], "0");
    let build = learner["build"].as_str().unwrap();
    assert!(build.contains("<script>"), "the error as text: {build}");
    assert_ne!(learner["title"], "pwned");
    assert_eq!(
        learner["scripts"], 1,
        "only the page's own script: {learner:#}"
    );

    // Every other learner's link opens their own page, with their verdict.
    for row in summary["learners"].as_array().unwrap() {
        let name = row["name"].as_str().unwrap();
        browser.open(&index);
        browser.click(&format!(
            "tr[data-learner={}] a",
            serde_json::to_string(name).unwrap()
        ));
        let page = browser.eval(
            r##"({ name: document.getElementById("learner").textContent,
                  status: document.getElementById("status").dataset.status,
                  groups: document.querySelectorAll("#groups tbody tr").length })"##,
        );
        assert_eq!(page["name"], row["name"], "{page:#}");
        assert_eq!(page["status"], row["status"], "{name}");
        assert_eq!(
            page["groups"].as_u64(),
            Some(summary["groups"].as_array().unwrap().len() as u64)
        );
    }
    assert_eq!(browser.dialogs(), 0, "an injected script ran");

    // Nothing was fetched but the pages themselves, from disk.
    let requested = browser.requested();
    assert!(
        requested.iter().any(|u| u.ends_with("/index.html")),
        "{requested:#?}"
    );
    for url in &requested {
        assert!(url.starts_with("file://"), "fetched {url}");
    }

    // In English, like everything else.
    let english = grade_class(
        dir.path(),
        &subs,
        &results,
        &["--jobs", "2", "--lang", "en"],
    );
    assert_eq!(english.status.code(), Some(0), "{}", describe(&english));
    browser.open(&index);
    let page = browser.eval(READ_INDEX);
    check_index(&page, &class_summary(&results));
    assert_eq!(page["lang"], "en");
    assert!(
        page["heading"].as_str().unwrap().contains("class report"),
        "{page:#}"
    );
    for url in browser.requested() {
        assert!(url.starts_with("file://"), "fetched {url}");
    }
}
