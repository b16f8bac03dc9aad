//! The paths a patch may touch, as git's `verify_path` judges them: what `git apply` refuses to
//! write (`.git` in any spelling NTFS or HFS would read as it, `..`, empty components, a
//! `.gitmodules` that is a link) forge refuses too.

use super::diff::{SYMLINK, TYPE_MASK};

/// git's `verify_path`: no empty component, no `.` or `..`, no `.git` (in any case, or as
/// NTFS would read it: `.git.`, `git~1`), and a symbolic link not named `.gitmodules`.
pub fn verify_path(path: &[u8], mode: u32) -> bool {
    if path.contains(&0) {
        return false;
    }
    let link = mode & TYPE_MASK == SYMLINK;
    let mut component = 0;
    loop {
        let rest = &path[component..];
        if is_ntfs_dotgit(rest) || (link && is_ntfs_dot_generic(rest, b"gitmodules", b"gi7eba")) {
            return false;
        }
        let Some(&first) = rest.first() else {
            return false;
        };
        if first == b'/' || (first == b'.' && !verify_dotfile(&rest[1..], link)) {
            return false;
        }
        let mut at = 1;
        loop {
            match rest.get(at) {
                None => return true,
                Some(b'/') => {
                    component += at + 1;
                    break;
                }
                Some(b'\\') => {
                    let after = &rest[at + 1..];
                    if is_ntfs_dotgit(after)
                        || (link && is_ntfs_dot_generic(after, b"gitmodules", b"gi7eba"))
                    {
                        return false;
                    }
                    at += 1;
                }
                Some(_) => at += 1,
            }
        }
    }
}

/// After a leading `.`: refuses `.`, `..`, `.git` and, for a link, `.gitmodules`.
fn verify_dotfile(rest: &[u8], link: bool) -> bool {
    let end = |at: usize| rest.get(at).is_none_or(|&c| c == b'/');
    if end(0) {
        return false;
    }
    match rest[0] {
        b'g' | b'G' => {
            if rest.len() >= 3
                && rest[1].eq_ignore_ascii_case(&b'i')
                && rest[2].eq_ignore_ascii_case(&b't')
            {
                if end(3) {
                    return false;
                }
                if link {
                    let tail = &rest[3..];
                    if tail.len() >= 7
                        && tail[..7].eq_ignore_ascii_case(b"modules")
                        && tail.get(7).is_none_or(|&c| c == b'/')
                    {
                        return false;
                    }
                }
            }
            true
        }
        b'.' => !end(1),
        _ => true,
    }
}

/// `.git` or `git~1`, followed only by dots and spaces up to the end of the component.
fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let rest = if let Some(rest) = name.strip_prefix(b".") {
        match rest.get(..3) {
            Some(git) if git.eq_ignore_ascii_case(b"git") => &rest[3..],
            _ => return false,
        }
    } else {
        match name.get(..5) {
            Some(short) if short[..3].eq_ignore_ascii_case(b"git") && &short[3..] == b"~1" => {
                &name[5..]
            }
            _ => return false,
        }
    };
    for &c in rest {
        if c == b'/' || c == b'\\' || c == b':' {
            return true;
        }
        if c != b'.' && c != b' ' {
            return false;
        }
    }
    true
}

/// git's NTFS check for `.gitmodules`-like names, short forms included.
fn is_ntfs_dot_generic(name: &[u8], dotgit: &[u8], short_prefix: &[u8]) -> bool {
    let only_spaces_and_periods = |from: usize| {
        for &c in name.get(from..).unwrap_or_default() {
            if c == b':' {
                return true;
            }
            if c != b' ' && c != b'.' {
                return false;
            }
        }
        true
    };
    if name.first() == Some(&b'.')
        && name.len() > dotgit.len()
        && name[1..=dotgit.len()].eq_ignore_ascii_case(dotgit)
    {
        return only_spaces_and_periods(dotgit.len() + 1);
    }
    if name.len() >= 8
        && name[..6].eq_ignore_ascii_case(&dotgit[..6])
        && name[6] == b'~'
        && (b'1'..=b'4').contains(&name[7])
    {
        return only_spaces_and_periods(8);
    }
    let mut saw_tilde = false;
    let mut at = 0;
    while at < 8 {
        let Some(&c) = name.get(at) else {
            return false;
        };
        if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            at += 1;
            if !name.get(at).is_some_and(|c| (b'1'..=b'9').contains(c)) {
                return false;
            }
            saw_tilde = true;
        } else if at >= 6 || c & 0x80 != 0 || c.to_ascii_lowercase() != short_prefix[at] {
            return false;
        }
        at += 1;
    }
    only_spaces_and_periods(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_git_refuses() {
        for path in [
            &b".git/config"[..],
            b"a/.GIT/x",
            b"a/../b",
            b"./a",
            b"a//b",
            b"/etc/passwd",
            b"a/",
            b"",
            b".git. /x",
            b"GIT~1/x",
        ] {
            assert!(
                !verify_path(path, 0o100644),
                "{}",
                String::from_utf8_lossy(path)
            );
        }
        assert!(!verify_path(b".gitmodules", SYMLINK));
        for path in [
            &b"a/b"[..],
            b".gitignore",
            b".github/x",
            b"..a",
            b"a.git",
            b".gitmodules",
        ] {
            assert!(
                verify_path(path, 0o100644),
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }
}
