//! One mail message in; its author, date, subject, commit message and diff out, read the way
//! `git mailinfo` reads them for `git am` (the defaults `git am --keep-cr` uses: in-body headers
//! honoured, no scissors, every bracketed prefix of the subject removed, text converted to UTF-8
//! from the charset the mail declares).
//!
//! The rules are git's, line by line: headers end at the first line that is not one (folded
//! lines joined); RFC 2047 words are decoded; a multipart mail is read part by part; quoted-
//! printable and base64 bodies are decoded line by line; `format=flowed` lines are joined; the
//! message ends at the first "patch break" (`---` alone, `--- name`, `diff -`, `Index: `) and
//! everything from that line on is the patch. mailparse reads mail as a MIME tree, which is not
//! how git reads a patch (a body is split at its first patch break, not at a MIME boundary, and
//! lines are decoded one at a time), so this follows git's own reading.

/// What `git mailinfo` makes of a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailInfo {
    /// The author's name (the address when the name is missing or odd), UTF-8 where the mail said
    /// how to get there.
    pub name: Vec<u8>,
    /// The author's address.
    pub email: Vec<u8>,
    /// The `Date:` value, spaces tidied; `None` when the mail has none.
    pub date: Option<Vec<u8>>,
    /// The subject, its `Re:` and `[...]` prefixes removed.
    pub subject: Vec<u8>,
    /// The body up to the patch break.
    pub body: Vec<u8>,
    /// Everything from the patch break on: diffstat, diff, signature.
    pub patch: Vec<u8>,
}

/// Reads one message (the bytes between two `From ` lines of an mbox, that line included).
pub fn read(message: &[u8]) -> Result<MailInfo, String> {
    let start = message
        .iter()
        .position(|&byte| !is_space(byte))
        .ok_or("the message is empty")?;
    let mut reader = Reader {
        input: &message[start..],
        at: 0,
        state: State::default(),
    };
    let mut line = Vec::new();
    while reader.header_line(&mut line) {
        reader.state.check_header(&line, Slot::Primary, true);
    }
    reader.body(line);
    let state = reader.state;
    if let Some(error) = state.error {
        return Err(error);
    }
    state.info()
}

/// git's `isspace`: space, tab, newline and carriage return only.
pub fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

const HEADERS: [&[u8]; 3] = [b"From", b"Subject", b"Date"];
const SUBJECT: usize = 1;
/// How deep multipart mails may nest.
const MAX_BOUNDARIES: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum TransferEncoding {
    #[default]
    Plain,
    QuotedPrintable,
    Base64,
}

/// Which set of headers a header line fills: the mail's own, or those written at the top of
/// the body (`git format-patch --from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Primary,
    InBody,
}

#[derive(Debug, Default)]
struct State {
    primary: [Option<Vec<u8>>; 3],
    in_body: [Option<Vec<u8>>; 3],
    boundaries: Vec<Vec<u8>>,
    charset: Vec<u8>,
    encoding: TransferEncoding,
    flowed: bool,
    delete_space: bool,
    /// Still reading in-body headers (the top of the body).
    header_stage: bool,
    /// Past the patch break.
    in_patch: bool,
    accumulated: Vec<u8>,
    body: Vec<u8>,
    patch: Vec<u8>,
    patch_lines: usize,
    error: Option<String>,
}

struct Reader<'a> {
    input: &'a [u8],
    at: usize,
    state: State,
}

