//! The mbox reader: the bytes of a `git format-patch` file in, one `Patch` per message out,
//! each exactly what `git am --keep-cr` would commit: the mbox is split where `git mailsplit`
//! splits it, each message is read by `mailinfo` (git's rules), and the author and message
//! are made the way `git am` makes them (`git stripspace` on subject and body, the identity's
//! stray characters trimmed, the date through git's own parser). Where git refuses a mail (no
//! author, a date it cannot read) forge refuses it too; a mail without `Date:` is also
//! refused, where git would stamp the current time and the commit could never be made again.

use std::path::{Path, PathBuf};

use super::PatchError;
use super::mailinfo::{self, is_space};

/// One patch of a series: the commit it describes and the diff it carries.
#[derive(Debug, Clone)]
pub struct Patch {
    /// The file it was read from.
    pub file: PathBuf,
    /// Its position in that file (1-based), and how many messages the file holds.
    pub position: (usize, usize),
    /// The id of the commit it was made from, from the mbox `From <id> ...` line.
    pub original_id: Option<git2::Oid>,
    /// Who wrote the change, and when.
    pub author: Author,
    /// The first line of the commit message.
    pub subject: String,
    /// The whole commit message, as `git am` writes it.
    pub message: Vec<u8>,
    /// The patch text: everything from the mail's patch break on (diffstat, diff, signature).
    pub diff: Vec<u8>,
}

impl Patch {
    /// The patch as people name it: its file name, with `#n` when the file holds several.
    pub fn name(&self) -> String {
        let file = self
            .file
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.file.display().to_string());
        match self.position {
            (_, 1) => file,
            (number, _) => format!("{file}#{number}"),
        }
    }
}

/// The author of a patch, as the new commit carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// Display name, as the commit records it (UTF-8: bytes that were not are taken as Latin-1,
    /// as git takes them).
    pub name: String,
    /// Email address.
    pub email: String,
    /// Seconds since 1970-01-01 UTC.
    pub seconds: i64,
    /// The author's UTC offset, in minutes.
    pub offset_minutes: i32,
    /// `Name <email>` exactly as the commit records it.
    identity_bytes: Vec<u8>,
}

impl Author {
    /// `Name <email>`.
    pub fn identity(&self) -> String {
        format!("{} <{}>", self.name, self.email)
    }

    /// The date as git prints it in raw form: `1783253529 +0200`.
    pub fn raw_date(&self) -> String {
        raw_date(self.seconds, self.offset_minutes)
    }

    /// The author line of a commit object: `Name <email> 1783253529 +0200`.
    pub(crate) fn ident_line(&self) -> Vec<u8> {
        let mut line = self.identity_bytes.clone();
        line.push(b' ');
        line.extend_from_slice(self.raw_date().as_bytes());
        line
    }
}

/// `1783253529 +0200`.
pub(crate) fn raw_date(seconds: i64, offset_minutes: i32) -> String {
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let minutes = offset_minutes.abs();
    format!("{seconds} {sign}{:02}{:02}", minutes / 60, minutes % 60)
}

/// Reads every patch in the mbox file at `path`.
pub fn read_file(path: &Path) -> Result<Vec<Patch>, PatchError> {
    let read_error = |source| PatchError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = crate::fs::open_regular(path).map_err(|error| match error {
        crate::fs::PathError::Read { source, .. } => read_error(source),
        other => other.into(),
    })?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(read_error)?;
    parse_mbox(path, &bytes)
}

/// Splits `bytes` (the contents of `path`) into messages and reads each as a patch.
pub fn parse_mbox(path: &Path, bytes: &[u8]) -> Result<Vec<Patch>, PatchError> {
    let not_a_patch = |reason: String| PatchError::NotAPatch {
        path: path.to_owned(),
        reason,
    };
    let messages = split_messages(bytes).map_err(|reason| not_a_patch(reason.to_owned()))?;
    let count = messages.len();
    messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| {
            read_message(message)
                .map(|(original_id, author, message, diff)| Patch {
                    file: path.to_owned(),
                    position: (index + 1, count),
                    original_id,
                    author,
                    subject: String::from_utf8_lossy(
                        message.split(|&c| c == b'\n').next().unwrap_or_default(),
                    )
                    .into_owned(),
                    message,
                    diff,
                })
                .map_err(|reason| {
                    if count == 1 {
                        not_a_patch(reason)
                    } else {
                        not_a_patch(format!("message {} of {count}: {reason}", index + 1))
                    }
                })
        })
        .collect()
}

