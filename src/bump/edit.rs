//! pins.toml text and a list of key assignments in, the same text with only those values
//! changed out: every comment, blank line, quote style and key order stays byte-identical.

use std::fmt;

use toml_edit::{DocumentMut, Item, Value};

/// One step of the path to a table: a key, or an entry of an array of tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// `[table]` or `key = { ... }`.
    Key(String),
    /// The n-th `[[array]]` entry (0-based) of the array named by the segment before.
    Index(usize),
}

/// One value to set: `key` in the table at `table` (`pins.flashinfer`, `patches[0].onto`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The table path.
    pub table: Vec<Segment>,
    /// The key in that table.
    pub key: String,
    /// The new value (its strings already checked against their grammars).
    pub value: Assigned,
}

/// A value forge writes into pins.toml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assigned {
    /// A string.
    Text(String),
    /// An array of inline tables of strings, each table's keys in order: `files = [{ file =
    /// "...", sha256 = "..." }]`, one table to a line in a table of its own.
    Tables(Vec<Vec<(String, String)>>),
}

impl Assigned {
    /// The value as `--json` shows it: a string, or an array of objects.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Assigned::Text(text) => serde_json::Value::String(text.clone()),
            Assigned::Tables(tables) => tables
                .iter()
                .map(|table| {
                    table
                        .iter()
                        .map(|(key, value)| (key.clone(), serde_json::Value::String(value.clone())))
                        .collect::<serde_json::Map<_, _>>()
                })
                .collect(),
        }
    }

    /// The value as TOML: on lines of their own (`multiline`) or on one.
    fn toml(&self, multiline: bool) -> Value {
        let text = match self {
            Assigned::Text(text) => return string_value(text, false),
            Assigned::Tables(tables) => {
                let tables: Vec<String> = tables
                    .iter()
                    .map(|table| {
                        let pairs: Vec<String> = table
                            .iter()
                            .map(|(key, value)| format!("{key} = \"{value}\""))
                            .collect();
                        format!("{{ {} }}", pairs.join(", "))
                    })
                    .collect();
                if multiline {
                    format!(
                        "[\n{}]",
                        tables
                            .iter()
                            .map(|table| format!("  {table},\n"))
                            .collect::<String>()
                    )
                } else {
                    format!("[{}]", tables.join(", "))
                }
            }
        };
        text.parse()
            .expect("an array of inline tables of checked strings")
    }
}

impl fmt::Display for Assigned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assigned::Text(text) => write!(f, "{text:?}"),
            Assigned::Tables(tables) if tables.len() == 1 => f.write_str("[1 entry]"),
            Assigned::Tables(tables) => write!(f, "[{} entries]", tables.len()),
        }
    }
}

impl Assignment {
    /// `key = value` in the table at `table`.
    pub fn new(table: &[&str], key: &str, value: impl Into<String>) -> Self {
        Self::of(table, key, Assigned::Text(value.into()))
    }

    /// `key = value` in the table at `table`, for any value.
    pub fn of(table: &[&str], key: &str, value: Assigned) -> Self {
        Self {
            table: table
                .iter()
                .map(|part| Segment::Key((*part).to_owned()))
                .collect(),
            key: key.to_owned(),
            value,
        }
    }

    /// `key = value` in the table at `rest` inside the `index`-th entry of `[[array]]`.
    pub fn in_array(
        array: &str,
        index: usize,
        rest: &[&str],
        key: &str,
        value: impl Into<String>,
    ) -> Self {
        let mut assignment = Self::new(rest, key, value);
        assignment.table.splice(
            0..0,
            [Segment::Key(array.to_owned()), Segment::Index(index)],
        );
        assignment
    }

    /// The table path as people write it: `pins.flashinfer`, `patches[0].onto`.
    pub fn table_path(&self) -> String {
        let mut path = String::new();
        for segment in &self.table {
            match segment {
                Segment::Key(key) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                }
                Segment::Index(index) => path.push_str(&format!("[{index}]")),
            }
        }
        path
    }

    fn place(&self) -> String {
        format!("[{}] {}", self.table_path(), self.key)
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.place(), self.value)
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
    /// The key holds a value of another type than the one forge writes there.
    #[error("{0} holds another type of value than forge writes there")]
    NotAString(String),
}

impl crate::diagnostics::Advise for EditError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(
            "pins.toml was left as it was; fix it by hand (`forge render` names the line), then run the bump again".to_owned(),
        )
    }
}

crate::advised!(EditError);

