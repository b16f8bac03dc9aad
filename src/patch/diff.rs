//! The patch text of a mail in; the file patches of its git diff out, read as `git apply`
//! reads them: a `diff --git` header and its extended lines (modes, renames, copies, `index`),
//! then text hunks or a binary patch. Lines outside a file patch (the diffstat, the signature)
//! are skipped, as git skips them; a hunk whose line counts do not add up, a hunk with no
//! change, or a hunk that appears without a header is refused with its line.
//!
//! Only git's own diffs are read: a traditional `--- a` / `+++ b` diff without a `diff --git`
//! header (never written by `git format-patch`) is refused rather than guessed at.

use super::binary::{self, BinaryHunk};

/// `S_IFMT` and the file types git knows.
pub const TYPE_MASK: u32 = 0o170_000;
/// A regular file.
pub const REGULAR: u32 = 0o100_000;
/// A symbolic link.
pub const SYMLINK: u32 = 0o120_000;
/// A folder.
pub const DIRECTORY: u32 = 0o040_000;
/// A submodule commit.
pub const GITLINK: u32 = 0o160_000;

/// One file of a git diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePatch {
    /// The path before (`None` for a new file).
    pub old_name: Option<Vec<u8>>,
    /// The path after (`None` for a deleted file).
    pub new_name: Option<Vec<u8>>,
    /// The mode before, when the patch says (0 otherwise).
    pub old_mode: u32,
    /// The mode after, when the patch says (0 otherwise).
    pub new_mode: u32,
    /// `new file mode`.
    pub is_new: bool,
    /// `deleted file mode`.
    pub is_delete: bool,
    /// `rename from` / `rename to`.
    pub is_rename: bool,
    /// `copy from` / `copy to`.
    pub is_copy: bool,
    /// The abbreviated blob ids of the `index` line.
    pub old_id: String,
    /// See `old_id`.
    pub new_id: String,
    /// The text hunks.
    pub fragments: Vec<Fragment>,
    /// A binary change (`GIT binary patch` or `Binary files ... differ`).
    pub is_binary: bool,
    /// The binary patch data: forward, then the optional reverse hunk.
    pub binary: Vec<BinaryHunk>,
    /// The line of the patch text its `diff --git` header is on (1-based).
    pub line: usize,
    /// Read the other way round (`git apply -R`): a binary patch uses its second hunk.
    pub reversed: bool,
}

impl FilePatch {
    /// The path people know the file by (the new name, else the old).
    pub fn name(&self) -> String {
        let name = self.new_name.as_ref().or(self.old_name.as_ref());
        name.map(|name| String::from_utf8_lossy(name).into_owned())
            .unwrap_or_default()
    }

    /// The same patch turned around, as `git apply -R` reads it.
    pub fn reverse(&self) -> FilePatch {
        let mut reversed = self.clone();
        std::mem::swap(&mut reversed.old_name, &mut reversed.new_name);
        if reversed.new_mode != 0 || reversed.is_delete {
            std::mem::swap(&mut reversed.old_mode, &mut reversed.new_mode);
        }
        std::mem::swap(&mut reversed.is_new, &mut reversed.is_delete);
        std::mem::swap(&mut reversed.old_id, &mut reversed.new_id);
        for fragment in &mut reversed.fragments {
            std::mem::swap(&mut fragment.old_pos, &mut fragment.new_pos);
            std::mem::swap(&mut fragment.old_lines, &mut fragment.new_lines);
            fragment.reversed = !fragment.reversed;
        }
        reversed.reversed = !reversed.reversed;
        reversed
    }

    /// Whether the patch changes anything but content: a creation, deletion, rename, copy or
    /// mode change.
    fn changes_metadata(&self) -> bool {
        self.is_rename
            || self.is_copy
            || self.is_new
            || self.is_delete
            || (self.old_mode != 0 && self.new_mode != 0 && self.old_mode != self.new_mode)
    }
}

/// One text hunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragment {
    /// `@@ -old_pos,old_lines +new_pos,new_lines @@`.
    pub old_pos: usize,
    /// See `old_pos`.
    pub old_lines: usize,
    /// See `old_pos`.
    pub new_pos: usize,
    /// See `old_pos`.
    pub new_lines: usize,
    /// Context lines before the first change.
    pub leading: usize,
    /// Context lines after the last change.
    pub trailing: usize,
    /// The hunk's text, its `@@` line first.
    pub text: Vec<u8>,
    /// Applied with `+` and `-` swapped (`git apply -R`).
    pub reversed: bool,
    /// The line of the patch text its `@@` line is on.
    pub line: usize,
}