impl Reader<'_> {
    /// The next line with its newline (`false` at the end of the input).
    fn whole_line(&mut self, line: &mut Vec<u8>) -> bool {
        line.clear();
        if self.at >= self.input.len() {
            return false;
        }
        let rest = &self.input[self.at..];
        let length = rest
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(rest.len(), |end| end + 1);
        line.extend_from_slice(&rest[..length]);
        self.at += length;
        true
    }

    /// The next line without its newline.
    fn line_without_newline(&mut self, line: &mut Vec<u8>) -> bool {
        let read = self.whole_line(line);
        if line.ends_with(b"\n") {
            line.pop();
        }
        read
    }

    /// One header, folded lines joined; `false` (with the line and a newline in `line`) at
    /// the first line that is not a header.
    fn header_line(&mut self, line: &mut Vec<u8>) -> bool {
        if !self.line_without_newline(line) {
            return false;
        }
        trim_end(line);
        if line.is_empty() || !is_rfc2822_header(line) {
            line.push(b'\n');
            return false;
        }
        let mut continuation = Vec::new();
        while matches!(self.input.get(self.at), Some(b' ' | b'\t')) {
            if !self.line_without_newline(&mut continuation) {
                break;
            }
            continuation[0] = b' ';
            trim_end(&mut continuation);
            line.extend_from_slice(&continuation);
        }
        true
    }

    /// Reads lines until one opens the innermost multipart boundary.
    fn find_boundary(&mut self, line: &mut Vec<u8>) -> bool {
        while self.line_without_newline(line) {
            if self.state.at_boundary(line) {
                return true;
            }
        }
        false
    }

    /// At a boundary line: an end boundary closes its part (and the next boundary is looked
    /// for); an opening one reads the part's headers. `false` when the input ends.
    fn boundary(&mut self, line: &mut Vec<u8>) -> bool {
        loop {
            let Some(top) = self.state.boundaries.last() else {
                return false;
            };
            if line.len() >= top.len() + 2 && &line[top.len()..top.len() + 2] == b"--" {
                self.state.boundaries.pop();
                self.state.filter(b"\n".to_vec());
                if self.state.error.is_some() || !self.find_boundary(line) {
                    return false;
                }
                continue;
            }
            break;
        }
        self.state.encoding = TransferEncoding::Plain;
        self.state.charset.clear();
        while self.header_line(line) {
            self.state.check_header(line, Slot::Primary, false);
        }
        if !self.line_without_newline(line) {
            return false;
        }
        line.push(b'\n');
        true
    }

    fn body(&mut self, mut line: Vec<u8>) {
        self.state.header_stage = true;
        let mut pending = Vec::new();
        if !self.state.boundaries.is_empty() && !self.find_boundary(&mut line) {
            return;
        }
        loop {
            if self.state.at_boundary(&line) {
                if !pending.is_empty() {
                    self.state.filter(std::mem::take(&mut pending));
                }
                if !self.boundary(&mut line) {
                    return;
                }
            }
            let decoded = match self.state.encoding {
                TransferEncoding::QuotedPrintable => Some(decode_q(&line, false)),
                TransferEncoding::Base64 => Some(decode_b(&line)),
                TransferEncoding::Plain => None,
            };
            match decoded {
                Some(decoded) => {
                    let mut text = std::mem::take(&mut pending);
                    text.extend_from_slice(&decoded);
                    let mut pieces = text.split_inclusive(|&byte| byte == b'\n').peekable();
                    while let Some(piece) = pieces.next() {
                        if pieces.peek().is_none() && !piece.ends_with(b"\n") {
                            pending.extend_from_slice(piece);
                            break;
                        }
                        self.state.filter_flowed(piece.to_vec(), &mut pending);
                    }
                }
                None => self
                    .state
                    .filter_flowed(std::mem::take(&mut line), &mut pending),
            }
            if self.state.error.is_some() || !self.whole_line(&mut line) {
                break;
            }
        }
        if !pending.is_empty() {
            self.state.filter(pending);
        }
        self.state.flush_in_body_headers();
    }
}

impl State {
    fn at_boundary(&self, line: &[u8]) -> bool {
        self.boundaries
            .last()
            .is_some_and(|top| line.starts_with(top))
    }

    fn slots(&mut self, slot: Slot) -> &mut [Option<Vec<u8>>; 3] {
        match slot {
            Slot::Primary => &mut self.primary,
            Slot::InBody => &mut self.in_body,
        }
    }

