//! A git diff turned around: the text that undoes it. libgit2 cannot apply in reverse, and
//! "it reverse-applies cleanly" is how forge recognises a change that is already in the tree.

/// The reverse of the git diff `diff`, or `None` when it holds something that has no clean
/// reverse (a copy, or a binary change without its reverse half).
pub fn reverse(diff: &[u8]) -> Option<Vec<u8>> {
    let lines: Vec<&[u8]> = diff.split_inclusive(|&byte| byte == b'\n').collect();
    let mut out = Vec::with_capacity(diff.len());
    let mut index = 0;
    // Lines of the current hunk still to come, on the old and the new side.
    let mut remaining = (0usize, 0usize);
    // A run of changed lines, reversed but held back so that removals come before additions,
    // the order git writes and libgit2 expects. A `\ No newline` marker stays with its line.
    let mut removals: Vec<u8> = Vec::new();
    let mut additions: Vec<u8> = Vec::new();
    let mut last_was_addition = false;
    let flush = |out: &mut Vec<u8>, removals: &mut Vec<u8>, additions: &mut Vec<u8>| {
        out.append(removals);
        out.append(additions);
    };
    while index < lines.len() {
        let line = lines[index];
        let in_hunk = remaining != (0, 0);
        if in_hunk || line.starts_with(b"\\") {
            match line.first() {
                Some(b'+') if in_hunk => {
                    removals.push(b'-');
                    removals.extend_from_slice(&line[1..]);
                    last_was_addition = false;
                    remaining.1 = remaining.1.checked_sub(1)?;
                }
                Some(b'-') if in_hunk => {
                    additions.push(b'+');
                    additions.extend_from_slice(&line[1..]);
                    last_was_addition = true;
                    remaining.0 = remaining.0.checked_sub(1)?;
                }
                Some(b'\\') if removals.is_empty() && additions.is_empty() => {
                    out.extend_from_slice(line)
                }
                Some(b'\\') if last_was_addition => additions.extend_from_slice(line),
                Some(b'\\') => removals.extend_from_slice(line),
                // A context line; an empty one may have lost its space in transit.
                Some(b' ' | b'\n') if in_hunk => {
                    flush(&mut out, &mut removals, &mut additions);
                    out.extend_from_slice(line);
                    remaining.0 = remaining.0.checked_sub(1)?;
                    remaining.1 = remaining.1.checked_sub(1)?;
                }
                _ => return None,
            }
            index += 1;
            continue;
        }
        flush(&mut out, &mut removals, &mut additions);
        if let Some(rest) = line.strip_prefix(b"diff --git ") {
            out.extend_from_slice(b"diff --git ");
            out.extend_from_slice(&swap_git_header_paths(rest)?);
        } else if line.starts_with(b"@@ ") {
            let (header, counts) = swap_hunk_header(line)?;
            out.extend_from_slice(&header);
            remaining = counts;
        } else if let Some(path) = line.strip_prefix(b"--- ") {
            // `--- a/x` and `+++ b/y` trade places (and prefixes).
            let next = lines.get(index + 1)?;
            let new_path = next.strip_prefix(b"+++ ")?;
            out.extend_from_slice(b"--- ");
            out.extend_from_slice(&swap_prefix(new_path, b"b/", b"a/"));
            out.extend_from_slice(b"+++ ");
            out.extend_from_slice(&swap_prefix(path, b"a/", b"b/"));
            index += 2;
            continue;
        } else if let Some(mode) = line.strip_prefix(b"new file mode ") {
            out.extend_from_slice(b"deleted file mode ");
            out.extend_from_slice(mode);
        } else if let Some(mode) = line.strip_prefix(b"deleted file mode ") {
            out.extend_from_slice(b"new file mode ");
            out.extend_from_slice(mode);
        } else if line.starts_with(b"old mode ") {
            let next = lines.get(index + 1)?;
            let new_mode = next.strip_prefix(b"new mode ")?;
            out.extend_from_slice(b"old mode ");
            out.extend_from_slice(new_mode);
            out.extend_from_slice(b"new mode ");
            out.extend_from_slice(&line[b"old mode ".len()..]);
            index += 2;
            continue;
        } else if let Some(from) = line.strip_prefix(b"rename from ") {
            let next = lines.get(index + 1)?;
            let to = next.strip_prefix(b"rename to ")?;
            out.extend_from_slice(b"rename from ");
            out.extend_from_slice(to);
            out.extend_from_slice(b"rename to ");
            out.extend_from_slice(from);
            index += 2;
            continue;
        } else if line.starts_with(b"copy from ") || line.starts_with(b"Binary files ") {
            return None;
        } else if let Some(ids) = line.strip_prefix(b"index ") {
            out.extend_from_slice(b"index ");
            out.extend_from_slice(&swap_index_line(ids)?);
        } else if line.starts_with(b"GIT binary patch") {
            out.extend_from_slice(line);
            let (forward, after_forward) = binary_block(&lines, index + 1)?;
            let (backward, after_backward) = binary_block(&lines, after_forward)?;
            if backward.is_empty() {
                return None;
            }
            for block_line in backward.iter().chain(forward.iter()) {
                out.extend_from_slice(block_line);
            }
            index = after_backward;
            continue;
        } else {
            out.extend_from_slice(line);
        }
        index += 1;
    }
    flush(&mut out, &mut removals, &mut additions);
    Some(out)
}