impl Fragment {
    /// `@@ -4,12 +4,18 @@`, as the patch wrote it.
    pub fn header(&self) -> String {
        let end = self
            .text
            .iter()
            .position(|&c| c == b'\n')
            .unwrap_or(self.text.len());
        let header = String::from_utf8_lossy(&self.text[..end]);
        match header.find(" @@") {
            Some(at) => header[..at + 3].to_owned(),
            None => header.into_owned(),
        }
    }
}

/// Why a patch text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    /// The line of the patch text (1-based).
    pub line: usize,
    /// What is wrong there.
    pub reason: String,
}

impl crate::diagnostics::Advise for ParseError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Nothing(
            "read while a patch is read; `PatchError` says which patch and what to do",
        )
    }
}

crate::advised!(ParseError);

/// The file patches of `text`, in order. An error names the line; a text with no file patch
/// at all is an error too (git: "No valid patches in input").
pub fn parse(text: &[u8]) -> Result<Vec<FilePatch>, ParseError> {
    let mut parser = Parser { text, line: 1 };
    let mut patches = Vec::new();
    let mut offset = 0;
    while offset < text.len() {
        match parser.chunk(offset)? {
            Some((consumed, patch)) => {
                patches.push(patch);
                offset += consumed;
            }
            None => break,
        }
    }
    if patches.is_empty() {
        return Err(ParseError {
            line: 1,
            reason: "no valid patches in input (no `diff --git` section)".to_owned(),
        });
    }
    Ok(patches)
}

/// git's `linelen`: up to and including the next newline, or to the end.
fn line_length(text: &[u8]) -> usize {
    text.iter()
        .position(|&c| c == b'\n')
        .map_or(text.len(), |end| end + 1)
}

/// git's `isspace`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

const TERMINATE_SPACE: u8 = 1;
const TERMINATE_TAB: u8 = 2;

struct Parser<'a> {
    text: &'a [u8],
    line: usize,
}

/// What an extended header line did.
enum HeaderLine {
    /// Read; go on.
    Continue,
    /// The header ends here (at a hunk, or at a line it does not know).
    End,
}