/// The messages of an mbox, split where `git mailsplit` splits: at every line that looks
/// like an mbox `From ` line. A file that starts with mail headers instead is one message.
fn split_messages(bytes: &[u8]) -> Result<Vec<&[u8]>, &'static str> {
    let start = bytes
        .iter()
        .position(|&c| !is_space(c))
        .ok_or("it is empty")?;
    let bytes = &bytes[start..];
    let first_line = bytes
        .split_inclusive(|&c| c == b'\n')
        .next()
        .unwrap_or(bytes);
    if !is_from_line(first_line) {
        if !looks_like_header(first_line) {
            return Err(
                "it holds no mail message (no `From <commit> Mon Sep 17 00:00:00 2001` line and no headers)",
            );
        }
        return Ok(vec![bytes]);
    }
    let mut messages = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in bytes.split_inclusive(|&c| c == b'\n') {
        if offset > 0 && is_from_line(line) {
            messages.push(&bytes[start..offset]);
            start = offset;
        }
        offset += line.len();
    }
    messages.push(&bytes[start..]);
    Ok(messages)
}

/// git mailsplit's test for an mbox separator: `From ` and, before the end, a time (`hh:mm`
/// after a digit) followed by a year after 1990.
fn is_from_line(line: &[u8]) -> bool {
    if line.len() < 20 || !line.starts_with(b"From ") {
        return false;
    }
    // git looks for the last colon before the final two bytes.
    let Some(colon) = line[4..line.len() - 2]
        .iter()
        .rposition(|&c| c == b':')
        .map(|at| at + 4)
    else {
        return false;
    };
    let digit = |at: Option<usize>| {
        at.and_then(|at| line.get(at))
            .is_some_and(u8::is_ascii_digit)
    };
    if !(digit(colon.checked_sub(4))
        && digit(colon.checked_sub(2))
        && digit(colon.checked_sub(1))
        && digit(Some(colon + 1))
        && digit(Some(colon + 2)))
    {
        return false;
    }
    let year = &line[colon + 3..];
    let digits: String = year
        .iter()
        .skip_while(|&&c| c == b' ' || c == b'\t')
        .take_while(|c| c.is_ascii_digit())
        .map(|&c| c as char)
        .collect();
    digits.parse::<u64>().is_ok_and(|year| year > 90)
}

fn looks_like_header(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&c| c == b':') else {
        return false;
    };
    colon > 0
        && line[..colon]
            .iter()
            .all(|&c| (33..=126).contains(&c) && c != b':')
}

/// The original commit, the author, the commit message and the patch text of one message.
type Read = (Option<git2::Oid>, Author, Vec<u8>, Vec<u8>);

fn read_message(message: &[u8]) -> Result<Read, String> {
    let original_id = message
        .strip_prefix(b"From ")
        .and_then(|rest| rest.get(..40))
        .and_then(|hex| std::str::from_utf8(hex).ok())
        .and_then(|hex| git2::Oid::from_str(hex).ok());
    let info =
        mailinfo::read(message).map_err(|error| format!("could not parse the mail: {error}"))?;
    if info.patch.is_empty() {
        return Err("it carries no diff: the message has no `---` line or `diff --git` after it (git am: \"Patch is empty\")".to_owned());
    }
    let mut text = info.subject.clone();
    text.extend_from_slice(b"\n\n");
    text.extend_from_slice(&info.body);
    let message = as_git_commits_it(&stripspace(&text));
    if message.contains(&0) {
        return Err("a NUL byte in the commit message is not allowed".to_owned());
    }
    let author = author(&info)?;
    Ok((original_id, author, message, info.patch))
}

/// The author as `git am` makes it (git's `fmt_ident`, strict).
fn author(info: &mailinfo::MailInfo) -> Result<Author, String> {
    let email = without_crud(&info.email);
    if info.name.is_empty() {
        return Err(format!(
            "empty ident name (for <{}>) not allowed: the mail has no usable `From:`",
            String::from_utf8_lossy(&email)
        ));
    }
    if info.name.iter().all(|&c| is_crud(c)) {
        return Err(format!(
            "name consists only of disallowed characters: {}",
            String::from_utf8_lossy(&info.name)
        ));
    }
    let name = as_git_commits_it(&without_crud(&info.name));
    let email = as_git_commits_it(&email);
    let date = info.date.as_deref().filter(|date| !date.is_empty()).ok_or(
        "it has no `Date:` header (git would use the current time, which no rebuild can repeat)",
    )?;
    let date_text = String::from_utf8_lossy(date);
    let (seconds, offset_minutes) =
        super::date::parse(&date_text).map_err(|error| error.to_string())?;
    let mut identity_bytes = name.clone();
    identity_bytes.extend_from_slice(b" <");
    identity_bytes.extend_from_slice(&email);
    identity_bytes.push(b'>');
    Ok(Author {
        name: String::from_utf8_lossy(&name).into_owned(),
        email: String::from_utf8_lossy(&email).into_owned(),
        seconds,
        offset_minutes,
        identity_bytes,
    })
}

