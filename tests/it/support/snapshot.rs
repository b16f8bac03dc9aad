//! Snapshots: what varies from run to run or machine to machine (temporary paths, process ids,
//! digests, commit ids, loopback ports, times) replaced by placeholders, so that a snapshot
//! compares only what forge decided.

use std::path::Path;

/// A `--json` document with what varies from run to run or machine to machine replaced by a
/// placeholder (digests, commit ids, temporary paths, loopback ports, times, and a build's
/// `steps`, which the builder's cache decides), pretty-printed: what a snapshot of its shape
/// compares.
pub fn json_shape(document: &serde_json::Value, root: &Path) -> String {
    fn walk(value: &serde_json::Value, root: &str) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(key, value)| match (key.as_str(), value) {
                    ("steps", serde_json::Value::Array(steps))
                        if steps.iter().all(|step| step.get("state").is_some()) =>
                    {
                        (key.clone(), serde_json::Value::from("<steps>"))
                    }
                    _ => (key.clone(), walk(value, root)),
                })
                .collect::<serde_json::Map<_, _>>()
                .into(),
            serde_json::Value::Array(items) => items.iter().map(|item| walk(item, root)).collect(),
            serde_json::Value::String(text) => serde_json::Value::String(placeholders(text, root)),
            other => other.clone(),
        }
    }
    let root = root.display().to_string();
    serde_json::to_string_pretty(&walk(document, &root)).expect("JSON prints")
}

