//! The one place forge writes to the terminal: data on stdout, status and diagnostics on stderr.
//!
//! Status lines are cargo-style (`   Rendered Dockerfile sha256:…`): a right-aligned verb, bold
//! green on a terminal and plain in logs. With `--json` the only thing on stdout is one JSON
//! document, printed at the end by the command.
//!
//! Everything written passes through `redact::text`: the user information and the tokens of a
//! URL never reach the terminal, a log or a JSON document. The one exception is `data`, the
//! rendered Dockerfile, which is the command's product and printed byte for byte.

use std::fmt::Display;

/// The version of the shapes of forge's `--json` documents: raised when a key changes meaning
/// or goes away (new keys do not raise it). Every document carries it as `"schema"`.
pub const JSON_SCHEMA: u32 = 1;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How much status output to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Errors only.
    Quiet,
    /// Status lines.
    Normal,
    /// Status lines and details.
    Verbose,
}

/// What stdout carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Text for people.
    Human,
    /// One JSON document.
    Json,
}

/// `--color`: whether status and diagnostics are painted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// When stderr is a terminal, unless `NO_COLOR` is set to a value (or `CLICOLOR_FORCE` is).
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to paint, given the environment variable `lookup` reads and whether stderr is a
    /// terminal: `--color always|never` first; then `NO_COLOR` with a non-empty value turns
    /// colour off and `CLICOLOR_FORCE` with a value other than `0` turns it on (NO_COLOR wins
    /// when both are set); else the terminal decides.
    pub fn paints(self, lookup: impl Fn(&str) -> Option<String>, terminal: bool) -> bool {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if set("NO_COLOR").is_some() => false,
            ColorChoice::Auto if set("CLICOLOR_FORCE").is_some_and(|value| value != "0") => true,
            ColorChoice::Auto => terminal,
        }
    }
}

/// A command's answer, typed: the one value both of its forms come from, the text a person
/// reads and the JSON document a program reads (its serialization; docs/json.md lists them).
/// `Printer::document` prints the one `--json` asks for.
pub trait Document: serde::Serialize {
    /// What a person reads on stdout; `None` when the statuses on stderr already said it.
    fn text(&self) -> Option<String> {
        None
    }

    /// Whether its strings are the command's product, printed byte for byte and unredacted
    /// (the rendered Dockerfile, which must be the file `--out` writes).
    fn is_product(&self) -> bool {
        false
    }
}

/// Writes all of forge's output.
#[derive(Debug, Clone)]
pub struct Printer {
    verbosity: Verbosity,
    format: OutputFormat,
    color: bool,
    /// Whether this printer (or a clone of it) has written the JSON document.
    json_written: Arc<AtomicBool>,
    /// Where the JSON document goes instead of stdout, for a printer made by `keeping`.
    kept: Option<Kept>,
}

/// The JSON document a printer made by `Printer::keeping` was given, for its caller to print
/// as part of its own.
#[derive(Debug, Clone, Default)]
pub struct Kept(Arc<std::sync::Mutex<Option<serde_json::Value>>>);

impl Kept {
    /// The document, redacted, once the command has given it.
    pub fn take(&self) -> Option<serde_json::Value> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

impl Printer {
    /// A printer that paints as `color` says (see `ColorChoice::paints`).
    pub fn new(verbosity: Verbosity, format: OutputFormat, color: ColorChoice) -> Self {
        let color = color.paints(
            |name| std::env::var(name).ok(),
            std::io::stderr().is_terminal(),
        );
        Self {
            verbosity,
            format,
            color,
            json_written: Arc::default(),
            kept: None,
        }
    }

    /// A printer like this one that keeps its JSON document for the caller instead of writing
    /// it: for a command that answers with one document made of several (a workspace's build,
    /// one part per member). Status lines and text answers are written as this printer writes
    /// them.
    pub fn keeping(&self) -> (Printer, Kept) {
        let kept = Kept::default();
        let printer = Printer {
            json_written: Arc::default(),
            kept: Some(kept.clone()),
            ..self.clone()
        };
        (printer, kept)
    }

    /// Whether stdout is reserved for one JSON document.
    pub fn is_json(&self) -> bool {
        self.format == OutputFormat::Json
    }

    /// Whether status and diagnostics are painted (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`).
    pub fn paints(&self) -> bool {
        self.color
    }

    /// Whether stderr is a terminal (progress displays are only drawn there).
    pub fn is_terminal(&self) -> bool {
        std::io::stderr().is_terminal()
    }

    /// A status line: `verb` right-aligned in 12 columns, then the message.
    pub fn status(&self, verb: &str, message: impl Display) {
        if self.verbosity >= Verbosity::Normal {
            self.line(verb, "1;32", message);
        }
    }

    /// A status line shown only with `-v`.
    pub fn detail(&self, verb: &str, message: impl Display) {
        if self.verbosity >= Verbosity::Verbose {
            self.line(verb, "1;36", message);
        }
    }

    /// `warning: message`, unless quiet.
    pub fn warn(&self, message: impl Display) {
        if self.verbosity >= Verbosity::Normal {
            to_stderr(format_args!(
                "{}: {}\n",
                self.paint("warning", "1;33"),
                redacted(message)
            ));
        }
    }

    /// `error: message`, always.
    pub fn error(&self, message: impl Display) {
        to_stderr(format_args!(
            "{}: {}\n",
            self.paint("error", "1;31"),
            redacted(message)
        ));
    }