    /// Takes `From`, `Subject`, `Date` (only into an empty slot unless `overwrite`),
    /// `Content-Type` and `Content-Transfer-Encoding`; `true` when the line was one of them.
    fn check_header(&mut self, line: &[u8], slot: Slot, overwrite: bool) -> bool {
        for (index, name) in HEADERS.iter().enumerate() {
            if (self.slots(slot)[index].is_none() || overwrite)
                && let Some(value) = self.header_value(line, name)
            {
                self.slots(slot)[index] = Some(value);
                return true;
            }
        }
        if let Some(value) = self.header_value(line, b"Content-Type") {
            self.content_type(&value);
            return true;
        }
        if let Some(value) = self.header_value(line, b"Content-Transfer-Encoding") {
            self.encoding = if find_ignore_case(&value, b"base64").is_some() {
                TransferEncoding::Base64
            } else if find_ignore_case(&value, b"quoted-printable").is_some() {
                TransferEncoding::QuotedPrintable
            } else {
                TransferEncoding::Plain
            };
            return true;
        }
        self.header_value(line, b"Message-ID").is_some()
    }

    /// The decoded value of header `name` when `line` is one.
    fn header_value(&mut self, line: &[u8], name: &[u8]) -> Option<Vec<u8>> {
        let value = skip_header(line, name)?;
        let mut value = value.to_vec();
        if let Err(error) = decode_header(&mut value) {
            self.error.get_or_insert(error);
        }
        Some(value)
    }

    fn content_type(&mut self, value: &[u8]) {
        self.flowed =
            attribute(value, b"format=").is_some_and(|v| v.eq_ignore_ascii_case(b"flowed"));
        self.delete_space =
            attribute(value, b"delsp=").is_some_and(|v| v.eq_ignore_ascii_case(b"yes"));
        if let Some(boundary) = attribute(value, b"boundary=") {
            if self.boundaries.len() >= MAX_BOUNDARIES {
                self.error
                    .get_or_insert_with(|| "too many multipart boundaries".to_owned());
            } else {
                let mut marker = b"--".to_vec();
                marker.extend_from_slice(&boundary);
                self.boundaries.push(marker);
            }
        }
        self.charset = attribute(value, b"charset=").unwrap_or_default();
    }

    fn filter_flowed(&mut self, mut line: Vec<u8>, pending: &mut Vec<u8>) {
        if !self.flowed {
            self.filter(line);
            return;
        }
        let mut length = line.len();
        if line.last() == Some(&b'\n') {
            length -= 1;
            if length > 0 && line[length - 1] == b'\r' {
                length -= 1;
            }
        }
        if line.starts_with(b"-- ") && length == 3 {
            if !pending.is_empty() {
                self.filter(std::mem::take(pending));
            }
            self.filter(line);
            return;
        }
        if length > 0 && line[0] == b' ' {
            line.remove(0);
            length -= 1;
        }
        if length > 0 && line[length - 1] == b' ' {
            pending.extend_from_slice(&line[..length - usize::from(self.delete_space)]);
            return;
        }
        let mut joined = std::mem::take(pending);
        joined.extend_from_slice(&line);
        self.filter(joined);
    }

    fn filter(&mut self, line: Vec<u8>) {
        let mut line = line;
        if !self.in_patch {
            if !self.commit_message_line(&mut line) {
                return;
            }
            self.in_patch = true;
        }
        self.patch.extend_from_slice(&line);
        self.patch_lines += 1;
    }

    /// Takes a line of the message; `true` at the patch break.
    fn commit_message_line(&mut self, line: &mut Vec<u8>) -> bool {
        if self.header_stage && (line.is_empty() || line == b"\n") {
            if !self.accumulated.is_empty() {
                self.flush_in_body_headers();
                self.header_stage = false;
            }
            return false;
        }
        if self.header_stage {
            self.header_stage = self.in_body_header(line);
            if self.header_stage {
                return false;
            }
        }
        if !self.charset.is_empty() {
            match to_utf8(line, &self.charset) {
                Some(converted) => *line = converted,
                None => {
                    let charset = String::from_utf8_lossy(&self.charset).into_owned();
                    self.error
                        .get_or_insert_with(|| format!("cannot convert from {charset} to UTF-8"));
                    return false;
                }
            }
        }
        if is_patch_break(line) {
            return true;
        }
        self.body.extend_from_slice(line);
        false
    }

