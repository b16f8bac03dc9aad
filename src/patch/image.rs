//! A file's content and the text hunks of one file patch applied to it, the way `git apply`
//! places them: each hunk is looked for at the line its header names, then one line further
//! away at a time, alternately after and before; a hunk that starts at line 0 or 1 must match
//! at the start of the file, and a hunk with no context after its last change must match at
//! the end; lines an earlier hunk wrote are never matched again; and there is no fuzz (every
//! context line must match byte for byte, whitespace and carriage returns included).

use super::diff::Fragment;

/// A file as lines: the bytes and each line's length (its newline included) and whether a
/// hunk already wrote it.
#[derive(Debug, Clone, Default)]
pub struct Image {
    bytes: Vec<u8>,
    lines: Vec<Line>,
}

#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    patched: bool,
}

/// git's line hash: every byte but whitespace, times three, in 24 bits.
fn hash(line: &[u8]) -> u32 {
    line.iter()
        .filter(|&&c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .fold(0u32, |hash, &c| {
            hash.wrapping_mul(3).wrapping_add(u32::from(c))
        })
        & 0x00ff_ffff
}

impl Image {
    /// The file `bytes`, split after every newline.
    pub fn new(bytes: Vec<u8>) -> Image {
        let mut lines = Vec::with_capacity(bytes.len() / 32);
        if !bytes.is_empty() {
            lines.push(Line {
                start: 0,
                patched: false,
            });
        }
        lines.extend(
            memchr::memchr_iter(b'\n', &bytes)
                .map(|end| end + 1)
                .filter(|&start| start < bytes.len())
                .map(|start| Line {
                    start,
                    patched: false,
                }),
        );
        Image { bytes, lines }
    }

    /// The bytes of line `index`.
    fn line(&self, index: usize) -> &[u8] {
        let start = self.lines[index].start;
        let end = self
            .lines
            .get(index + 1)
            .map_or(self.bytes.len(), |next| next.start);
        &self.bytes[start..end]
    }

    /// The content.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Applies `fragment`; `false` when it matches nowhere git would accept it.
    pub fn apply(&mut self, fragment: &Fragment) -> bool {
        let Some((before, after)) = sides(fragment) else {
            return false;
        };
        let match_start = fragment.old_pos <= 1;
        let match_end = fragment.trailing == 0;
        let position = fragment.new_pos.saturating_sub(1);
        match self.find(&before, position, match_start, match_end) {
            Some(at) => {
                self.replace(at, before.len(), &after);
                true
            }
            None => false,
        }
    }

    /// Where the lines `before` match, searching out from `line` as git does.
    fn find(
        &self,
        before: &[&[u8]],
        line: usize,
        match_start: bool,
        match_end: bool,
    ) -> Option<usize> {
        let count = self.lines.len();
        let start = if match_start {
            0
        } else if match_end {
            // Negative means "past the end" for git, which then starts at the end.
            count.checked_sub(before.len()).unwrap_or(count)
        } else {
            line
        }
        .min(count);
        let (mut backwards, mut forwards, mut current) = (start, start, start);
        let mut step: usize = 0;
        loop {
            if self.matches(before, current, match_start, match_end) {
                return Some(current);
            }
            loop {
                if backwards == 0 && forwards == count {
                    return None;
                }
                if step % 2 == 1 {
                    if backwards == 0 {
                        step += 1;
                        continue;
                    }
                    backwards -= 1;
                    current = backwards;
                } else {
                    if forwards == count {
                        step += 1;
                        continue;
                    }
                    forwards += 1;
                    current = forwards;
                }
                break;
            }
            step += 1;
        }
    }

    /// Whether `before` matches at line `at`: no line there written by an earlier hunk, the
    /// line hashes equal, and the bytes from there on equal `before`'s, as git compares them.
    fn matches(&self, before: &[&[u8]], at: usize, match_start: bool, match_end: bool) -> bool {
        let count = self.lines.len();
        if before.len() + at > count || (match_end && before.len() + at != count) {
            return false;
        }
        if match_start && at != 0 {
            return false;
        }
        let hashes_agree = before.iter().enumerate().all(|(offset, wanted)| {
            !self.lines[at + offset].patched && hash(self.line(at + offset)) == hash(wanted)
        });
        if !hashes_agree {
            return false;
        }
        let start = self
            .lines
            .get(at)
            .map_or(self.bytes.len(), |line| line.start);
        let length: usize = before.iter().map(|line| line.len()).sum();
        let fits = if match_end {
            start + length == self.bytes.len()
        } else {
            start + length <= self.bytes.len()
        };
        if !fits {
            return false;
        }
        let mut position = start;
        before.iter().all(|wanted| {
            let same = self.bytes[position..position + wanted.len()] == **wanted;
            position += wanted.len();
            same
        })
    }

    /// Lines `at..at + removed` replaced by `after`, which are marked as written.
    fn replace(&mut self, at: usize, removed: usize, after: &[&[u8]]) {
        let start = self
            .lines
            .get(at)
            .map_or(self.bytes.len(), |line| line.start);
        let end = if at + removed < self.lines.len() {
            self.lines[at + removed].start
        } else {
            self.bytes.len()
        };
        let inserted: Vec<u8> = after.concat();
        let mut bytes = Vec::with_capacity(self.bytes.len() - (end - start) + inserted.len());
        bytes.extend_from_slice(&self.bytes[..start]);
        bytes.extend_from_slice(&inserted);
        bytes.extend_from_slice(&self.bytes[end..]);
        let shift = inserted.len() as isize - (end - start) as isize;
        let mut lines = Vec::with_capacity(self.lines.len() - removed + after.len());
        lines.extend_from_slice(&self.lines[..at]);
        let mut position = start;
        for line in after {
            lines.push(Line {
                start: position,
                patched: true,
            });
            position += line.len();
        }
        lines.extend(self.lines[at + removed..].iter().map(|line| Line {
            start: (line.start as isize + shift) as usize,
            ..*line
        }));
        self.bytes = bytes;
        self.lines = lines;
    }
}

/// The lines a hunk expects, and the lines it leaves.
type Sides<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>);