impl Parser<'_> {
    fn error(&self, line: usize, reason: impl Into<String>) -> ParseError {
        ParseError {
            line,
            reason: reason.into(),
        }
    }

    /// One file patch from `start`: how many bytes it took (from `start`), or `None` when no
    /// further header is found.
    fn chunk(&mut self, start: usize) -> Result<Option<(usize, FilePatch)>, ParseError> {
        let Some((offset, header_size, mut patch)) = self.find_header(start)? else {
            return Ok(None);
        };
        let body = start + offset + header_size;
        let mut size = self.fragments(body, &mut patch)?;
        if size == 0 {
            let line = &self.text[body..];
            let length = line_length(line);
            if &line[..length] == b"GIT binary patch\n" {
                self.line += 1;
                match self.binary(body + length) {
                    Some((used, hunks)) => {
                        patch.binary = hunks;
                        patch.is_binary = true;
                        size = length + used;
                    }
                    // git stops reading the input at a binary patch it cannot read; what came
                    // before it still applies.
                    None => return Ok(None),
                }
            } else if line[..length].ends_with(b" differ\n")
                && (line.starts_with(b"Binary files ") || line.starts_with(b"Files "))
            {
                self.line += 1;
                patch.is_binary = true;
                size = length;
            }
            if !patch.is_binary && !patch.changes_metadata() {
                return Err(self.error(
                    self.line,
                    "patch with only garbage (a file header with no change)",
                ));
            }
        }
        Ok(Some((offset + header_size + size, patch)))
    }

    /// The next `diff --git` header from `start`: its offset, its size, and the patch it
    /// describes.
    fn find_header(
        &mut self,
        start: usize,
    ) -> Result<Option<(usize, usize, FilePatch)>, ParseError> {
        let mut offset = 0;
        loop {
            let rest = &self.text[start + offset..];
            let size = rest.len();
            let length = line_length(rest);
            if length == 0 {
                return Ok(None);
            }
            let line = &rest[..length];
            if length >= 6 {
                if line.starts_with(b"@@ -") {
                    if parse_fragment_header(line).is_some() {
                        return Err(self.error(
                            self.line,
                            format!(
                                "patch fragment without header: {}",
                                String::from_utf8_lossy(line.trim_ascii_end())
                            ),
                        ));
                    }
                } else {
                    if size < length + 6 {
                        return Ok(None);
                    }
                    if line.starts_with(b"diff --git ") {
                        let header_line = self.line;
                        let (header_size, mut patch) = self.git_header(rest, length)?;
                        if header_size > length {
                            patch.line = header_line;
                            return Ok(Some((offset, header_size, patch)));
                        }
                        self.line = header_line;
                    } else if line.starts_with(b"--- ") && rest[length..].starts_with(b"+++ ") {
                        let next = line_length(&rest[length..]);
                        if size >= next + 14 && rest[length + next..].starts_with(b"@@ -") {
                            return Err(self.error(
                                self.line,
                                "not a git diff (a `---`/`+++` pair without a `diff --git` header); make the patch with `git format-patch`",
                            ));
                        }
                    }
                }
            }
            offset += length;
            self.line += 1;
        }
    }

    /// A `diff --git` line (of `length` bytes, at the start of `text`) and its extended header
    /// lines: the header's size and what it says.
    fn git_header(&mut self, text: &[u8], length: usize) -> Result<(usize, FilePatch), ParseError> {
        let mut patch = FilePatch {
            line: self.line,
            ..FilePatch::default()
        };
        let default_name = git_header_name(&text[..length]);
        let mut offset = length;
        self.line += 1;
        let mut extension_line = 0;
        while offset < text.len() {
            let rest = &text[offset..];
            let length = line_length(rest);
            if length == 0 || rest[length - 1] != b'\n' {
                break;
            }
            let line = &rest[..length];
            match self.header_line(line, &mut patch, default_name.as_deref())? {
                HeaderLine::End => break,
                HeaderLine::Continue => {}
            }
            let extensions = usize::from(patch.is_delete)
                + usize::from(patch.is_new)
                + usize::from(patch.is_rename)
                + usize::from(patch.is_copy);
            if extensions > 1 {
                return Err(self.error(
                    self.line,
                    format!(
                        "inconsistent header lines {extension_line} and {}",
                        self.line
                    ),
                ));
            }
            if extensions > 0 && extension_line == 0 {
                extension_line = self.line;
            }
            offset += length;
            self.line += 1;
        }
        if patch.old_name.is_none() && patch.new_name.is_none() {
            let Some(name) = default_name else {
                return Err(self.error(
                    self.line,
                    "git diff header lacks filename information when removing 1 leading pathname component",
                ));
            };
            patch.old_name = Some(name.clone());
            patch.new_name = Some(name);
        }
        if (patch.new_name.is_none() && !patch.is_delete)
            || (patch.old_name.is_none() && !patch.is_new)
        {
            return Err(self.error(self.line, "git diff header lacks filename information"));
        }
        Ok((offset, patch))
    }

    fn header_line(
        &mut self,
        line: &[u8],
        patch: &mut FilePatch,
        default_name: Option<&[u8]>,
    ) -> Result<HeaderLine, ParseError> {
        let value = |prefix: &[u8]| line.strip_prefix(prefix);
        if line.starts_with(b"@@ -") {
            return Ok(HeaderLine::End);
        }
        if let Some(rest) = value(b"--- ") {
            let is_null = patch.is_new;
            self.verify_name(rest, is_null, &mut patch.old_name, "old")?;
        } else if let Some(rest) = value(b"+++ ") {
            let is_null = patch.is_delete;
            self.verify_name(rest, is_null, &mut patch.new_name, "new")?;
        } else if let Some(rest) = value(b"old mode ") {
            patch.old_mode = self.mode(rest)?;
        } else if let Some(rest) = value(b"new mode ") {
            patch.new_mode = self.mode(rest)?;
        } else if let Some(rest) = value(b"deleted file mode ") {
            patch.is_delete = true;
            patch.old_name = default_name.map(<[u8]>::to_vec);
            patch.old_mode = self.mode(rest)?;
        } else if let Some(rest) = value(b"new file mode ") {
            patch.is_new = true;
            patch.new_name = default_name.map(<[u8]>::to_vec);
            patch.new_mode = self.mode(rest)?;
        } else if let Some(rest) = value(b"copy from ") {
            patch.is_copy = true;
            patch.old_name = find_name(rest, None, 0, 0);
        } else if let Some(rest) = value(b"copy to ") {
            patch.is_copy = true;
            patch.new_name = find_name(rest, None, 0, 0);
        } else if let Some(rest) = value(b"rename old ").or_else(|| value(b"rename from ")) {
            patch.is_rename = true;
            patch.old_name = find_name(rest, None, 0, 0);
        } else if let Some(rest) = value(b"rename new ").or_else(|| value(b"rename to ")) {
            patch.is_rename = true;
            patch.new_name = find_name(rest, None, 0, 0);
        } else if value(b"similarity index ").is_some() || value(b"dissimilarity index ").is_some()
        {
        } else if let Some(rest) = value(b"index ") {
            self.index_line(rest, patch)?;
        } else {
            return Ok(HeaderLine::End);
        }
        Ok(HeaderLine::Continue)
    }

    /// A `---` or `+++` name against what the header already said.
    fn verify_name(
        &self,
        line: &[u8],
        is_null: bool,
        name: &mut Option<Vec<u8>>,
        side: &str,
    ) -> Result<(), ParseError> {
        match name {
            None if !is_null => {
                *name = find_name(line, None, 1, TERMINATE_TAB);
                Ok(())
            }
            Some(existing) => {
                if is_null {
                    return Err(self.error(
                        self.line,
                        format!(
                            "bad git-diff - expected /dev/null, got {}",
                            String::from_utf8_lossy(existing)
                        ),
                    ));
                }
                let another = find_name(line, None, 1, TERMINATE_TAB);
                if another.as_deref() != Some(existing.as_slice()) {
                    return Err(self.error(
                        self.line,
                        format!("bad git-diff - inconsistent {side} filename"),
                    ));
                }
                Ok(())
            }
            None => {
                if !is_dev_null(line) {
                    return Err(self.error(self.line, "bad git-diff - expected /dev/null"));
                }
                Ok(())
            }
        }
    }

    /// An octal mode followed by whitespace, made canonical as git makes it.
    fn mode(&self, text: &[u8]) -> Result<u32, ParseError> {
        let digits = text
            .iter()
            .take_while(|c| (b'0'..=b'7').contains(c))
            .count();
        let valid = digits > 0 && text.get(digits).is_some_and(|&c| is_space(c));
        if !valid {
            return Err(self.error(
                self.line,
                format!(
                    "invalid mode: {}",
                    String::from_utf8_lossy(text.trim_ascii_end())
                ),
            ));
        }
        let value = text[..digits].iter().fold(0u64, |value, &digit| {
            (value << 3 | u64::from(digit - b'0')) & 0xffff_ffff
        });
        Ok(canonical_mode(value as u32))
    }

    /// `index abc1234..def5678[ mode]`.
    fn index_line(&self, text: &[u8], patch: &mut FilePatch) -> Result<(), ParseError> {
        let line = &text[..line_length(text)];
        let Some(dots) = line.iter().position(|&c| c == b'.') else {
            return Ok(());
        };
        if line.get(dots + 1) != Some(&b'.') || dots > 40 {
            return Ok(());
        }
        patch.old_id = String::from_utf8_lossy(&line[..dots]).into_owned();
        let rest = &line[dots + 2..];
        let end_of_line = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        let end = rest[..end_of_line]
            .iter()
            .position(|&c| c == b' ')
            .unwrap_or(end_of_line);
        if end > 40 {
            return Ok(());
        }
        patch.new_id = String::from_utf8_lossy(&rest[..end]).into_owned();
        if rest.get(end) == Some(&b' ') {
            patch.old_mode = self.mode(&rest[end + 1..])?;
        }
        Ok(())
    }

    /// The text hunks from `start`: how many bytes they take (0 when there is none).
    fn fragments(&mut self, start: usize, patch: &mut FilePatch) -> Result<usize, ParseError> {
        let mut offset = 0;
        let (mut old_lines, mut new_lines) = (0usize, 0usize);
        loop {
            let rest = &self.text[start + offset..];
            if rest.len() <= 4 || !rest.starts_with(b"@@ -") {
                break;
            }
            let line = self.line;
            let Some(fragment) = self.fragment(rest) else {
                return Err(self.error(
                    line.max(self.line),
                    "corrupt patch (a hunk whose lines do not match its header)",
                ));
            };
            old_lines += fragment.old_lines;
            new_lines += fragment.new_lines;
            offset += fragment.text.len();
            patch.fragments.push(Fragment { line, ..fragment });
        }
        if patch.is_new && old_lines > 0 {
            return Err(self.error(
                self.line,
                format!("new file {} depends on old contents", patch.name()),
            ));
        }
        if patch.is_delete && new_lines > 0 {
            return Err(self.error(
                self.line,
                format!("deleted file {} still has contents", patch.name()),
            ));
        }
        Ok(offset)
    }

    /// One hunk at the start of `text`, or `None` when it is corrupt.
    fn fragment(&mut self, text: &[u8]) -> Option<Fragment> {
        let header_length = line_length(text);
        let (old_pos, old_lines, new_pos, new_lines) =
            parse_fragment_header(&text[..header_length])?;
        let (mut old_left, mut new_left) = (old_lines as u64, new_lines as u64);
        let (mut leading, mut trailing) = (0usize, 0usize);
        let (mut added, mut deleted) = (0usize, 0usize);
        let mut offset = header_length;
        self.line += 1;
        while offset < text.len() {
            if old_left == 0 && new_left == 0 {
                break;
            }
            let rest = &text[offset..];
            let mut length = line_length(rest);
            if length == 0 || rest[length - 1] != b'\n' {
                return None;
            }
            let incomplete = incomplete_marker(rest, length);
            match rest[0] {
                b'\n' | b' ' => {
                    old_left = old_left.wrapping_sub(1);
                    new_left = new_left.wrapping_sub(1);
                    if deleted == 0 && added == 0 {
                        leading += 1;
                    }
                    trailing += 1;
                }
                b'-' => {
                    deleted += 1;
                    old_left = old_left.wrapping_sub(1);
                    trailing = 0;
                }
                b'+' => {
                    added += 1;
                    new_left = new_left.wrapping_sub(1);
                    trailing = 0;
                }
                _ => return None,
            }
            if incomplete > 0 {
                length += incomplete;
                self.line += 1;
            }
            offset += length;
            self.line += 1;
        }
        if old_left != 0 || new_left != 0 || (deleted == 0 && added == 0) {
            return None;
        }
        Some(Fragment {
            old_pos,
            old_lines,
            new_pos,
            new_lines,
            leading,
            trailing,
            text: text[..offset].to_vec(),
            reversed: false,
            line: 0,
        })
    }

    /// `GIT binary patch` data from `start`: the bytes it takes and its one or two hunks;
    /// `None` when the first hunk is missing or either is corrupt.
    fn binary(&mut self, start: usize) -> Option<(usize, Vec<BinaryHunk>)> {
        let (used, forward) = binary::parse_hunk(&self.text[start..])?;
        let mut hunks = vec![forward.ok()?];
        let mut total = used;
        if let Some((used, reverse)) = binary::parse_hunk(&self.text[start + total..]) {
            hunks.push(reverse.ok()?);
            total += used;
        }
        self.line += self.text[start..start + total]
            .iter()
            .filter(|&&c| c == b'\n')
            .count();
        Some((total, hunks))
    }
}

