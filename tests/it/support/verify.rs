//! Running `forge --json verify-digest` and reading its rows.

use serde_json::Value;

use crate::support::images::Example;
use crate::support::{Run, TestContext};

/// `forge --json verify-digest args...`, with a `SOURCE_DATE_EPOCH` other than the build's:
/// the context is assembled again with the mtime the record holds, so verification does not
/// depend on the environment matching the build's.
pub(crate) fn verify(example: &Example, args: &[&str], env: &[(&str, &str)]) -> Run {
    verify_in(&example.context, args, env)
}

/// `verify` for any recipe folder.
pub(crate) fn verify_in(context: &TestContext, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--json", "verify-digest"];
    all.extend_from_slice(args);
    let mut env = env.to_vec();
    env.push(("SOURCE_DATE_EPOCH", "1"));
    context.forge_with(&all, &env)
}

/// The one row with this name and subject.
#[track_caller]
pub(crate) fn row<'a>(json: &'a Value, name: &str, subject: &str) -> &'a Value {
    let rows: Vec<&Value> = json["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|check| check["name"] == name && full_subject(check) == subject)
        .collect();
    assert_eq!(rows.len(), 1, "one {name} row for {subject} in {json:#}");
    rows[0]
}

/// The subjects of the failing rows, as `name subject`.
pub(crate) fn failing(json: &Value) -> Vec<String> {
    rows_where(json, false)
}

/// The subjects of the rows whose `ok` is `ok`, as `name subject`.
pub(crate) fn rows_where(json: &Value, ok: bool) -> Vec<String> {
    json["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|check| check["ok"] == ok)
        .map(|check| {
            format!(
                "{} {}",
                check["name"].as_str().unwrap(),
                full_subject(check)
            )
        })
        .collect()
}

/// A row's subject with its node, as forge's messages name it: `node: repository:tag`.
pub(crate) fn full_subject(check: &Value) -> String {
    let subject = check["subject"].as_str().expect("subject");
    match check.get("node").and_then(Value::as_str) {
        Some(node) => format!("{node}: {subject}"),
        None => subject.to_owned(),
    }
}
