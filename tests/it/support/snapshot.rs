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
    // Test names carry the process id to stay apart from other runs.
    let mut out = text
        .replace(root, "<recipe>")
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