/// `text` with its temporary paths, digests, commit ids, ports and times replaced.
fn placeholders(text: &str, root: &str) -> String {
    // Test names carry the process id to stay apart from other runs (some as seven digits,
    // so that a table's columns do not depend on it).
    let mut out = text
        .replace(root, "<recipe>")
        .replace(&format!("-{:07}", std::process::id()), "-<pid>")
        .replace(&format!("-{}", std::process::id()), "-<pid>");
    let hex_run = |text: &str, at: usize| {
        text[at..]
            .bytes()
            .take_while(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
            .count()
    };
    let mut result = String::new();
    let mut at = 0;
    while at < out.len() {
        let rest = &out[at..];
        if let Some(after) = rest.strip_prefix("sha256:")
            && hex_run(after, 0) == 64
        {
            result.push_str("sha256:<digest>");
            at += 7 + 64;
            continue;
        }
        // An attachment's tag names the manifest it is attached to.
        if let Some(after) = rest.strip_prefix("sha256-")
            && hex_run(after, 0) == 64
        {
            result.push_str("sha256-<digest>");
            at += 7 + 64;
            continue;
        }
        let run = hex_run(&out, at);
        let boundary = at == 0 || !out.as_bytes()[at - 1].is_ascii_alphanumeric();
        if boundary
            && (run == 40 || run == 12)
            && !out[at + run..].starts_with(|c: char| c.is_ascii_alphanumeric())
        {
            result.push_str(if run == 40 { "<commit>" } else { "<short>" });
            at += run;
            continue;
        }
        let character = rest.chars().next().expect("not at the end");
        result.push(character);
        at += character.len_utf8();
    }
    out = result;
    for host in ["127.0.0.1:", "localhost:"] {
        let mut replaced = String::new();
        let mut rest = out.as_str();
        while let Some(found) = rest.find(host) {
            replaced.push_str(&rest[..found + host.len()]);
            rest = &rest[found + host.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                replaced.push_str("<port>");
                rest = &rest[digits..];
            }
        }
        replaced.push_str(rest);
        out = replaced;
    }
    if out.len() >= 20 && out.as_bytes()[4] == b'-' && out.as_bytes()[10] == b'T' {
        return "<time>".to_owned();
    }
    out
}

/// Human output (a command's stdout or stderr) with what varies from run to run or machine to
/// machine replaced, line by line, by the placeholders of `json_shape`: the recipe folder
/// `root` (`<recipe>`), the process id, digests, commit ids, loopback ports; and besides them
/// other temporary folders (`<tmp>`; `<tmp>…` where a column limit cut one), bare 64-digit hex
/// ids (`<hex>`), git's abbreviated commit ids (`<short>`), times (`<time>`) and durations
/// (`<duration>`); table columns are compared by their order, not their padding, and the
/// daemon's progress lines are folded into one `<progress>`. What `forge_snapshot!` compares.
pub fn human(text: &str, root: impl AsRef<Path>) -> String {
    static FILTERS: std::sync::LazyLock<[(regex::Regex, &str); 6]> =
        std::sync::LazyLock::new(|| {
            let filter = |pattern: &str, to| (regex::Regex::new(pattern).unwrap(), to);
            // The folders `tempfile` makes under the temporary folder, wherever TMPDIR puts it.
            let temporary = regex::escape(&std::env::temp_dir().display().to_string());
            let temporary = temporary.trim_end_matches('/');
            [
                filter(
                    &format!(
                        r"(?:/private)?{temporary}/(?:\.tmp|[a-z]+(?:-[a-z]+)*-)[A-Za-z0-9]{{6}}"
                    ),
                    "<tmp>",
                ),
                // A path under it cut by a column limit: where the cut falls, its length decides.
                filter(&format!(r"(?:/private)?{temporary}/\S*…"), "<tmp>…"),
                filter(r"\b127\.\d+\.\d+\.\d+:\d+\b", "<loopback>"),
                filter(r"\b[0-9a-f]{64}\b", "<hex>"),
                filter(
                    r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?",
                    "<time>",
                ),
                filter(r"\b\d+(?:\.\d+)?(?:ms|s)\b", "<duration>"),
            ]
        });
    let root = match root.as_ref().display().to_string() {
        // No recipe folder to stand for: nothing is `<recipe>`.
        root if root.is_empty() => "\u{0}".to_owned(),
        root => root,
    };
    // git's abbreviated commit ids: a run of 7 to 11 hex digits, one of them a decimal digit.
    static ABBREVIATED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b[0-9a-f]{7,11}\b").unwrap());
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut line = placeholders_in_line(line, &root);
            for (pattern, to) in FILTERS.iter() {
                line = pattern.replace_all(&line, *to).into_owned();
            }
            ABBREVIATED
                .replace_all(&line, |found: &regex::Captures<'_>| {
                    let id = &found[0];
                    // Words spelled in a-f alone are words; an id may be all digits.
                    let id_like = id.bytes().any(|byte| byte.is_ascii_digit());
                    if id_like { "<short>" } else { id }.to_owned()
                })
                .into_owned()
        })
        .collect();
    let lines = lines
        .into_iter()
        .map(|line| aligned_loosely(&line))
        .collect::<Vec<_>>();
    let mut lines = progress_folded(lines);
    // Trailing blank lines say nothing.
    while lines.last().is_some_and(|line| line.trim().is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

/// `line` with each run of two or more spaces after its indent made two: a table pads its
/// columns to the widest cell, whose width the ports and process ids in it decide.
fn aligned_loosely(line: &str) -> String {
    static PADDING: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(\S)  +").unwrap());
    PADDING.replace_all(line, "$1  ").into_owned()
}

/// `lines` with each run of the daemon's progress lines (`[HH:MM:SS.mmm ...] ...`, and the
/// lines a long one continues on) made one `<progress>` line: what the daemon reports, and how
/// often, its cache and timing decide.
fn progress_folded(lines: Vec<String>) -> Vec<String> {
    static PROGRESS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^\s*\[\d\d:\d\d:\d\d\.\d+ ").unwrap());
    let continued = |line: &str, folded: &[String]| {
        line.starts_with(&" ".repeat(20)) && folded.last().is_some_and(|last| last == "<progress>")
    };
    let mut folded: Vec<String> = Vec::new();
    for line in lines {
        if PROGRESS.is_match(&line) || continued(&line, &folded) {
            if folded.last().is_none_or(|last| last != "<progress>") {
                folded.push("<progress>".to_owned());
            }
        } else {
            folded.push(line);
        }
    }
    folded
}

/// `placeholders` for one line of human output: a line is never taken whole for a time.
fn placeholders_in_line(line: &str, root: &str) -> String {
    let guarded = format!("\u{1}{line}");
    placeholders(&guarded, root)
        .strip_prefix('\u{1}')
        .map(str::to_owned)
        .unwrap_or_default()
}

/// `insta::assert_snapshot!` of human output with the placeholders of `human`: the text, the
/// folder that stands for `<recipe>`, and either an inline snapshot (`@"..."`) or a name.
///
/// ```ignore
/// forge_snapshot!(run.stderr, context.path(), @"error: ...");
/// forge_snapshot!("pin_list", run.stdout, context.path());
/// ```
macro_rules! forge_snapshot {
    ($text:expr, $root:expr, @$snapshot:literal) => {
        insta::assert_snapshot!($crate::support::snapshot::human(&$text, $root), @$snapshot)
    };
    ($name:literal, $text:expr, $root:expr) => {
        insta::assert_snapshot!($name, $crate::support::snapshot::human(&$text, $root))
    };
}
pub(crate) use forge_snapshot;
