//! The mbox reader: the bytes of a `git format-patch` file in, one `Patch` per message out.
//!
//! A message is read the way `git am` reads it, with three differences that keep the commit
//! identical to the one the patch was made from: only brackets that name a patch
//! (`[PATCH v2 3/7]`, `[RFC PATCH]`) are stripped from the subject, the message ends at the
//! last `---` line before the diff (so a body line such as `--- not a separator` stays), and
//! carriage returns inside the diff are kept, so CRLF files apply.

use std::path::{Path, PathBuf};

use super::PatchError;

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
    /// The whole commit message (subject, blank line, body), cleaned as `git commit` does.
    pub message: String,
    /// The diff, from its first `diff --git` line, without the mail signature, with names
    /// that hold spaces quoted so that libgit2 reads them.
    pub diff: Vec<u8>,
    /// Every path the diff's headers name, as written (unquoted, without `a/` or `b/`).
    pub paths: Vec<String>,
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

/// The author of a patch, exactly as the mail names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// Display name.
    pub name: String,
    /// Email address.
    pub email: String,
    /// Seconds since 1970-01-01 UTC.
    pub seconds: i64,
    /// The author's UTC offset, in minutes.
    pub offset_minutes: i32,
}

impl Author {
    /// The git signature of this author.
    pub fn signature(&self) -> Result<git2::Signature<'static>, git2::Error> {
        git2::Signature::new(
            &self.name,
            &self.email,
            &git2::Time::new(self.seconds, self.offset_minutes),
        )
    }

    /// `Name <email>`.
    pub fn identity(&self) -> String {
        format!("{} <{}>", self.name, self.email)
    }

    /// The date as git prints it in raw form: `1783253529 +0200`.
    pub fn raw_date(&self) -> String {
        let sign = if self.offset_minutes < 0 { '-' } else { '+' };
        let minutes = self.offset_minutes.abs();
        format!(
            "{} {sign}{:02}{:02}",
            self.seconds,
            minutes / 60,
            minutes % 60
        )
    }
}

