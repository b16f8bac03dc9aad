//! The text of a git diff made ready for libgit2, and the paths it names.
//!
//! git writes a name with spaces bare (`rename from old name.txt`, `--- a/old name.txt<TAB>`),
//! while libgit2's parser stops a path at the first space; so such names are rewritten in the
//! quoted form git itself uses for unusual names (`"a/old name.txt"`), which libgit2 reads. The
//! paths are collected as written, before libgit2 tidies them (it turns `a//etc/passwd` into
//! `etc/passwd`), so that the safety check sees what the patch asked for.

/// A diff ready for `git2::Diff::from_buffer`, and every path its headers name.
#[derive(Debug, Clone)]
pub struct DiffText {
    /// The diff with names that hold whitespace quoted.
    pub bytes: Vec<u8>,
    /// Every path named by a header (`diff --git`, `---`, `+++`, `rename`, `copy`), without
    /// its `a/` or `b/` prefix and unquoted; `/dev/null` left out.
    pub paths: Vec<String>,
}

/// Rewrites the header lines of `diff` and collects their paths; hunk and binary lines are
/// copied as they are.
pub fn prepare(diff: &[u8]) -> DiffText {
    let mut bytes = Vec::with_capacity(diff.len() + 64);
    let mut paths = Vec::new();
    // Lines of the current hunk still to come, on the old and the new side.
    let mut remaining = (0usize, 0usize);
    let mut block: Option<Block> = None;
    for line in diff.split_inclusive(|&byte| byte == b'\n') {
        if remaining != (0, 0) {
            match line.first() {
                Some(b'+') => remaining.1 = remaining.1.saturating_sub(1),
                Some(b'-') => remaining.0 = remaining.0.saturating_sub(1),
                Some(b'\\') => {}
                _ => {
                    remaining.0 = remaining.0.saturating_sub(1);
                    remaining.1 = remaining.1.saturating_sub(1);
                }
            }
            bytes.extend_from_slice(line);
            continue;
        }
        let (content, ending) = match line.strip_suffix(b"\n") {
            Some(content) => (content, &b"\n"[..]),
            None => (line, &b""[..]),
        };
        if let Some(rest) = content.strip_prefix(b"diff --git ") {
            if let Some(block) = block.take() {
                block.finish(&mut bytes);
            }
            match split_git_header(rest) {
                Some((old, new)) => {
                    block = Some(Block {
                        old: quote_if_spaced(&old),
                        new: quote_if_spaced(&new),
                        creates: false,
                        deletes: false,
                        has_body: false,
                    });
                    paths.extend([strip_side(&old, b"a/"), strip_side(&new, b"b/")]);
                    bytes.extend_from_slice(b"diff --git ");
                    bytes.extend_from_slice(&quote_if_spaced(&old));
                    bytes.push(b' ');
                    bytes.extend_from_slice(&quote_if_spaced(&new));
                    bytes.extend_from_slice(ending);
                }
                None => bytes.extend_from_slice(line),
            }
            continue;
        }
        if content.starts_with(b"@@ ") {
            remaining = hunk_counts(content).unwrap_or((0, 0));
            bytes.extend_from_slice(line);
            continue;
        }
        let headers: [(&[u8], &[u8]); 6] = [
            (b"--- ", b"a/"),
            (b"+++ ", b"b/"),
            (b"rename from ", b""),
            (b"rename to ", b""),
            (b"copy from ", b""),
            (b"copy to ", b""),
        ];
        if let Some(block) = &mut block {
            block.creates |= content.starts_with(b"new file mode ");
            block.deletes |= content.starts_with(b"deleted file mode ");
            block.has_body |= content.starts_with(b"--- ")
                || content.starts_with(b"GIT binary patch")
                || content.starts_with(b"Binary files ");
        }
        let header = headers
            .iter()
            .find(|(prefix, _)| content.starts_with(prefix));
        match header {
            Some((prefix, side)) => {
                let mut name = &content[prefix.len()..];
                // git ends a `---`/`+++` name that holds a space with a tab.
                if prefix.len() == 4 {
                    name = name.strip_suffix(b"\t").unwrap_or(name);
                }
                let name = name.to_vec();
                if name != b"/dev/null" {
                    paths.push(strip_side(&name, side));
                }
                bytes.extend_from_slice(prefix);
                bytes.extend_from_slice(&quote_if_spaced(&name));
                bytes.extend_from_slice(ending);
            }
            None => bytes.extend_from_slice(line),
        }
    }
    if let Some(block) = block.take() {
        if !bytes.ends_with(b"\n") && !bytes.is_empty() {
            bytes.push(b'\n');
        }
        block.finish(&mut bytes);
    }
    paths.sort();
    paths.dedup();
    DiffText { bytes, paths }
}

/// One file of the diff, while its header is read.
struct Block {
    old: Vec<u8>,
    new: Vec<u8>,
    creates: bool,
    deletes: bool,
    has_body: bool,
}

impl Block {
    /// An empty file created or deleted has a header only (`new file mode`, `index`), and
    /// libgit2 refuses a `diff --git` right after an `index` line: give it the `---`/`+++`
    /// pair git leaves out, which says the same thing.
    fn finish(self, bytes: &mut Vec<u8>) {
        if self.has_body {
            return;
        }
        if self.creates {
            bytes.extend_from_slice(b"--- /dev/null\n+++ ");
            bytes.extend_from_slice(&self.new);
            bytes.push(b'\n');
        } else if self.deletes {
            bytes.extend_from_slice(b"--- ");
            bytes.extend_from_slice(&self.old);
            bytes.extend_from_slice(b"\n+++ /dev/null\n");
        }
    }
}