/// Applies `assignments` to `text`. A value that exists keeps its decor (the spaces and the
/// trailing comment around it) and its quote style; a key that does not exist is added at the
/// end of its table.
pub fn apply(text: &str, assignments: &[Assignment]) -> Result<String, EditError> {
    let mut document: DocumentMut = text
        .parse()
        .map_err(|error: toml_edit::TomlError| EditError::Parse(error.to_string()))?;
    for assignment in assignments {
        let missing = || EditError::NoTable(assignment.table_path());
        let mut table = document.as_table_mut() as &mut dyn toml_edit::TableLike;
        let mut segments = assignment.table.iter().peekable();
        // Whether the table is written inline (`{ a = "1", b = "2" }`).
        let mut inline = false;
        while let Some(segment) = segments.next() {
            let Segment::Key(key) = segment else {
                return Err(missing());
            };
            let item = table.get_mut(key).ok_or_else(missing)?;
            inline = item.is_inline_table() || item.is_array();
            table = match segments.peek() {
                Some(Segment::Index(index)) => {
                    segments.next();
                    if item.is_array_of_tables() {
                        item.as_array_of_tables_mut()
                            .and_then(|array| array.get_mut(*index))
                            .map(|entry| entry as &mut dyn toml_edit::TableLike)
                            .ok_or_else(missing)?
                    } else {
                        // `key = [{ ... }, { ... }]`: an inline table in an array value.
                        item.as_array_mut()
                            .and_then(|array| array.get_mut(*index))
                            .and_then(Value::as_inline_table_mut)
                            .map(|entry| entry as &mut dyn toml_edit::TableLike)
                            .ok_or_else(missing)?
                    }
                }
                _ => item.as_table_like_mut().ok_or_else(missing)?,
            };
        }
        match table.get_mut(&assignment.key) {
            Some(Item::Value(old)) => {
                let mut new = match (&assignment.value, &*old) {
                    (Assigned::Text(text), Value::String(formatted)) => {
                        let literal = formatted
                            .as_repr()
                            .and_then(|repr| repr.as_raw().as_str())
                            .is_some_and(|raw| raw.starts_with('\''));
                        string_value(text, literal)
                    }
                    (Assigned::Tables(_), Value::Array(_)) => assignment.value.toml(!inline),
                    _ => return Err(EditError::NotAString(assignment.place())),
                };
                *new.decor_mut() = old.decor().clone();
                *old = new;
            }
            Some(_) => return Err(EditError::NotAString(assignment.place())),
            None => {
                let mut value = assignment.value.toml(!inline);
                if inline {
                    // The space before the closing brace follows the last key, now the new one.
                    let last = table
                        .iter_mut()
                        .last()
                        .and_then(|(_, item)| item.as_value_mut());
                    if let Some(last) = last {
                        let suffix = last.decor().suffix().cloned();
                        if let Some(suffix) = suffix {
                            last.decor_mut().set_suffix("");
                            value.decor_mut().set_suffix(suffix);
                        }
                    }
                    value.decor_mut().set_prefix(" ");
                }
                table.insert(&assignment.key, Item::Value(value));
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
    fn edits_an_inline_table_inside_an_array_of_tables() {
        let text = "[[patches]]\nseries = \"a\"\n\n[[patches]]   # second\nseries = \"b\"\nonto = { git = \"file:///r\", rev = \"1111111\" }  # target\n";
        let edited = apply(
            text,
            &[Assignment::in_array(
                "patches",
                1,
                &["onto"],
                "rev",
                "2222222",
            )],
        )
        .unwrap();
        assert_eq!(edited, text.replace("1111111", "2222222"));
    }

    #[test]
    fn edits_and_adds_keys_of_inline_tables_in_an_array_value() {
        let text = "[pins.w]\nwheels = [\n  { package = \"a\", sha256 = \"00\" },  # a\n  { package = \"b\" },\n]\n";
        let at = |index| {
            let mut assignment = Assignment::new(&["pins", "w", "wheels"], "sha256", "11");
            assignment.table.push(Segment::Index(index));
            assignment
        };
        let edited = apply(text, &[at(0), at(1)]).unwrap();
        assert_eq!(
            edited,
            "[pins.w]\nwheels = [\n  { package = \"a\", sha256 = \"11\" },  # a\n  { package = \"b\", sha256 = \"11\" },\n]\n"
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

    fn files(pairs: &[(&str, &str)]) -> Assigned {
        Assigned::Tables(
            pairs
                .iter()
                .map(|(file, sha256)| {
                    vec![
                        ("file".to_owned(), (*file).to_owned()),
                        ("sha256".to_owned(), (*sha256).to_owned()),
                    ]
                })
                .collect(),
        )
    }

    #[test]
    fn writes_recorded_files_one_to_a_line_and_replaces_them_in_place() {
        let text = "[pins.a]\nversion = \"1.0\"\n\n[pins.b]\nversion = \"2.0\"\n";
        let added = apply(
            text,
            &[Assignment::of(
                &["pins", "a"],
                "files",
                files(&[
                    ("a-1.0-py3-none-any.whl", "00"),
                    ("a-1.0-cp312-abi3-linux_aarch64.whl", "11"),
                ]),
            )],
        )
        .unwrap();
        assert_eq!(
            added,
            "[pins.a]\nversion = \"1.0\"\nfiles = [\n  { file = \"a-1.0-py3-none-any.whl\", sha256 = \"00\" },\n  { file = \"a-1.0-cp312-abi3-linux_aarch64.whl\", sha256 = \"11\" },\n]\n\n[pins.b]\nversion = \"2.0\"\n"
        );
        let commented = added.replace("files = [", "files = [   # by forge");
        let replaced = apply(
            &commented.replace("]\n\n[pins.b]", "]  # recorded\n\n[pins.b]"),
            &[Assignment::of(
                &["pins", "a"],
                "files",
                files(&[("a-1.1-py3-none-any.whl", "22")]),
            )],
        )
        .unwrap();
        assert_eq!(
            replaced,
            "[pins.a]\nversion = \"1.0\"\nfiles = [\n  { file = \"a-1.1-py3-none-any.whl\", sha256 = \"22\" },\n]  # recorded\n\n[pins.b]\nversion = \"2.0\"\n"
        );
        let wheels = "[pins.w]\nwheels = [\n  { package = \"a\" },  # a\n]\n";
        let mut at = Assignment::of(
            &["pins", "w", "wheels"],
            "files",
            files(&[("a-1.0-py3-none-any.whl", "00")]),
        );
        at.table.push(Segment::Index(0));
        assert_eq!(
            apply(wheels, &[at]).unwrap(),
            "[pins.w]\nwheels = [\n  { package = \"a\", files = [{ file = \"a-1.0-py3-none-any.whl\", sha256 = \"00\" }] },  # a\n]\n"
        );
    }
}
