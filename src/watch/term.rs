//! The terminal under `watch`: single-key input without echo, the window size, and getting the terminal
//! back exactly as it was on every way out (a normal quit, a signal, a panic).
//!
//! Only canonical mode and echo are turned off. Signal generation (`ISIG`) and output processing stay on,
//! so Ctrl-C still raises SIGINT (handled by the watch loop, which cancels the grade in flight) and `\n`
//! still starts a new line.
//!
//! The terminal calls go through `rustix::termios`: no `unsafe` here.

use std::io::{IsTerminal, Read, Write};
use std::sync::Mutex;

use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Termios};
use tokio::sync::mpsc;

/// A key the watch loop acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Hint,
    Explain,
    Regrade,
    Quit,
}

/// The terminal settings to go back to, once raw mode is on.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Hides the cursor while the screen is ours; [`restore`] shows it again.
pub const HIDE_CURSOR: &str = "\x1b[?25l";
const SHOW_CURSOR: &str = "\x1b[?25h";

fn saved() -> std::sync::MutexGuard<'static, Option<Termios>> {
    SAVED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Single-key input for as long as this value lives.
pub struct RawMode {
    cursor_hidden: bool,
}

impl RawMode {
    /// Turns off line buffering and echo on stdin, if stdin is a terminal. `hide_cursor` also hides the
    /// cursor on stdout until [`restore`]. Installs a panic hook that restores the terminal before the
    /// panic message is printed.
    pub fn enter(hide_cursor: bool) -> Option<RawMode> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        let original = termios::tcgetattr(std::io::stdin()).ok()?;
        *saved() = Some(original.clone());
        if !apply(&original) {
            *saved() = None;
            return None;
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        if hide_cursor {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(HIDE_CURSOR.as_bytes());
            let _ = out.flush();
        }
        Some(RawMode {
            cursor_hidden: hide_cursor,
        })
    }

    /// Applies single-key input again, e.g. after the process was stopped (Ctrl-Z) and continued: the
    /// shell puts its own settings back while it has the terminal.
    pub fn reapply(&self) {
        if let Some(original) = saved().as_ref() {
            apply(original);
        }
        if self.cursor_hidden {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(HIDE_CURSOR.as_bytes());
            let _ = out.flush();
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// `original` with canonical mode and echo off, applied to stdin.
fn apply(original: &Termios) -> bool {
    let mut raw = original.clone();
    raw.local_modes &= !(LocalModes::ICANON | LocalModes::ECHO);
    raw.special_codes[SpecialCodeIndex::VMIN] = 1;
    raw.special_codes[SpecialCodeIndex::VTIME] = 0;
    termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &raw).is_ok()
}

/// Puts the terminal back as it was before [`RawMode::enter`] and shows the cursor. Does nothing when raw
/// mode is not on, so every exit path may call it.
pub fn restore() {
    let Some(original) = saved().take() else {
        return;
    };
    let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &original);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(SHOW_CURSOR.as_bytes());
    let _ = out.flush();
}

/// Reads keys from stdin on a thread of its own. The channel closes when stdin ends. The thread is never
/// joined: it sits in `read` until the process exits.
pub fn keys() -> mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("keys".into())
        .spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 64];
            loop {
                let n = match stdin.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                };
                for &byte in &buf[..n] {
                    let key = match byte {
                        b'h' | b'H' => Key::Hint,
                        b'e' | b'E' => Key::Explain,
                        b'r' | b'R' => Key::Regrade,
                        b'q' | b'Q' => Key::Quit,
                        // An escape sequence (an arrow key, a function key): ignore the rest of it.
                        0x1b => break,
                        _ => continue,
                    };
                    if tx.send(key).is_err() {
                        return;
                    }
                }
            }
        })
        .expect("start the key reader");
    rx
}

/// The terminal's size as (columns, rows), or 80×24 when stdout is not a terminal.
pub fn size() -> (usize, usize) {
    match termios::tcgetwinsize(std::io::stdout()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col as usize, ws.ws_row as usize),
        _ => (80, 24),
    }
}
