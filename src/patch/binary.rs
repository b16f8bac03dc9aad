//! `GIT binary patch` data: base-85 lines in, the inflated literal or delta out, and git's
//! delta format applied to a blob. The encodings are git's own (its base-85 alphabet, zlib,
//! the pack delta opcodes); no crate speaks them, and each is a few lines.

use std::io::Read as _;

/// How a binary hunk gives the new content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The whole new file.
    Literal,
    /// A git delta against the old file.
    Delta,
}

/// One binary hunk, inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryHunk {
    /// Literal or delta.
    pub method: Method,
    /// The inflated data.
    pub data: Vec<u8>,
}

/// Why binary data is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt binary patch: {0}")]
pub struct Corrupt(pub &'static str);

impl crate::diagnostics::Advise for Corrupt {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Nothing(
            "read while a patch is read; `PatchError` says which patch and what to do",
        )
    }
}

crate::advised!(Corrupt);

/// One hunk at the start of `text` (`literal N` or `delta N`, data lines, a blank line): the
/// bytes it takes and the hunk. `None` when `text` does not start with a hunk.
pub fn parse_hunk(text: &[u8]) -> Option<(usize, Result<BinaryHunk, Corrupt>)> {
    let line_length = |text: &[u8]| {
        text.iter()
            .position(|&c| c == b'\n')
            .map_or(text.len(), |end| end + 1)
    };
    let first = line_length(text);
    let (method, size) = if let Some(rest) = text.strip_prefix(b"delta ") {
        (Method::Delta, rest)
    } else if let Some(rest) = text.strip_prefix(b"literal ") {
        (Method::Literal, rest)
    } else {
        return None;
    };
    let digits = size.iter().take_while(|c| c.is_ascii_digit()).count();
    let inflated_size: usize = std::str::from_utf8(&size[..digits])
        .ok()
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(0);
    let mut used = first;
    let mut deflated = Vec::new();
    loop {
        let rest = &text[used..];
        let length = line_length(rest);
        used += length;
        if length == 1 {
            break;
        }
        if length < 7 || (length - 2) % 5 != 0 {
            return Some((used, Err(Corrupt("a data line of the wrong length"))));
        }
        let most = (length - 2) / 5 * 4;
        let count = match rest[0] {
            c @ b'A'..=b'Z' => usize::from(c - b'A') + 1,
            c @ b'a'..=b'z' => usize::from(c - b'a') + 27,
            _ => return Some((used, Err(Corrupt("a data line with no length letter")))),
        };
        if most < count || count + 4 <= most {
            return Some((
                used,
                Err(Corrupt("a data line whose length letter does not fit it")),
            ));
        }
        match decode_85(&rest[1..length - 1], count) {
            Some(bytes) => deflated.extend_from_slice(&bytes),
            None => return Some((used, Err(Corrupt("a character outside base 85")))),
        }
    }
    Some((
        used,
        inflate(&deflated, inflated_size).map(|data| BinaryHunk { method, data }),
    ))
}

/// git's base-85 digits, in order.
const ALPHABET: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Each byte's base-85 value plus one (0: not a digit).
const DIGIT_VALUES: [u8; 256] = {
    let mut values = [0u8; 256];
    let mut index = 0;
    while index < ALPHABET.len() {
        values[ALPHABET[index] as usize] = index as u8 + 1;
        index += 1;
    }
    values
};

/// `count` bytes from base-85 `text` (5 characters per 4 bytes, big-endian).
fn decode_85(text: &[u8], count: usize) -> Option<Vec<u8>> {
    let value_of = |c: u8| DIGIT_VALUES[c as usize].checked_sub(1).map(u32::from);
    let mut out = Vec::with_capacity(count);
    let mut left = count;
    for group in text.chunks(5) {
        if left == 0 {
            break;
        }
        if group.len() < 5 {
            return None;
        }
        let mut value: u32 = 0;
        for &c in &group[..4] {
            value = value * 85 + value_of(c)?;
        }
        let last = value_of(group[4])?;
        value = value.checked_mul(85)?.checked_add(last)?;
        let take = left.min(4);
        out.extend_from_slice(&value.to_be_bytes()[..take]);
        left -= take;
    }
    (left == 0).then_some(out)
}

/// zlib data that must inflate to exactly `size` bytes.
fn inflate(deflated: &[u8], size: usize) -> Result<Vec<u8>, Corrupt> {
    let mut out = Vec::with_capacity(size.min(1 << 26));
    let mut decoder = flate2::read::ZlibDecoder::new(deflated).take(size as u64 + 1);
    decoder
        .read_to_end(&mut out)
        .map_err(|_| Corrupt("the data does not inflate"))?;
    if out.len() != size {
        return Err(Corrupt(
            "the data inflates to another size than the hunk says",
        ));
    }
    Ok(out)
}

/// `source` with a git delta applied, or `None` when the delta does not fit it.
pub fn apply_delta(source: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    let mut size = || {
        let mut value: usize = 0;
        let mut shift = 0;
        loop {
            let byte = *delta.get(at)?;
            at += 1;
            value |= usize::from(byte & 0x7f).checked_shl(shift)?;
            shift += 7;
            if byte & 0x80 == 0 || at >= delta.len() {
                return Some(value);
            }
        }
    };
    let source_size = size()?;
    let target_size = size()?;
    if source_size != source.len() {
        return None;
    }
    let mut out = Vec::with_capacity(target_size.min(1 << 26));
    while at < delta.len() {
        let command = delta[at];
        at += 1;
        if command & 0x80 != 0 {
            let mut offset = 0usize;
            let mut length = 0usize;
            for bit in 0..4 {
                if command & (1 << bit) != 0 {
                    offset |= usize::from(*delta.get(at)?) << (8 * bit);
                    at += 1;
                }
            }
            for bit in 0..3 {
                if command & (0x10 << bit) != 0 {
                    length |= usize::from(*delta.get(at)?) << (8 * bit);
                    at += 1;
                }
            }
            if length == 0 {
                length = 0x10000;
            }
            let end = offset.checked_add(length)?;
            if end > source.len() || out.len() + length > target_size {
                return None;
            }
            out.extend_from_slice(&source[offset..end]);
        } else if command != 0 {
            let length = usize::from(command);
            let data = delta.get(at..at + length)?;
            if out.len() + length > target_size {
                return None;
            }
            out.extend_from_slice(data);
            at += length;
        } else {
            return None;
        }
    }
    (out.len() == target_size).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_literal_hunk() {
        // What `git format-patch` writes for a file holding "hello\n\0".
        let text = b"literal 7\nOcmc~u&B@8<VgLXNY62es\n\n";
        let (used, hunk) = parse_hunk(text).expect("a hunk");
        assert_eq!(used, text.len());
        let hunk = hunk.expect("valid");
        assert_eq!(hunk.method, Method::Literal);
        assert_eq!(hunk.data, b"hello\n\0");
    }

    #[test]
    fn applies_copy_and_insert_operations() {
        // Source "abcdef", target "cdXY": copy 2 bytes from offset 2, insert "XY".
        let delta = [6u8, 4, 0x80 | 0x01 | 0x10, 2, 2, 2, b'X', b'Y'];
        assert_eq!(
            apply_delta(b"abcdef", &delta).as_deref(),
            Some(&b"cdXY"[..])
        );
        assert_eq!(apply_delta(b"abcde", &delta), None);
    }
}
