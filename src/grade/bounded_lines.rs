//! Lines of JSON read from a test process with every string in them cut to a bound as it arrives, so
//! that a record carrying a panic message of many megabytes never takes more than the bound in the
//! grader's memory, and is still a record (its closing quote and the fields after it are kept).
//!
//! A string is cut only where the JSON stays valid: between characters, never inside an escape. A line
//! that is too long outside its strings is not a record; it is read to its end and given as empty.

use std::collections::VecDeque;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads lines from `reader`, keeping at most `max` bytes of each JSON string in them.
pub struct BoundedLines<R> {
    reader: R,
    scanner: Scanner,
    ready: VecDeque<String>,
    done: bool,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    pub fn new(reader: R, max: usize) -> BoundedLines<R> {
        BoundedLines {
            reader,
            scanner: Scanner::new(max),
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// The next line (without its `\n`); `None` at the end of the stream.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        let mut buf = [0u8; 8192];
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Ok(Some(line));
            }
            if self.done {
                return Ok(None);
            }
            let n = self.reader.read(&mut buf).await?;
            if n == 0 {
                self.done = true;
                self.ready.extend(self.scanner.finish());
            } else {
                self.scanner.push_all(&buf[..n], &mut self.ready);
            }
        }
    }
}

/// Where the scanner is inside a JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// Just after a backslash.
    Started,
    /// Inside `\uXXXX`: this many hex digits to come.
    Hex(u8),
}

/// The byte-by-byte state behind [`BoundedLines`].
struct Scanner {
    max: usize,
    line: Vec<u8>,
    in_string: bool,
    escape: Escape,
    /// Bytes of the current string kept so far.
    kept: usize,
    /// The current string is past `max`: its bytes are skipped until its closing quote.
    skipping: bool,
    /// The line grew too long outside its strings: it is no record.
    overflow: bool,
}

impl Scanner {
    fn new(max: usize) -> Scanner {
        Scanner {
            max,
            line: Vec::new(),
            in_string: false,
            escape: Escape::None,
            kept: 0,
            skipping: false,
            overflow: false,
        }
    }

    /// The most a line keeps in all: a few strings at the bound, and the punctuation between them.
    fn line_max(&self) -> usize {
        4 * self.max + 4096
    }

    /// Scans `bytes`, adding each line they end to `lines`. The skipped part of a long string is passed
    /// over in one search for the next byte that matters.
    fn push_all(&mut self, mut bytes: &[u8], lines: &mut VecDeque<String>) {
        while !bytes.is_empty() {
            if self.in_string && self.skipping && self.escape == Escape::None {
                match bytes
                    .iter()
                    .position(|&b| matches!(b, b'"' | b'\\' | b'\n'))
                {
                    Some(i) => bytes = &bytes[i..],
                    None => return,
                }
            }
            lines.extend(self.push(bytes[0]));
            bytes = &bytes[1..];
        }
    }

    fn push(&mut self, byte: u8) -> Option<String> {
        if byte == b'\n' {
            return Some(self.end_line());
        }
        if !self.in_string {
            if byte == b'"' {
                self.in_string = true;
                self.kept = 0;
                self.skipping = false;
            }
            self.keep(byte);
            return None;
        }
        // Inside a string: may the string be cut before this byte?
        let boundary = self.escape == Escape::None && (byte & 0xC0) != 0x80 && byte != b'"';
        if !self.skipping && boundary && self.kept >= self.max {
            self.skipping = true;
        }
        let closes = self.escape == Escape::None && byte == b'"';
        self.escape = match (self.escape, byte) {
            (Escape::None, b'\\') => Escape::Started,
            (Escape::Started, b'u') => Escape::Hex(4),
            (Escape::Hex(n), _) if n > 1 => Escape::Hex(n - 1),
            _ => Escape::None,
        };
        if closes {
            self.in_string = false;
            self.keep(byte);
        } else if !self.skipping {
            self.kept += 1;
            self.keep(byte);
        }
        None
    }

    fn keep(&mut self, byte: u8) {
        if self.line.len() >= self.line_max() {
            self.overflow = true;
        }
        if !self.overflow {
            self.line.push(byte);
        }
    }

    fn end_line(&mut self) -> String {
        let line = std::mem::take(&mut self.line);
        let overflow = self.overflow;
        *self = Scanner::new(self.max);
        if overflow {
            String::new()
        } else {
            String::from_utf8_lossy(&line).into_owned()
        }
    }

    /// What is left at the end of the stream: a last line without `\n`, if any.
    fn finish(&mut self) -> Option<String> {
        (!self.line.is_empty()).then(|| self.end_line())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut reader = BoundedLines::new(input, max);
            let mut out = Vec::new();
            while let Some(line) = reader.next_line().await.unwrap() {
                out.push(line);
            }
            out
        })
    }

    #[test]
    fn short_lines_pass_unchanged() {
        let text = "{\"a\":\"x\\\"y\",\"b\":null}\nlast";
        assert_eq!(
            lines(text.as_bytes(), 64),
            ["{\"a\":\"x\\\"y\",\"b\":null}", "last"]
        );
    }

    #[test]
    fn a_long_string_is_cut_and_the_record_stays_valid_json() {
        for message in [
            "m".repeat(10_000),
            "红".repeat(5_000),
            "\\u0001\\\"".repeat(2_000),
        ] {
            let line =
                format!("{{\"event\":\"failed\",\"message\":\"{message}\",\"test\":\"t\"}}\n");
            let got = lines(line.as_bytes(), 100);
            assert_eq!(got.len(), 1);
            let value: serde_json::Value =
                serde_json::from_str(&got[0]).unwrap_or_else(|e| panic!("{e}: {}", got[0]));
            assert_eq!(value["test"], "t");
            assert_eq!(value["event"], "failed");
            let kept = value["message"].as_str().unwrap();
            // Cut between characters or escapes: a few bytes past the bound at most.
            assert!(!kept.is_empty() && kept.len() <= 100 + 6, "{kept}");
        }
    }

    #[test]
    fn a_line_too_long_outside_strings_is_no_record() {
        let mut input = vec![b'['; 10_000];
        input.extend_from_slice(b"\n{\"ok\":1}\n");
        assert_eq!(lines(&input, 100), ["", "{\"ok\":1}"]);
    }
}