/// The lines a hunk expects (context and removed) and the lines it leaves (context and added),
/// each without the newline a `\ No newline at end of file` marker takes away; `None` for a
/// line that starts with anything else.
fn sides(fragment: &Fragment) -> Option<Sides<'_>> {
    let text = fragment.text.as_slice();
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let length = rest
            .iter()
            .position(|&c| c == b'\n')
            .map_or(rest.len(), |end| end + 1);
        let mut content_end = length;
        if rest.get(length) == Some(&b'\\') {
            content_end -= 1;
        }
        let mut first = rest[0];
        if fragment.reversed {
            first = match first {
                b'-' => b'+',
                b'+' => b'-',
                other => other,
            };
        }
        match first {
            b'\n' => {
                if content_end == length {
                    before.push(&b"\n"[..]);
                    after.push(&b"\n"[..]);
                }
            }
            b' ' => {
                let line = &rest[1..content_end];
                before.push(line);
                after.push(line);
            }
            b'-' => before.push(&rest[1..content_end]),
            b'+' => after.push(&rest[1..content_end]),
            b'@' | b'\\' => {}
            _ => return None,
        }
        at += length;
    }
    Some((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::diff;

    fn apply(file: &str, patch: &str) -> Option<String> {
        let patches = diff::parse(patch.as_bytes()).expect("parses");
        let mut image = Image::new(file.as_bytes().to_vec());
        for fragment in &patches[0].fragments {
            if !image.apply(fragment) {
                return None;
            }
        }
        Some(String::from_utf8(image.into_bytes()).unwrap())
    }

    const HEADER: &str = "diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n";

    #[test]
    fn finds_a_hunk_that_moved() {
        let patch = format!("{HEADER}@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n");
        assert_eq!(
            apply("x\ny\na\nb\nc\nd\ne\n", &patch).as_deref(),
            Some("x\ny\na\nb\nC\nd\ne\n")
        );
    }

    #[test]
    fn a_hunk_without_trailing_context_must_end_the_file() {
        let patch = format!("{HEADER}@@ -2,2 +2,1 @@\n b\n-c\n");
        assert_eq!(apply("a\nb\nc\n", &patch).as_deref(), Some("a\nb\n"));
        assert_eq!(apply("a\nb\nc\nd\n", &patch), None);
    }

    #[test]
    fn a_hunk_at_line_one_must_start_the_file() {
        let patch = format!("{HEADER}@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n");
        assert_eq!(apply("z\na\nb\nc\n", &patch), None);
    }

    #[test]
    fn reads_no_newline_markers() {
        let patch = format!("{HEADER}@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n");
        assert_eq!(apply("a", &patch).as_deref(), Some("b\n"));
        assert_eq!(apply("a\n", &patch), None);
    }
}