/// The two names of `a/x b/y` (quoted names kept quoted). Unquoted names with spaces are split
/// evenly when both sides name the same file, else at the last ` b/`.
pub(crate) fn split_git_header(rest: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    if rest.starts_with(b"\"") {
        let end = closing_quote(rest)?;
        let old = rest[..=end].to_vec();
        let new = rest.get(end + 2..)?.to_vec();
        return Some((old, new));
    }
    if rest.len() % 2 == 1 {
        let half = (rest.len() - 1) / 2;
        let (old, tail) = rest.split_at(half);
        if tail.starts_with(b" b/") && old.starts_with(b"a/") && tail[3..] == old[2..] {
            return Some((old.to_vec(), tail[1..].to_vec()));
        }
    }
    let split = rest.windows(3).rposition(|window| window == b" b/")?;
    Some((rest[..split].to_vec(), rest[split + 1..].to_vec()))
}

fn closing_quote(text: &[u8]) -> Option<usize> {
    let mut escaped = false;
    for (index, &byte) in text.iter().enumerate().skip(1) {
        match byte {
            b'\\' if !escaped => escaped = true,
            b'"' if !escaped => return Some(index),
            _ => escaped = false,
        }
    }
    None
}

/// `"a/x y"` stays; `a/x y` becomes `"a/x y"`; names without whitespace stay bare.
fn quote_if_spaced(name: &[u8]) -> Vec<u8> {
    if name.starts_with(b"\"") || !name.iter().any(u8::is_ascii_whitespace) {
        return name.to_vec();
    }
    let mut quoted = Vec::with_capacity(name.len() + 2);
    quoted.push(b'"');
    for &byte in name {
        match byte {
            b'"' | b'\\' => quoted.extend_from_slice(&[b'\\', byte]),
            b'\t' => quoted.extend_from_slice(b"\\t"),
            b'\n' => quoted.extend_from_slice(b"\\n"),
            _ => quoted.push(byte),
        }
    }
    quoted.push(b'"');
    quoted
}

/// The name without quotes and without its `a/` or `b/` side prefix.
fn strip_side(name: &[u8], side: &[u8]) -> String {
    let name = unquote(name);
    let name = name.strip_prefix(side).unwrap_or(&name);
    String::from_utf8_lossy(name).into_owned()
}

/// Undoes git's C-style quoting (`\"`, `\\`, `\t`, `\n`, `\ooo`).
fn unquote(name: &[u8]) -> Vec<u8> {
    let Some(inner) = name
        .strip_prefix(b"\"")
        .and_then(|rest| rest.strip_suffix(b"\""))
    else {
        return name.to_vec();
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut index = 0;
    while index < inner.len() {
        let byte = inner[index];
        if byte != b'\\' || index + 1 >= inner.len() {
            out.push(byte);
            index += 1;
            continue;
        }
        let next = inner[index + 1];
        let octal = inner
            .get(index + 1..index + 4)
            .filter(|digits| digits.iter().all(|digit| (b'0'..=b'7').contains(digit)));
        if let Some(digits) = octal {
            let value = digits
                .iter()
                .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
            out.push(value as u8);
            index += 4;
            continue;
        }
        out.push(match next {
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            other => other,
        });
        index += 2;
    }
    out
}

/// The old and new line counts of a hunk header `@@ -a,b +c,d @@`.
fn hunk_counts(header: &[u8]) -> Option<(usize, usize)> {
    let text = std::str::from_utf8(header).ok()?;
    let inner = text.strip_prefix("@@ ")?;
    let ranges = &inner[..inner.find(" @@")?];
    let (old, new) = ranges.split_once(' ')?;
    let count = |range: &str| -> Option<usize> {
        match range.split_once(',') {
            Some((_, count)) => count.parse().ok(),
            None => Some(1),
        }
    };
    Some((
        count(old.strip_prefix('-')?)?,
        count(new.strip_prefix('+')?)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_renamed_names_with_spaces_and_collects_paths() {
        let diff = b"diff --git a/old name.txt b/new name.txt\nsimilarity index 97%\nrename from old name.txt\nrename to new name.txt\nindex 4985d79..17d86f6 100644\n--- a/old name.txt\t\n+++ b/new name.txt\t\n@@ -1 +1 @@\n--- a/inside a hunk\n+x\n";
        let prepared = prepare(diff);
        assert_eq!(
            String::from_utf8(prepared.bytes).unwrap(),
            "diff --git \"a/old name.txt\" \"b/new name.txt\"\nsimilarity index 97%\nrename from \"old name.txt\"\nrename to \"new name.txt\"\nindex 4985d79..17d86f6 100644\n--- \"a/old name.txt\"\n+++ \"b/new name.txt\"\n@@ -1 +1 @@\n--- a/inside a hunk\n+x\n"
        );
        assert_eq!(prepared.paths, ["new name.txt", "old name.txt"]);
    }

    #[test]
    fn gives_an_empty_new_file_its_path_lines() {
        let diff = b"diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\ndiff --git a/x b/x\nold mode 100644\nnew mode 100755\n";
        let prepared = prepare(diff);
        assert_eq!(
            String::from_utf8(prepared.bytes.clone()).unwrap(),
            "diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/empty\ndiff --git a/x b/x\nold mode 100644\nnew mode 100755\n"
        );
        let diff = git2::Diff::from_buffer(&prepared.bytes).expect("libgit2 reads it");
        assert_eq!(diff.deltas().len(), 2);
        assert_eq!(diff.get_delta(0).unwrap().status(), git2::Delta::Added);
    }

    #[test]
    fn keeps_what_libgit2_would_tidy_away() {
        let prepared =
            prepare(b"diff --git a//etc/passwd b//etc/passwd\n--- /dev/null\n+++ b//etc/passwd\n");
        assert_eq!(prepared.paths, ["/etc/passwd"]);
    }
}