    fn in_body_header(&mut self, line: &[u8]) -> bool {
        if !self.accumulated.is_empty() && matches!(line.first(), Some(b' ' | b'\t')) {
            if self.accumulated.ends_with(b"\n") {
                self.accumulated.pop();
            }
            self.accumulated.extend_from_slice(line);
            return true;
        }
        self.flush_in_body_headers();
        if line.starts_with(b">From") && line.get(5).is_some_and(|&c| is_space(c)) {
            return is_format_patch_separator(&line[1..]);
        }
        if line.starts_with(b"[PATCH]") && line.get(7).is_some_and(|&c| is_space(c)) {
            self.in_body[SUBJECT] = Some(line.to_vec());
            return true;
        }
        let starts_header = HEADERS.iter().enumerate().any(|(index, name)| {
            self.in_body[index].is_none() && skip_header(line, name).is_some()
        });
        if starts_header {
            self.accumulated.extend_from_slice(line);
            return true;
        }
        false
    }

    fn flush_in_body_headers(&mut self) {
        if self.accumulated.is_empty() {
            return;
        }
        let accumulated = std::mem::take(&mut self.accumulated);
        self.check_header(&accumulated, Slot::InBody, false);
    }

    fn info(mut self) -> Result<MailInfo, String> {
        let mut chosen: [Option<Vec<u8>>; 3] = Default::default();
        for (index, slot) in chosen.iter_mut().enumerate() {
            let value = match (&self.in_body[index], &self.primary[index]) {
                (Some(value), _) if self.patch_lines > 0 => Some(value.clone()),
                (_, Some(value)) => Some(value.clone()),
                _ => None,
            };
            if let Some(value) = &value
                && value.contains(&0)
            {
                return Err(format!(
                    "a NUL byte in '{}' is not allowed",
                    String::from_utf8_lossy(HEADERS[index])
                ));
            }
            *slot = value;
        }
        let [from, subject, date] = chosen;
        let (name, email) = match from {
            Some(mut from) => {
                cleanup_space(&mut from);
                parse_from(&from)
            }
            None => (Vec::new(), Vec::new()),
        };
        let subject = subject.map_or_else(Vec::new, |mut subject| {
            cleanup_subject(&mut subject);
            cleanup_space(&mut subject);
            subject
        });
        let date = date.map(|mut date| {
            cleanup_space(&mut date);
            date
        });
        Ok(MailInfo {
            name,
            email,
            date,
            subject,
            body: std::mem::take(&mut self.body),
            patch: std::mem::take(&mut self.patch),
        })
    }
}

/// `Name:` at the start of `line` (case-insensitively), then the value after spaces.
fn skip_header<'l>(line: &'l [u8], name: &[u8]) -> Option<&'l [u8]> {
    let head = line.get(..name.len())?;
    if !head.eq_ignore_ascii_case(name) || line.get(name.len()) != Some(&b':') {
        return None;
    }
    let value = &line[name.len() + 1..];
    let spaces = value.iter().take_while(|&&c| is_space(c)).count();
    Some(&value[spaces..])
}

/// RFC 2822's loosest header: a field name (printable, no colon) then `:`; mbox `From ` lines
/// count too.
fn is_rfc2822_header(line: &[u8]) -> bool {
    if line.starts_with(b"From ") || line.starts_with(b">From ") {
        return true;
    }
    for &c in line {
        if c == b':' {
            return true;
        }
        if (33..=57).contains(&c) || (59..=126).contains(&c) {
            continue;
        }
        break;
    }
    false
}

