//! Where in a file something is, as `path:line:column` (both 1-based, column in characters).

use std::fmt;
use std::path::{Path, PathBuf};

/// A position in a text file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, as the user named it.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` in `text`, the contents of `path`.
    pub fn from_offset(path: &Path, text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        let column = text[line_start..offset].chars().count() + 1;
        Self {
            path: path.to_owned(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        let location = Location::from_offset(Path::new("pins.toml"), text, text.find('"').unwrap());
        assert_eq!(location.to_string(), "pins.toml:2:6");
    }
}