    /// A labelled continuation of an error or warning (`caused by:`, `hint:`), always.
    pub fn note(&self, label: &str, message: impl Display) {
        to_stderr(format_args!(
            "{}: {}\n",
            self.paint(label, "1;34"),
            redacted(message)
        ));
    }

    /// Human text on stderr (tables and reports that are not the command's data).
    pub fn stderr(&self, text: impl Display) {
        if self.verbosity >= Verbosity::Normal {
            to_stderr(format_args!("{}", redacted(text)));
        }
    }

    /// A table that is the command's answer (verify-digest's checks, pull's tags): on stdout,
    /// so that `forge verify-digest > out.txt` keeps it; with `--json`, where stdout holds the
    /// one document, on stderr for the people reading the log (unless quiet).
    pub fn answer(&self, text: &str) {
        if self.is_json() {
            self.stderr(text);
        } else {
            self.stdout(text);
        }
    }

    /// The command's output on stdout (tables, reports, diffs).
    pub fn stdout(&self, text: &str) {
        self.data(&crate::redact::text(text));
    }

    /// The command's product on stdout byte for byte, unredacted: the rendered Dockerfile, which
    /// must be the same as the file `--out` writes.
    pub fn data(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`forge render | head`) is not an error worth a panic.
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
    }

    /// Prints a command's answer on stdout: its JSON document with `--json` (stdout holds one:
    /// none after the first), else its text, if it has any for stdout (a command whose statuses
    /// on stderr say it all has none).
    pub fn document(&self, document: &impl Document) {
        match (self.is_json(), document.is_product()) {
            (true, _) if self.json_written() => {}
            (true, product) => {
                let value = serde_json::to_value(document).expect("a document serializes");
                match product {
                    true => self.json_data(&value),
                    false => self.json(&value),
                }
            }
            (false, product) => match (document.text(), product) {
                (Some(text), true) => self.data(&text),
                (Some(text), false) => self.stdout(&text),
                (None, _) => {}
            },
        }
    }

    /// Part of a command's answer that a person reads on stdout as it comes, before the statuses
    /// that follow it; with `--json` the document carries it instead, and this prints nothing.
    pub fn text_part(&self, text: &str) {
        if !self.is_json() {
            self.stdout(text);
        }
    }

    /// The command's one JSON document on stdout, carrying the version of forge's JSON shapes
    /// (`"schema"`, see `JSON_SCHEMA`); every string in it redacted.
    pub fn json(&self, value: &serde_json::Value) {
        match &self.kept {
            Some(kept) => {
                self.json_written.store(true, Ordering::Relaxed);
                *kept
                    .0
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) =
                    Some(crate::redact::json(value));
            }
            None => self.json_data(&crate::redact::json(value)),
        }
    }

    /// Like `json`, for a document whose strings are the command's product and printed as they
    /// are (`forge render --json`, which carries the rendered Dockerfile).
    pub fn json_data(&self, value: &serde_json::Value) {
        let mut document = value.clone();
        if let Some(object) = document.as_object_mut() {
            object.insert("schema".to_owned(), serde_json::Value::from(JSON_SCHEMA));
        }
        let text = serde_json::to_string_pretty(&document).expect("a JSON value serializes");
        self.json_written.store(true, Ordering::Relaxed);
        self.data(&format!("{text}\n"));
    }

    /// Whether the command's JSON document is already on stdout (a failed verification prints
    /// its report, and its error then goes to stderr only, so stdout stays one document).
    pub fn json_written(&self) -> bool {
        self.json_written.load(Ordering::Relaxed)
    }

    fn line(&self, verb: &str, color: &str, message: impl Display) {
        let padded = format!("{verb:>12}");
        to_stderr(format_args!(
            "{} {}\n",
            self.paint(&padded, color),
            redacted(message)
        ));
    }

    fn paint(&self, text: &str, color: &str) -> String {
        if self.color {
            format!("\x1b[{color}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// `message` as text, with the secrets of its URLs masked.
fn redacted(message: impl Display) -> String {
    crate::redact::text(&message.to_string()).into_owned()
}

/// Writes to stderr in one piece; a closed stderr is no reason to stop forge.
fn to_stderr(text: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(text);
}

#[cfg(test)]
mod tests {
    use super::ColorChoice;

    fn paints(choice: ColorChoice, env: &[(&str, &str)], terminal: bool) -> bool {
        let lookup = |name: &str| {
            (env.iter())
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        };
        choice.paints(lookup, terminal)
    }

    #[test]
    fn colour_follows_the_flag_then_no_color_and_clicolor_force_then_the_terminal() {
        use ColorChoice::{Always, Auto, Never};
        assert!(paints(Auto, &[], true));
        assert!(!paints(Auto, &[], false));
        // NO_COLOR counts only with a value.
        assert!(!paints(Auto, &[("NO_COLOR", "1")], true));
        assert!(paints(Auto, &[("NO_COLOR", "")], true));
        assert!(paints(Auto, &[("CLICOLOR_FORCE", "1")], false));
        assert!(!paints(Auto, &[("CLICOLOR_FORCE", "0")], false));
        assert!(!paints(Auto, &[("CLICOLOR_FORCE", "")], false));
        assert!(!paints(
            Auto,
            &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")],
            true
        ));
        assert!(paints(
            Auto,
            &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")],
            false
        ));
        assert!(paints(Always, &[("NO_COLOR", "1")], false));
        assert!(!paints(Never, &[("CLICOLOR_FORCE", "1")], true));
    }
}
