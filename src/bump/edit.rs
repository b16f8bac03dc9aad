//! pins.toml text and a list of key assignments in, the same text with only those values
//! changed out: every comment, blank line, quote style and key order stays byte-identical.

use std::fmt;

use toml_edit::{DocumentMut, Item, Value};

/// One value to set: `key` in the table at `table` (`["pins", "flashinfer"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The table path.
    pub table: Vec<String>,
    /// The key in that table.
    pub key: String,
    /// The new string value (already checked against its grammar).
    pub value: String,
}

impl Assignment {
    /// `key = value` in the table at `table`.
    pub fn new(table: &[&str], key: &str, value: impl Into<String>) -> Self {
        Self {
            table: table.iter().map(|part| (*part).to_owned()).collect(),
            key: key.to_owned(),
            value: value.into(),
        }
    }

    fn place(&self) -> String {
        format!("[{}] {}", self.table.join("."), self.key)
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {:?}", self.place(), self.value)
    }
}

/// Why pins.toml could not be edited.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The text is not TOML (pins::load would have refused it first).
    #[error("pins.toml is not valid TOML: {0}")]
    Parse(String),
    /// The table to edit is not there.
    #[error("pins.toml has no table [{0}]")]
    NoTable(String),
    /// The key holds something other than a string.
    #[error("{0} is not a string")]
    NotAString(String),
}

/// Applies `assignments` to `text`. A value that exists keeps its decor (the spaces and the
/// trailing comment around it) and its quote style; a key that does not exist is added at the
/// end of its table.
pub fn apply(text: &str, assignments: &[Assignment]) -> Result<String, EditError> {
    let mut document: DocumentMut = text
        .parse()
        .map_err(|error: toml_edit::TomlError| EditError::Parse(error.to_string()))?;
    for assignment in assignments {
        let mut table = document.as_table_mut() as &mut dyn toml_edit::TableLike;
        for part in &assignment.table {
            table = table
                .get_mut(part)
                .and_then(Item::as_table_like_mut)
                .ok_or_else(|| EditError::NoTable(assignment.table.join(".")))?;
        }
        match table.get_mut(&assignment.key) {
            Some(Item::Value(old)) => {
                let Value::String(formatted) = &*old else {
                    return Err(EditError::NotAString(assignment.place()));
                };
                let literal = formatted
                    .as_repr()
                    .and_then(|repr| repr.as_raw().as_str())
                    .is_some_and(|raw| raw.starts_with('\''));
                let mut new = string_value(&assignment.value, literal);
                *new.decor_mut() = old.decor().clone();
                *old = new;
            }
            Some(_) => return Err(EditError::NotAString(assignment.place())),
            None => {
                table.insert(
                    &assignment.key,
                    Item::Value(string_value(&assignment.value, false)),
                );
            }
        }
    }
    Ok(document.to_string())
}

/// A string value in the given quote style. The values forge writes have passed a grammar
/// without quotes, backslashes or newlines, so either style holds them as they are.
fn string_value(value: &str, literal: bool) -> Value {
    let text = if literal {
        format!("'{value}'")
    } else {
        format!("\"{value}\"")
    };
    text.parse()
        .unwrap_or_else(|_| Value::from(value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_comments_quotes_and_order() {
        let text = "# top\n[pins.a]   # a table\nkind = \"python\"\nversion = '1.0'    # why\n\n[pins.b]\nversion = \"2.0\" # b\n";
        let edited = apply(
            text,
            &[
                Assignment::new(&["pins", "a"], "version", "1.1"),
                Assignment::new(&["pins", "b"], "version", "2.1"),
            ],
        )
        .unwrap();
        assert_eq!(
            edited,
            "# top\n[pins.a]   # a table\nkind = \"python\"\nversion = '1.1'    # why\n\n[pins.b]\nversion = \"2.1\" # b\n"
        );
    }

    #[test]
    fn adds_a_missing_key_at_the_end_of_its_table() {
        let text = "[base]\nimage = \"x:1\"\n\n[env]\nA = \"b\"\n";
        let edited = apply(text, &[Assignment::new(&["base"], "digest", "sha256:00")]).unwrap();
        assert_eq!(
            edited,
            "[base]\nimage = \"x:1\"\ndigest = \"sha256:00\"\n\n[env]\nA = \"b\"\n"
        );
    }
}