/// `text` as git writes it into a commit (commit.c's `verify_utf8`, run on every commit whose
/// encoding is UTF-8, git's default): each byte that does not start a valid UTF-8 sequence is
/// taken as Latin-1 and written as its two-byte UTF-8 form, valid sequences are kept. This is
/// how a mail that declares no charset (or UTF-8 wrongly) gets its 8-bit text recoded.
/// "Valid" is git's: at most four bytes, no overlong form, nothing past U+10FFFF, no surrogate
/// and none of the noncharacters U+FDD0..U+FDEF and U+xxFFFE/U+xxFFFF.
pub(crate) fn as_git_commits_it(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let length = valid_sequence(&text[at..]);
        if length > 0 {
            out.extend_from_slice(&text[at..at + length]);
            at += length;
        } else {
            let byte = text[at];
            out.extend_from_slice(&[0xc0 | (byte >> 6), 0x80 | (byte & 0x3f)]);
            at += 1;
        }
    }
    out
}

/// The length of the valid UTF-8 sequence `text` starts with, by git's rules; 0 when it
/// starts with none.
fn valid_sequence(text: &[u8]) -> usize {
    let first = text[0];
    if first < 0x80 {
        return 1;
    }
    // The lead byte's high bits after the first say how many continuation bytes follow.
    let more = (first << 1).leading_ones() as usize;
    if !(1..=3).contains(&more) || text.len() <= more {
        return 0;
    }
    let mut codepoint = u32::from(first & (0x7f >> more));
    for &byte in &text[1..=more] {
        if byte & 0xc0 != 0x80 {
            return 0;
        }
        codepoint = (codepoint << 6) | u32::from(byte & 0x3f);
    }
    let range = match more {
        1 => 0x80..=0x7ff,
        2 => 0x800..=0xffff,
        _ => 0x1_0000..=0x10_ffff,
    };
    let surrogate = (codepoint & 0x1f_f800) == 0xd800;
    let noncharacter = (codepoint & 0xfffe) == 0xfffe || (0xfdd0..=0xfdef).contains(&codepoint);
    if !range.contains(&codepoint) || surrogate || noncharacter {
        return 0;
    }
    more + 1
}

/// The characters git trims from both ends of a name or address.
fn is_crud(c: u8) -> bool {
    c <= 32 || b",:;<>\"\\'".contains(&c)
}

/// `text` without crud at either end, and without newlines and angle brackets inside.
pub(crate) fn without_crud(text: &[u8]) -> Vec<u8> {
    let start = text.iter().position(|&c| !is_crud(c)).unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|&c| !is_crud(c))
        .map_or(start, |at| at + 1);
    text[start..end.max(start)]
        .iter()
        .copied()
        .filter(|c| !b"\n<>".contains(c))
        .collect()
}