/// Reads every patch in the mbox file at `path`.
pub fn read_file(path: &Path) -> Result<Vec<Patch>, PatchError> {
    let bytes = std::fs::read(path).map_err(|source| PatchError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_mbox(path, &bytes)
}

/// Splits `bytes` (the contents of `path`) into messages and reads each as a patch.
pub fn parse_mbox(path: &Path, bytes: &[u8]) -> Result<Vec<Patch>, PatchError> {
    let not_a_patch = |reason: String| PatchError::NotAPatch {
        path: path.to_owned(),
        reason,
    };
    let bytes = normalize_crlf_mail(bytes);
    let messages = split_messages(&bytes);
    if messages.is_empty() {
        return Err(not_a_patch(
            "it holds no mail message (no `From <commit> Mon Sep 17 00:00:00 2001` line and no headers)"
                .to_owned(),
        ));
    }
    let count = messages.len();
    messages
        .into_iter()
        .enumerate()
        .map(|(index, (original_id, message))| {
            parse_message(message)
                .map(|parsed| Patch {
                    file: path.to_owned(),
                    position: (index + 1, count),
                    original_id,
                    author: parsed.author,
                    subject: parsed.subject,
                    message: parsed.message,
                    diff: parsed.diff.bytes,
                    paths: parsed.diff.paths,
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

/// A mail saved with CRLF line ends throughout (headers included) was converted as a whole,
/// not written that way by git: read it with plain newlines. A mail whose headers end in `\n`
/// keeps every `\r` of its diff, which is what CRLF file contents look like.
fn normalize_crlf_mail(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let first_line_end = bytes.iter().position(|&byte| byte == b'\n');
    match first_line_end {
        Some(end) if end > 0 && bytes[end - 1] == b'\r' => {
            std::borrow::Cow::Owned(crlf_to_lf(bytes))
        }
        _ => std::borrow::Cow::Borrowed(bytes),
    }
}

/// `bytes` with every CRLF pair turned into LF.
fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == b'\r' && bytes.get(index + 1) == Some(&b'\n') {
            continue;
        }
        out.push(byte);
    }
    out
}

/// The messages of an mbox, each with the commit id of its `From ` line. A file without a
/// `From ` line that starts with headers is one message.
fn split_messages(bytes: &[u8]) -> Vec<(Option<git2::Oid>, &[u8])> {
    let mut messages = Vec::new();
    let mut current: Option<(Option<git2::Oid>, usize)> = None;
    let mut offset = 0;
    for line in bytes.split_inclusive(|&byte| byte == b'\n') {
        if let Some(original_id) = separator(line) {
            if let Some((id, start)) = current.take() {
                messages.push((id, &bytes[start..offset]));
            }
            current = Some((original_id, offset + line.len()));
        } else if offset == 0 && looks_like_header(line) {
            current = Some((None, 0));
        }
        offset += line.len();
    }
    if let Some((id, start)) = current {
        messages.push((id, &bytes[start..]));
    }
    messages
}

/// Whether `line` opens a message: `From <40 or 64 hex> ...` as git writes it, or a classic
/// mbox `From sender Day Mon DD HH:MM:SS YYYY` line. Returns the commit id when it names one.
fn separator(line: &[u8]) -> Option<Option<git2::Oid>> {
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let rest = line.strip_prefix("From ")?;
    let mut words = rest.split_whitespace();
    let sender = words.next()?;
    let words: Vec<&str> = words.collect();
    if (sender.len() == 40 || sender.len() == 64)
        && sender.bytes().all(|byte| byte.is_ascii_hexdigit())
    {
        return Some(git2::Oid::from_str(sender).ok());
    }
    // `From sender Mon Sep 17 00:00:00 2001`: a time of day and a year end the line.
    let [.., time, year] = words.as_slice() else {
        return None;
    };
    let is_time = time.len() == 8 && time.bytes().filter(|&byte| byte == b':').count() == 2;
    let is_year = year.len() == 4 && year.bytes().all(|byte| byte.is_ascii_digit());
    (is_time && is_year).then_some(None)
}

fn looks_like_header(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&byte| byte == b':') else {
        return false;
    };
    colon > 0
        && line[..colon]
            .iter()
            .all(|&byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

struct ParsedMessage {
    author: Author,
    subject: String,
    message: String,
    diff: super::diff_text::DiffText,
}

fn parse_message(bytes: &[u8]) -> Result<ParsedMessage, String> {
    use mailparse::MailHeaderMap as _;

    let mail = mailparse::parse_mail(bytes).map_err(|error| format!("unreadable mail: {error}"))?;
    let headers = &mail.headers;
    let mut from = headers.get_first_header("From");
    let mut subject = headers.get_first_value("Subject");
    let mut date = headers.get_first_value("Date");
    if from.is_none() && subject.is_none() {
        return Err("it has no `From:` or `Subject:` header".to_owned());
    }

    let mut body = Vec::new();
    collect_text(&mail, &mut body)?;
    let (message_part, diff) = split_body(&body)?;
    let message_text = String::from_utf8_lossy(message_part);

    // `git format-patch --from` moves the real author into the first lines of the body.
    let (in_body, message_text) = in_body_headers(&message_text);
    let in_body_from = in_body
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("From"))
        .map(|(_, value)| format!("From: {value}\n").into_bytes());
    let in_body_from = match &in_body_from {
        Some(line) => Some(
            mailparse::parse_header(line)
                .map_err(|error| format!("unreadable in-body From: {error}"))?
                .0,
        ),
        None => None,
    };
    if in_body_from.is_some() {
        from = in_body_from.as_ref();
    }
    for (name, value) in &in_body {
        if name.eq_ignore_ascii_case("Subject") {
            subject = Some(value.clone());
        } else if name.eq_ignore_ascii_case("Date") {
            date = Some(value.clone());
        }
    }

    let from = from.ok_or("it has no `From:` header")?;
    let date = date.ok_or("it has no `Date:` header")?;
    let subject = clean_subject(&subject.ok_or("it has no `Subject:` header")?);
    let (name, email) = parse_from(from)?;
    let (seconds, offset_minutes) = parse_date(&date)?;
    let message = stripspace(&format!("{subject}\n\n{message_text}"));
    let subject = message.lines().next().unwrap_or_default().to_owned();
    Ok(ParsedMessage {
        author: Author {
            name,
            email,
            seconds,
            offset_minutes,
        },
        subject,
        message,
        diff: super::diff_text::prepare(strip_signature(diff)),
    })
}

/// The decoded text of a mail: its body, or the text parts of a multipart mail in order
/// (`git format-patch --attach` puts the message in one part and the diff in another).
fn collect_text(mail: &mailparse::ParsedMail<'_>, into: &mut Vec<u8>) -> Result<(), String> {
    if mail.subparts.is_empty() {
        let undecodable = |error: mailparse::MailParseError| format!("undecodable body: {error}");
        match mail.get_body_encoded() {
            // The decoder ends every line with CRLF; a carriage return that belongs to the
            // content travels as `=0D` and is the one left after taking those back.
            mailparse::body::Body::QuotedPrintable(body) => {
                let decoded = body.get_decoded().map_err(undecodable)?;
                into.extend_from_slice(&crlf_to_lf(&decoded));
            }
            _ => into.extend_from_slice(&mail.get_body_raw().map_err(undecodable)?),
        }
        return Ok(());
    }
    for part in &mail.subparts {
        if part.ctype.mimetype.starts_with("text/") || part.ctype.mimetype.starts_with("multipart/")
        {
            if !into.is_empty() && !into.ends_with(b"\n") {
                into.push(b'\n');
            }
            collect_text(part, into)?;
        }
    }
    Ok(())
}

/// Splits a body into the commit message and the diff. The diff starts at the first
/// `diff --git` line; the message ends at the last `---` line before it (what follows that line
/// is the diffstat and notes), or at the diff itself when there is no such line.
fn split_body(body: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let mut offset = 0;
    let mut separator = None;
    for line in body.split_inclusive(|&byte| byte == b'\n') {
        if line.starts_with(b"diff --git ") {
            let message_end = separator.unwrap_or(offset);
            return Ok((&body[..message_end], &body[offset..]));
        }
        let trimmed = line.trim_ascii_end();
        if trimmed == b"---" {
            separator = Some(offset);
        }
        offset += line.len();
    }
    Err("it carries no diff (no `diff --git` line)".to_owned())
}

/// Leading `Name: value` lines of a body followed by a blank line, and the rest of the body.
fn in_body_headers(text: &str) -> (Vec<(String, String)>, &str) {
    let trimmed = text.trim_start_matches('\n');
    let mut headers = Vec::new();
    let mut offset = 0;
    for line in trimmed.split_inclusive('\n') {
        let content = line.trim_end_matches('\n');
        if content.is_empty() {
            if headers.is_empty() {
                break;
            }
            return (headers, &trimmed[offset + line.len()..]);
        }
        match content.split_once(':') {
            Some((name, value))
                if ["From", "Subject", "Date"]
                    .iter()
                    .any(|known| known.eq_ignore_ascii_case(name)) =>
            {
                headers.push((name.to_owned(), value.trim().to_owned()));
            }
            _ => break,
        }
        offset += line.len();
    }
    (Vec::new(), text)
}

/// The diff without the `-- ` line and the git version that format-patch appends. Only a
/// trailer with no diff line after it is dropped, so a hunk that removes a line reading `- `
/// (which also shows as `-- `) is left alone.
fn strip_signature(diff: &[u8]) -> &[u8] {
    let mut offset = 0;
    let mut signature = None;
    for line in diff.split_inclusive(|&byte| byte == b'\n') {
        if line == b"-- \n" || line == b"-- " {
            signature = Some(offset);
        } else if signature.is_some()
            && matches!(line.first(), Some(b' ' | b'+' | b'-' | b'@' | b'\\' | b'd'))
        {
            signature = None;
        }
        offset += line.len();
    }
    match signature {
        Some(start) => &diff[..start],
        None => diff,
    }
}

/// The subject without `Re:` and without the bracketed tags format-patch adds
/// (`[PATCH]`, `[PATCH v2 3/7]`, `[RFC PATCH 1/2]`); other brackets are part of the subject.
fn clean_subject(subject: &str) -> String {
    let mut rest = subject.trim();
    loop {
        if let Some(prefix) = rest.get(..3)
            && prefix.eq_ignore_ascii_case("re:")
        {
            rest = rest[3..].trim_start();
            continue;
        }
        if let Some(inner) = rest.strip_prefix('[')
            && let Some(close) = inner.find(']')
            && inner[..close].to_ascii_uppercase().contains("PATCH")
        {
            rest = inner[close + 1..].trim_start();
            continue;
        }
        return rest.to_owned();
    }
}

/// Name and address from a `From:` header, RFC 2047 words and quoted names decoded. Like
/// `git mailinfo`, `Name <address>` is read leniently: git writes the in-body `From:` of
/// `format-patch --from` unquoted, commas and all (`From: O'Brien, Séan <sean@...>`).
fn parse_from(header: &mailparse::MailHeader<'_>) -> Result<(String, String), String> {
    let value = header.get_value();
    if let Some((name, rest)) = value.trim().rsplit_once('<')
        && let Some(email) = rest.strip_suffix('>')
        && !email.trim().is_empty()
    {
        let email = email.trim();
        let name = unquote_display_name(name.trim());
        let name = if name.is_empty() {
            email.to_owned()
        } else {
            name
        };
        return Ok((name, email.to_owned()));
    }
    let addresses = mailparse::addrparse_header(header)
        .map_err(|error| format!("unreadable `From: {value}`: {error}"))?;
    match addresses.extract_single_info() {
        Some(info) if !info.addr.is_empty() => {
            let name = info
                .display_name
                .filter(|name| !name.trim().is_empty())
                .unwrap_or_else(|| info.addr.clone());
            Ok((name.trim().to_owned(), info.addr))
        }
        _ => Err(format!("`From: {value}` names no single author address")),
    }
}

/// `"O'Brien, Sean"` without its quotes and backslash escapes; other names as they are.
fn unquote_display_name(name: &str) -> String {
    let Some(inner) = name
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    else {
        return name.to_owned();
    };
    let mut out = String::with_capacity(inner.len());
    let mut characters = inner.chars();
    while let Some(character) = characters.next() {
        match character {
            '\\' => out.extend(characters.next()),
            other => out.push(other),
        }
    }
    out
}

/// Seconds since the epoch and the UTC offset in minutes. mailparse's `dateparse` gives the
/// instant only, so the offset is read from the header's last word.
fn parse_date(value: &str) -> Result<(i64, i32), String> {
    let seconds = mailparse::dateparse(value)
        .map_err(|error| format!("unreadable `Date: {value}`: {error}"))?;
    let zone = value
        .split_whitespace()
        .rfind(|word| !word.starts_with('('))
        .unwrap_or_default();
    let offset_minutes = match zone.as_bytes() {
        [sign @ (b'+' | b'-'), digits @ ..]
            if digits.len() == 4 && digits.iter().all(u8::is_ascii_digit) =>
        {
            let hours: i32 = zone[1..3].parse().expect("two digits");
            let minutes: i32 = zone[3..5].parse().expect("two digits");
            let total = hours * 60 + minutes;
            if *sign == b'-' { -total } else { total }
        }
        _ => 0,
    };
    Ok((seconds, offset_minutes))
}

/// What `git stripspace` does to a message: trailing whitespace off every line, runs of blank
/// lines made one, no blank lines at either end, a final newline.
pub(crate) fn stripspace(text: &str) -> String {
    let mut out = String::new();
    let mut blank_pending = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_pending = !out.is_empty();
            continue;
        }
        if blank_pending {
            out.push('\n');
            blank_pending = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Patch> {
        parse_mbox(Path::new("test.patch"), text.as_bytes()).expect("parses")
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
             body line\n--- not a separator\n\nSigned-off-by: A <a@example.org>\n---\n f | 1 +\n\n{DIFF}-- \n2.47.3\n\n"
        );
        let patches = parse(&mail);
        assert_eq!(patches.len(), 1);
        let patch = &patches[0];
        assert_eq!(patch.author.name, "O'Brien, Séan");
        assert_eq!(patch.author.email, "x@example.org");
        assert_eq!(patch.author.offset_minutes, 330);
        assert_eq!(patch.author.raw_date(), "1767303245 +0530");
        assert_eq!(
            patch.message,
            "a very long subject line that goes on and on to the end\n\nbody line\n--- not a separator\n\nSigned-off-by: A <a@example.org>\n"
        );
        assert_eq!(patch.diff, DIFF.as_bytes());
        assert_eq!(patch.paths, ["f"]);
        assert_eq!(
            patch.original_id.map(|id| id.to_string()).as_deref(),
            Some("edc5cc6aef849490a1c035ef47cbcbfc86834a61")
        );
    }

    #[test]
    fn keeps_carriage_returns_of_a_quoted_printable_body() {
        let mail = "From: A <a@example.org>\nDate: Mon, 6 Jul 2026 14:12:09 +0200\nSubject: [PATCH] crlf\nContent-Transfer-Encoding: quoted-printable\n\n---\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a=0D\n+b=0D\n";
        let patch = &parse(mail)[0];
        assert_eq!(
            String::from_utf8(patch.diff.clone()).unwrap(),
            "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\r\n+b\r\n"
        );
    }

    #[test]
    fn keeps_brackets_that_are_not_patch_tags() {
        assert_eq!(clean_subject("[RFC PATCH 2/3] [docs] fix"), "[docs] fix");
        assert_eq!(clean_subject("Re: [PATCH] x"), "x");
    }

    #[test]
    fn refuses_text_without_a_diff() {
        let error = parse_mbox(Path::new("notes.txt"), b"hello\nworld\n").unwrap_err();
        assert!(error.to_string().contains("notes.txt"), "{error}");
    }
}