fn is_format_patch_separator(line: &[u8]) -> bool {
    const SAMPLE: &[u8] =
        b"From e6807f3efca28b30decfecb1732a56c7db1137ee Mon Sep 17 00:00:00 2001\n";
    line.len() == SAMPLE.len()
        && line.starts_with(b"From ")
        && line[5..45]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        && line[45..] == SAMPLE[45..]
}

/// git's patch break: `diff -`, `Index: `, `--- name`, or `---` followed by spaces only.
pub fn is_patch_break(line: &[u8]) -> bool {
    if line.starts_with(b"diff -") || line.starts_with(b"Index: ") {
        return true;
    }
    if line.len() < 4 || !line.starts_with(b"---") {
        return false;
    }
    if line[3] == b' ' && !is_space(line[4]) {
        return true;
    }
    for &c in &line[3..] {
        if c == b'\n' {
            return true;
        }
        if !is_space(c) {
            break;
        }
    }
    false
}

/// `name` in a header value: the text after it up to `;`, space or tab (or inside quotes).
fn attribute(value: &[u8], name: &[u8]) -> Option<Vec<u8>> {
    let at = find_ignore_case(value, name)? + name.len();
    let rest = &value[at..];
    let (rest, ends): (&[u8], &[u8]) = match rest.strip_prefix(b"\"") {
        Some(quoted) => (quoted, b"\""),
        None => (rest, b"; \t"),
    };
    let end = rest
        .iter()
        .position(|c| ends.contains(c))
        .unwrap_or(rest.len());
    Some(rest[..end].to_vec())
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|value| value as u8)
}

/// Quoted-printable (`=XX`, a soft break at `=` before the newline); in an RFC 2047 word `_`
/// is a space.
fn decode_q(text: &[u8], rfc2047: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() && text[at] != 0 {
        let c = text[at];
        at += 1;
        if c == b'=' {
            let next = text.get(at).copied().unwrap_or(0);
            if next == b'\n' || next == 0 {
                break;
            }
            if let (Some(high), Some(low)) = (
                hex_value(next),
                text.get(at + 1).copied().and_then(hex_value),
            ) {
                out.push(high << 4 | low);
                at += 2;
                continue;
            }
        }
        out.push(if rfc2047 && c == b'_' { b' ' } else { c });
    }
    out
}

/// Base64, skipping what is not part of the alphabet (`=` and newlines included).
fn decode_b(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut position = 0;
    let mut accumulated: u32 = 0;
    for &c in text {
        if c == 0 {
            break;
        }
        let value = match c {
            b'+' => 62,
            b'/' => 63,
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            _ => continue,
        };
        match position {
            0 => accumulated = value << 2,
            1 => {
                out.push((accumulated | (value >> 4)) as u8);
                accumulated = (value & 15) << 4;
            }
            2 => {
                out.push((accumulated | (value >> 2)) as u8);
                accumulated = (value & 3) << 6;
            }
            _ => out.push((accumulated | value) as u8),
        }
        position = (position + 1) % 4;
    }
    out
}