/// What `git stripspace` does to a message: trailing whitespace off every line, runs of blank
/// lines made one, no blank lines at either end, a final newline. Whitespace is git's: space,
/// tab, carriage return and newline, nothing else.
pub(crate) fn stripspace(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut blank_pending = false;
    for line in text.split_inclusive(|&c| c == b'\n') {
        let end = line
            .iter()
            .rposition(|&c| !is_space(c))
            .map_or(0, |at| at + 1);
        if end == 0 {
            blank_pending = true;
            continue;
        }
        if blank_pending && !out.is_empty() {
            out.push(b'\n');
        }
        blank_pending = false;
        out.extend_from_slice(&line[..end]);
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Patch> {
        parse_mbox(Path::new("test.patch"), text.as_bytes()).expect("parses")
    }

    /// What git 2.47.3's `git am` committed for these bytes of an undeclared message.
    #[test]
    fn bytes_that_are_not_utf8_are_committed_as_latin1_as_git_does() {
        let cases: [(&[u8], &[u8]); 10] = [
            (b"caf\xe9", b"caf\xc3\xa9"),
            (b"caf\xc3\xa9", b"caf\xc3\xa9"),
            (b"\xc3\xa9\xe9", b"\xc3\xa9\xc3\xa9"),
            (b"\x80", b"\xc2\x80"),
            // An overlong form, a surrogate, a noncharacter, past U+10FFFF: each byte on its own.
            (b"\xc0\xaf", b"\xc3\x80\xc2\xaf"),
            (b"\xed\xa0\x80", b"\xc3\xad\xc2\xa0\xc2\x80"),
            (b"\xef\xbf\xbe", b"\xc3\xaf\xc2\xbf\xc2\xbe"),
            (b"\xf4\x90\x80\x80", b"\xc3\xb4\xc2\x90\xc2\x80\xc2\x80"),
            // A sequence cut short at the end, and a four-byte one kept.
            (b"a\xe2\x82", b"a\xc3\xa2\xc2\x82"),
            (b"\xf0\x9f\x98\x80", b"\xf0\x9f\x98\x80"),
        ];
        for (input, committed) in cases {
            assert_eq!(as_git_commits_it(input), committed, "{input:x?}");
        }
    }

    const DIFF: &str = "diff --git a/f b/f\nindex 7898192..422c2b7 100644\n--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n a\n+b\n";

    #[test]
    fn reads_encoded_author_folded_subject_and_offset() {
        let mail = format!(
            "From edc5cc6aef849490a1c035ef47cbcbfc86834a61 Mon Sep 17 00:00:00 2001\n\
             From: =?UTF-8?q?O=27Brien=2C=20S=C3=A9an?= <x@example.org>\n\
             Date: Fri, 2 Jan 2026 03:04:05 +0530\n\
             Subject: [PATCH v2 1/7] a very long subject line that goes on and\n on to the end\n\
             \n\
             body line\n---not a separator\n\nSigned-off-by: A <a@example.org>\n---\n f | 1 +\n\n{DIFF}-- \n2.47.3\n\n"
        );
        let patches = parse(&mail);
        assert_eq!(patches.len(), 1);
        let patch = &patches[0];
        assert_eq!(patch.author.name, "O'Brien, Séan");
        assert_eq!(patch.author.email, "x@example.org");
        assert_eq!(patch.author.offset_minutes, 330);
        assert_eq!(patch.author.raw_date(), "1767303245 +0530");
        assert_eq!(
            String::from_utf8(patch.message.clone()).unwrap(),
            "a very long subject line that goes on and on to the end\n\nbody line\n---not a separator\n\nSigned-off-by: A <a@example.org>\n"
        );
        assert!(patch.diff.starts_with(b"---\n f | 1 +\n\ndiff --git"));
        assert_eq!(
            patch.original_id.map(|id| id.to_string()).as_deref(),
            Some("edc5cc6aef849490a1c035ef47cbcbfc86834a61")
        );
    }

    #[test]
    fn splits_an_mbox_at_its_from_lines() {
        let one = format!(
            "From 0000000000000000000000000000000000000001 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\nDate: Fri, 2 Jan 2026 03:04:05 +0000\nSubject: one\n\n---\n{DIFF}"
        );
        let two = one.replace("one", "two");
        let patches = parse(&format!("{one}\n{two}"));
        assert_eq!(patches.len(), 2);
        assert_eq!(patches[1].subject, "two");
    }

    #[test]
    fn trailing_non_ascii_spaces_stay_in_the_message() {
        let mail = format!(
            "From: A <a@b>\nDate: Fri, 2 Jan 2026 03:04:05 +0000\nSubject: x\n\nends with nbsp\u{a0}\n---\n{DIFF}"
        );
        assert_eq!(
            parse(&mail)[0].message,
            "x\n\nends with nbsp\u{a0}\n".as_bytes()
        );
    }

    #[test]
    fn refuses_what_git_am_refuses() {
        for mail in [
            format!("From: A <a@b>\nDate: yesterday\nSubject: x\n\n---\n{DIFF}"),
            format!("Subject: x\nDate: Fri, 2 Jan 2026 03:04:05 +0000\n\n---\n{DIFF}"),
            "hello\nworld\n".to_owned(),
        ] {
            assert!(
                parse_mbox(Path::new("x.patch"), mail.as_bytes()).is_err(),
                "{mail}"
            );
        }
    }
}