/// The length of a `\ No newline at end of file` line after the `length`-byte line at the
/// start of `text`, or 0.
fn incomplete_marker(text: &[u8], length: usize) -> usize {
    if !matches!(text[0], b'\n' | b' ' | b'+' | b'-') {
        return 0;
    }
    let next = &text[length..];
    if next.len() < 12 || !next.starts_with(b"\\ ") {
        return 0;
    }
    let marker = line_length(next);
    if marker < 12 { 0 } else { marker }
}

/// `@@ -a[,b] +c[,d] @@`: the four numbers (a missing count is 1).
pub(crate) fn parse_fragment_header(line: &[u8]) -> Option<(usize, usize, usize, usize)> {
    if !line.ends_with(b"\n") {
        return None;
    }
    let (old_pos, old_lines, offset) = parse_range(line, 4, b" +")?;
    let (new_pos, new_lines, _) = parse_range(line, offset, b" @@")?;
    Some((old_pos, old_lines, new_pos, new_lines))
}

fn parse_range(line: &[u8], offset: usize, expect: &[u8]) -> Option<(usize, usize, usize)> {
    let number = |at: usize| -> Option<(usize, usize)> {
        let digits = line
            .get(at..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        let text = std::str::from_utf8(&line[at..at + digits]).ok()?;
        Some((text.parse().ok()?, digits))
    };
    let (first, digits) = number(offset)?;
    let mut at = offset + digits;
    let mut second = 1;
    if line.get(at) == Some(&b',') {
        let (value, digits) = number(at + 1)?;
        second = value;
        at += 1 + digits;
    }
    if !line.get(at..)?.starts_with(expect) {
        return None;
    }
    Some((first, second, at + expect.len()))
}

/// git's `canon_mode`: a regular file is 100644 or 100755, a link 120000, a folder 040000, and
/// anything else a gitlink.
pub fn canonical_mode(mode: u32) -> u32 {
    match mode & TYPE_MASK {
        REGULAR => REGULAR | if mode & 0o100 != 0 { 0o755 } else { 0o644 },
        SYMLINK => SYMLINK,
        DIRECTORY => DIRECTORY,
        _ => GITLINK,
    }
}

fn is_dev_null(line: &[u8]) -> bool {
    line.strip_prefix(b"/dev/null")
        .is_some_and(|rest| rest.first().is_some_and(|&c| is_space(c)))
}

/// A name after `---`/`+++` (or `rename from` etc. with `p_value` 0): C-quoted, or bare up to
/// the end of the line (or a tab, or a space, as `terminate` says); `p_value` leading folders
/// dropped, doubled slashes made single.
fn find_name(
    line: &[u8],
    default: Option<&[u8]>,
    p_value: usize,
    terminate: u8,
) -> Option<Vec<u8>> {
    if line.first() == Some(&b'"')
        && let Some(name) = find_name_quoted(line, p_value)
    {
        return Some(name);
    }
    let mut remaining = p_value as i64;
    let mut start = (p_value == 0).then_some(0);
    let mut at = 0;
    while at < line.len() {
        let c = line[at];
        if is_space(c) {
            if c == b'\n' {
                break;
            }
            let keeps = (c == b' ' && terminate & TERMINATE_SPACE == 0)
                || (c == b'\t' && terminate & TERMINATE_TAB == 0);
            if !keeps {
                break;
            }
        }
        at += 1;
        if c == b'/' {
            remaining -= 1;
            if remaining == 0 {
                start = Some(at);
            }
        }
    }
    let Some(start) = start else {
        return default.map(squash_slash);
    };
    let name = &line[start..at];
    if name.is_empty() {
        return default.map(squash_slash);
    }
    if let Some(default) = default
        && default.len() < name.len()
        && name.starts_with(default)
    {
        return Some(squash_slash(default));
    }
    Some(squash_slash(name))
}

fn find_name_quoted(line: &[u8], p_value: usize) -> Option<Vec<u8>> {
    let (name, _) = unquote_c_style(line)?;
    let mut at = 0;
    for _ in 0..p_value {
        at += name[at..].iter().position(|&c| c == b'/')? + 1;
    }
    Some(squash_slash(&name[at..]))
}

fn squash_slash(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for &c in name {
        if c == b'/' && out.last() == Some(&b'/') {
            continue;
        }
        out.push(c);
    }
    out
}

/// A C-style quoted string at the start of `text`: its value and the bytes it took, or `None`
/// when it is not one git would write.
pub(crate) fn unquote_c_style(text: &[u8]) -> Option<(Vec<u8>, usize)> {
    if text.first() != Some(&b'"') {
        return None;
    }
    let mut out = Vec::new();
    let mut at = 1;
    loop {
        let c = *text.get(at)?;
        at += 1;
        match c {
            b'"' => return Some((out, at)),
            b'\\' => {
                let next = *text.get(at)?;
                at += 1;
                let value = match next {
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 11,
                    b'\\' | b'"' => next,
                    b'0'..=b'3' => {
                        let digits = text.get(at..at + 2)?;
                        if !digits.iter().all(|c| (b'0'..=b'7').contains(c)) {
                            return None;
                        }
                        at += 2;
                        ((next - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
                    }
                    _ => return None,
                };
                out.push(value);
            }
            b'\n' | 0 => return None,
            _ => out.push(c),
        }
    }
}

/// Drops `p_value` leading folders of a bare name; `None` when the name is absolute or has
/// fewer folders.
fn skip_tree_prefix(name: &[u8], p_value: usize) -> Option<usize> {
    if p_value == 0 {
        return (name.first() != Some(&b'/')).then_some(0);
    }
    let mut remaining = p_value;
    for (at, &c) in name.iter().enumerate() {
        if c == b'/' {
            remaining -= 1;
            if remaining == 0 {
                return (at != 0).then_some(at + 1);
            }
        }
    }
    None
}

/// The name of a `diff --git a/name b/name` line when both sides name the same file (used for
/// mode changes and empty files, which have no `---`/`+++` lines).
fn git_header_name(line: &[u8]) -> Option<Vec<u8>> {
    let rest = line.strip_prefix(b"diff --git ")?;
    if rest.first() == Some(&b'"') {
        let (first, used) = unquote_c_style(rest)?;
        let first = first[skip_tree_prefix(&first, 1)?..].to_vec();
        let mut second = &rest[used..];
        while second.first().is_some_and(|&c| is_space(c)) {
            second = &second[1..];
        }
        if second.is_empty() {
            return None;
        }
        if second[0] == b'"' {
            let (other, _) = unquote_c_style(second)?;
            let other = &other[skip_tree_prefix(&other, 1)?..];
            return (other == first.as_slice()).then_some(first);
        }
        let start = skip_tree_prefix(second, 1)?;
        let other = &second[start..];
        let other = other.strip_suffix(b"\n").unwrap_or(other);
        return (other == first.as_slice()).then_some(first);
    }
    let name_start = skip_tree_prefix(rest, 1)?;
    let name = &rest[name_start..];
    if let Some(quote) = name.iter().position(|&c| c == b'"') {
        let (other, _) = unquote_c_style(&name[quote..])?;
        let other = &other[skip_tree_prefix(&other, 1)?..];
        let length = other.len();
        if length < quote
            && name.starts_with(other)
            && name.get(length).is_some_and(|&c| is_space(c))
        {
            return Some(other.to_vec());
        }
        return None;
    }
    let line_end = name.iter().position(|&c| c == b'\n')?;
    for length in 0..line_end {
        let c = name[length];
        if c != b' ' && c != b'\t' {
            continue;
        }
        let after = &name[length + 1..line_end];
        let Some(skip) = skip_tree_prefix(after, 1) else {
            continue;
        };
        let second = &after[skip..];
        if second.len() == length && second == &name[..length] {
            return Some(name[..length].to_vec());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_modification() {
        let text = b"---\n f | 2 +-\n\ndiff --git a/f b/f\nindex 7898192..6178079 100644\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n-- \n2.47.3\n";
        let patches = parse(text).unwrap();
        assert_eq!(patches.len(), 1);
        let patch = &patches[0];
        assert_eq!(patch.old_name.as_deref(), Some(&b"f"[..]));
        assert_eq!(patch.old_mode, 0o100644);
        assert_eq!(patch.old_id, "7898192");
        assert_eq!(patch.fragments.len(), 1);
        assert_eq!(patch.fragments[0].leading, 1);
        assert_eq!(patch.fragments[0].trailing, 0);
        assert_eq!(patch.line, 4);
    }

    #[test]
    fn names_with_spaces_come_from_the_header() {
        let text = b"diff --git a/x y b/x y\nnew file mode 100644\nindex 0000000..e69de29\n";
        let patches = parse(text).unwrap();
        assert_eq!(patches[0].new_name.as_deref(), Some(&b"x y"[..]));
        assert!(patches[0].is_new);
    }

    #[test]
    fn refuses_a_truncated_hunk() {
        let text = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n";
        let error = parse(text).unwrap_err();
        assert!(error.reason.contains("corrupt patch"), "{error}");
    }

    #[test]
    fn a_gitlink_mode_is_canonical() {
        assert_eq!(canonical_mode(0o160000), GITLINK);
        assert_eq!(canonical_mode(0o100664), 0o100644);
        assert_eq!(canonical_mode(0o100775), 0o100755);
    }
}