/// Decodes the RFC 2047 words of a header value in place, each converted to UTF-8.
fn decode_header(value: &mut Vec<u8>) -> Result<(), String> {
    let text = value.as_slice();
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    let malformed = || "malformed RFC 2047 word in a header".to_owned();
    while let Some(relative) = find(&text[at..], b"=?") {
        let start = at + relative;
        if start != at {
            let only_space = text[at..start].iter().all(|&c| is_space(c));
            if !only_space || at == 0 {
                out.extend_from_slice(&text[at..start]);
            }
        }
        let charset_start = start + 2;
        if charset_start >= text.len() {
            return Err(malformed());
        }
        let question = charset_start + find(&text[charset_start..], b"?").ok_or_else(malformed)?;
        if question + 3 > text.len() {
            return Err(malformed());
        }
        let charset = &text[charset_start..question];
        let encoding = text.get(question + 1).copied().unwrap_or(0);
        if encoding == 0 || text.get(question + 2) != Some(&b'?') {
            return Err(malformed());
        }
        let data_start = question + 3;
        let end = data_start + find(&text[data_start..], b"?=").ok_or_else(malformed)?;
        let data = &text[data_start..end];
        let decoded = match encoding.to_ascii_lowercase() {
            b'b' => decode_b(data),
            b'q' => decode_q(data, true),
            _ => return Err(malformed()),
        };
        let converted = if charset.is_empty() {
            decoded
        } else {
            to_utf8(&decoded, charset).ok_or_else(|| {
                format!(
                    "cannot convert from {} to UTF-8",
                    String::from_utf8_lossy(charset)
                )
            })?
        };
        out.extend_from_slice(&converted);
        at = end + 2;
    }
    out.extend_from_slice(&text[at..]);
    *value = out;
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// `text` in `charset` as UTF-8; `None` when it cannot be converted. ISO-8859-1 and ASCII are
/// converted as iconv converts them (every Latin-1 byte is its code point; ASCII refuses 8-bit
/// bytes); other charsets go through encoding_rs.
pub fn to_utf8(text: &[u8], charset: &[u8]) -> Option<Vec<u8>> {
    let label = String::from_utf8_lossy(charset).trim().to_ascii_lowercase();
    if matches!(label.as_str(), "utf-8" | "utf8") {
        return Some(text.to_vec());
    }
    match label.as_str() {
        "iso-8859-1" | "iso8859-1" | "iso_8859-1" | "latin1" | "latin-1" | "l1" | "cp819"
        | "ibm819" => Some(
            text.iter()
                .map(|&c| c as char)
                .collect::<String>()
                .into_bytes(),
        ),
        "us-ascii" | "ascii" | "ansi_x3.4-1968" => text.is_ascii().then(|| text.to_vec()),
        _ => {
            let encoding = encoding_rs::Encoding::for_label(label.as_bytes())?;
            encoding
                .decode_without_bom_handling_and_without_replacement(text)
                .map(|decoded| decoded.into_owned().into_bytes())
        }
    }
}

fn trim_end(text: &mut Vec<u8>) {
    while text.last().is_some_and(|&c| is_space(c)) {
        text.pop();
    }
}

fn trim(text: &mut Vec<u8>) {
    trim_end(text);
    let leading = text.iter().take_while(|&&c| is_space(c)).count();
    text.drain(..leading);
}

/// Every run of whitespace becomes one space.
fn cleanup_space(text: &mut Vec<u8>) {
    let mut out = Vec::with_capacity(text.len());
    let mut in_space = false;
    for &c in text.iter() {
        if is_space(c) {
            if !in_space {
                out.push(b' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    *text = out;
}

/// Leading spaces, colons, `Re:` and bracketed groups off the subject, then trimmed.
fn cleanup_subject(subject: &mut Vec<u8>) {
    loop {
        match subject.first() {
            Some(b'r' | b'R')
                if subject.len() > 3 && matches!(subject[1], b'e' | b'E') && subject[2] == b':' =>
            {
                subject.drain(..3);
            }
            Some(b' ' | b'\t' | b':') => {
                subject.remove(0);
            }
            Some(b'[') => match subject.iter().position(|&c| c == b']') {
                Some(close) => {
                    subject.drain(..=close);
                }
                None => break,
            },
            _ => break,
        }
    }
    trim(subject);
}

/// Quotes and backslashes taken out of a `From:` value; comments keep their parentheses.
/// Inside quotes or a comment a backslash takes the next character as it is.
fn unquote_quoted_pairs(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    let (mut quoted, mut depth) = (false, 0usize);
    let mut bytes = value.iter().copied().take_while(|&c| c != 0);
    while let Some(c) = bytes.next() {
        match c {
            b'\\' if quoted || depth > 0 => out.extend(bytes.next()),
            b'"' if depth == 0 => quoted = !quoted,
            b'(' if !quoted => {
                out.push(c);
                depth += 1;
            }
            b')' if depth > 0 => {
                out.push(c);
                depth -= 1;
            }
            _ => out.push(c),
        }
    }
    out
}

/// The name as git keeps it: the address instead when the name is empty, longer than 60 bytes,
/// or holds `@`, `<` or `>`.
fn sane_name(name: Vec<u8>, email: &[u8]) -> Vec<u8> {
    if name.is_empty() || name.len() > 60 || name.iter().any(|c| b"@<>".contains(c)) {
        email.to_vec()
    } else {
        name
    }
}

/// Name and address from a `From:` value: `Name <a@b>`, `a@b (Name)`, or without an `@`
/// the text between `<` and `>`.
fn parse_from(from: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut text = unquote_quoted_pairs(from);
    let Some(mut at) = text.iter().position(|&c| c == b'@') else {
        let Some(open) = from.iter().position(|&c| c == b'<') else {
            return (Vec::new(), Vec::new());
        };
        let Some(close) = from[open..].iter().position(|&c| c == b'>') else {
            return (Vec::new(), Vec::new());
        };
        let email = from[open + 1..open + close].to_vec();
        let mut name = from[..open].to_vec();
        trim(&mut name);
        return (sane_name(name, &email), email);
    };
    while at > 0 {
        let c = text[at - 1];
        if is_space(c) {
            break;
        }
        if c == b'<' {
            text[at - 1] = b' ';
            break;
        }
        at -= 1;
    }
    let length = text[at..]
        .iter()
        .position(|c| b" \n\t\r\x0b\x0c>".contains(c))
        .unwrap_or(text.len() - at);
    let email = text[at..at + length].to_vec();
    let removed = length + usize::from(at + length < text.len());
    text.drain(at..at + removed);
    cleanup_space(&mut text);
    trim(&mut text);
    if text.first() == Some(&b'(') && text.last() == Some(&b')') && text.len() >= 2 {
        text.remove(0);
        text.pop();
    }
    (sane_name(text, &email), email)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(text: &str) -> MailInfo {
        read(text.as_bytes()).expect("reads")
    }

    #[test]
    fn quotes_and_comments_unquote_as_git_unquotes_them() {
        assert_eq!(
            unquote_quoted_pairs(br#""O'Brien, \"Sean\"" (the \(first\) one) \x"#),
            br#"O'Brien, "Sean" (the (first) one) \x"#
        );
    }

    #[test]
    fn a_comment_names_the_author() {
        let mail = info(
            "From: ada@example.org (Ada Lovelace)\nSubject: x\nDate: now\n\nbody\n---\ndiff --git a/f b/f\n",
        );
        assert_eq!(mail.name, b"Ada Lovelace");
        assert_eq!(mail.email, b"ada@example.org");
    }

    #[test]
    fn the_message_ends_at_the_first_patch_break() {
        // `--- name` is a break too (it starts a diff without headers), as `---x` is not.
        let mail = info(
            "From: A <a@b>\nSubject: [PATCH 1/2] [docs] fix\n\nbody\n---x\n--- a break\n---\n f | 1 +\n",
        );
        assert_eq!(mail.subject, b"fix");
        assert_eq!(mail.body, b"body\n---x\n");
        assert_eq!(mail.patch, b"--- a break\n---\n f | 1 +\n");
    }

    #[test]
    fn a_latin1_body_becomes_utf8() {
        let mut mail = b"From: A <a@b>\nSubject: x\nContent-Type: text/plain; charset=ISO-8859-1\n\ncaf\xe9\n---\n".to_vec();
        mail.extend_from_slice(b"diff --git a/f b/f\n");
        let mail = read(&mail).unwrap();
        assert_eq!(mail.body, "café\n".as_bytes());
    }

    #[test]
    fn in_body_headers_win_when_a_patch_follows() {
        let mail = info(
            "From: Sender <s@x>\nSubject: outer\n\nFrom: Real Author <r@x>\nSubject: inner\n\nbody\n---\ndiff --git a/f b/f\n",
        );
        assert_eq!(mail.name, b"Real Author");
        assert_eq!(mail.subject, b"inner");
        assert_eq!(mail.body, b"body\n");
    }
}