/// A `literal N` / `delta N` block of a binary patch with its blank line, starting at `start`,
/// and the index after it. An empty block means there is none there.
fn binary_block<'a>(lines: &[&'a [u8]], start: usize) -> Option<(Vec<&'a [u8]>, usize)> {
    let Some(first) = lines.get(start) else {
        return Some((Vec::new(), start));
    };
    if !(first.starts_with(b"literal ") || first.starts_with(b"delta ")) {
        return Some((Vec::new(), start));
    }
    let mut block = vec![*first];
    let mut index = start + 1;
    while let Some(line) = lines.get(index) {
        block.push(line);
        index += 1;
        if line.trim_ascii().is_empty() {
            return Some((block, index));
        }
    }
    // A block that runs to the end of the text lacks its closing blank line.
    block.push(b"\n");
    Some((block, index))
}

/// `a/x b/y` becomes `a/y b/x` (quoted names too).
fn swap_git_header_paths(rest: &[u8]) -> Option<Vec<u8>> {
    let text = rest.strip_suffix(b"\n").unwrap_or(rest);
    let (old, new) = super::diff_text::split_git_header(text)?;
    let mut out = Vec::with_capacity(rest.len());
    out.extend_from_slice(&swap_prefix(&new, b"b/", b"a/"));
    out.push(b' ');
    out.extend_from_slice(&swap_prefix(&old, b"a/", b"b/"));
    out.push(b'\n');
    Some(out)
}

/// `a/x` becomes `b/x`, `"a/x y"` becomes `"b/x y"`; other names stay.
fn swap_prefix(path_line: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let (quote, name) = match path_line.strip_prefix(b"\"") {
        Some(rest) => (&b"\""[..], rest),
        None => (&b""[..], path_line),
    };
    match name.strip_prefix(from) {
        Some(rest) => [quote, to, rest].concat(),
        None => path_line.to_vec(),
    }
}

/// `@@ -a,b +c,d @@ rest` becomes `@@ -c,d +a,b @@ rest`; also returns the line counts
/// `(b, d)` of the original hunk.
fn swap_hunk_header(line: &[u8]) -> Option<(Vec<u8>, (usize, usize))> {
    let text = std::str::from_utf8(line).ok()?;
    let inner = text.strip_prefix("@@ ")?;
    let end = inner.find(" @@")?;
    let (ranges, rest) = inner.split_at(end);
    let (old, new) = ranges.split_once(' ')?;
    let old = old.strip_prefix('-')?;
    let new = new.strip_prefix('+')?;
    let count = |range: &str| -> Option<usize> {
        match range.split_once(',') {
            Some((_, count)) => count.parse().ok(),
            None => Some(1),
        }
    };
    let counts = (count(old)?, count(new)?);
    Some((format!("@@ -{new} +{old}{rest}").into_bytes(), counts))
}

/// `abc..def 100644` becomes `def..abc 100644`.
fn swap_index_line(ids: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(ids).ok()?;
    let (range, mode) = match text.trim_end().split_once(' ') {
        Some((range, mode)) => (range, Some(mode)),
        None => (text.trim_end(), None),
    };
    let (old, new) = range.split_once("..")?;
    Some(match mode {
        Some(mode) => format!("{new}..{old} {mode}\n").into_bytes(),
        None => format!("{new}..{old}\n").into_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_sides_of_a_text_hunk() {
        let diff = b"diff --git a/f b/f\nindex 7898192..422c2b7 100644\n--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n a\n+b\n";
        let reversed = reverse(diff).expect("reversible");
        assert_eq!(
            String::from_utf8(reversed).unwrap(),
            "diff --git a/f b/f\nindex 422c2b7..7898192 100644\n--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n a\n-b\n"
        );
    }

    #[test]
    fn keeps_removals_before_additions_and_markers_with_their_lines() {
        let diff = b"diff --git a/link b/link\nindex dab8c79..3c1d453 120000\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-plain.txt\n\\ No newline at end of file\n+crlf.txt\n\\ No newline at end of file\n";
        let reversed = String::from_utf8(reverse(diff).unwrap()).unwrap();
        assert_eq!(
            reversed,
            "diff --git a/link b/link\nindex 3c1d453..dab8c79 120000\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-crlf.txt\n\\ No newline at end of file\n+plain.txt\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn turns_a_new_file_into_a_deletion() {
        let diff = b"diff --git a/my file b/my file\nnew file mode 100644\nindex 0000000..4903981\n--- /dev/null\n+++ b/my file\n@@ -0,0 +1 @@\n+x\n";
        let reversed = String::from_utf8(reverse(diff).unwrap()).unwrap();
        assert_eq!(
            reversed,
            "diff --git a/my file b/my file\ndeleted file mode 100644\nindex 4903981..0000000\n--- a/my file\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        );
    }
}
