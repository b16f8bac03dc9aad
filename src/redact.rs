//! Secrets kept out of what forge prints: the user information of a URL
//! (`https://user:token@host/x` becomes `https://***@host/x`) and the values of query parameters
//! that carry tokens or signatures (`token=`, `access_token=`, `X-Amz-Signature=`, `sig=`, ...).
//! An `ssh://` URL keeps its user name, a login rather than a secret (`ssh://git@host/x`, the
//! `--host ssh://USER@HOST` of a daemon), and loses only a password.
//!
//! `text` finds every URL in a message and masks only those parts, so the rest (the host, the
//! path, the punctuation around the URL) reads as before. The printer passes every line and JSON
//! document through it, `diagnostics` every rendered error, and the errors that hold a URL use it
//! in their own `Display`.

use std::borrow::Cow;

/// What stands in for a secret.
pub const MASK: &str = "***";

/// `text` with the user information and the secret query values of every URL in it masked.
pub fn text(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut searched = 0;
    while let Some(found) = text[searched..].find("://") {
        let separator = searched + found;
        let start = scheme_start(text, separator);
        let end = url_end(text, separator + 3);
        searched = end.max(separator + 3);
        if start == separator {
            continue;
        }
        let url = &text[start..end];
        let masked = url_text(url, separator - start);
        if masked != url {
            out.push_str(&text[copied..start]);
            out.push_str(&masked);
            copied = end;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Every string of a JSON document, keys included, passed through `text`.
pub fn json(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(string) => serde_json::Value::String(text(string).into_owned()),
        serde_json::Value::Array(items) => items.iter().map(json).collect(),
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(key, value)| (text(key).into_owned(), json(value)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => other.clone(),
    }
}

/// A URL (or any text) for a `Display`: `text` applied as it is written out.
#[derive(Debug, Clone, Copy)]
pub struct Redacted<'a>(pub &'a str);

impl std::fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&text(self.0))
    }
}

/// Where the scheme ending at `separator` (the index of `://`) starts: the run of letters,
/// digits, `+`, `-` and `.` before it, beginning with a letter.
fn scheme_start(text: &str, separator: usize) -> usize {
    let bytes = text.as_bytes();
    let mut start = separator;
    while start > 0
        && (bytes[start - 1].is_ascii_alphanumeric()
            || matches!(bytes[start - 1], b'+' | b'-' | b'.'))
    {
        start -= 1;
    }
    while start < separator && !bytes[start].is_ascii_alphabetic() {
        start += 1;
    }
    start
}

/// Where a URL that goes on at `from` ends: at white space, a quote, an angle bracket or a
/// control character.
fn url_end(text: &str, from: usize) -> usize {
    text[from..]
        .find(|c: char| {
            c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '<' | '>' | '`')
        })
        .map_or(text.len(), |end| from + end)
}

/// One URL with its user information and secret query values masked; `scheme` is the length of
/// its scheme.
fn url_text(url: &str, scheme: usize) -> String {
    let rest_start = scheme + 3;
    let rest = &url[rest_start..];
    let authority_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..rest_start]);
    let ssh = url[..scheme].to_ascii_lowercase().contains("ssh");
    match authority.rfind('@') {
        Some(at) if ssh => match authority[..at].split_once(':') {
            Some((user, _)) => {
                out.push_str(user);
                out.push(':');
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        },
        Some(at) => {
            out.push_str(MASK);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let after = &rest[authority_end..];
    let Some(question) = after.find('?') else {
        out.push_str(after);
        return out;
    };
    out.push_str(&after[..=question]);
    let query_and_fragment = &after[question + 1..];
    let query_end = query_and_fragment
        .find('#')
        .unwrap_or(query_and_fragment.len());
    let pairs: Vec<String> = query_and_fragment[..query_end]
        .split('&')
        .map(masked_pair)
        .collect();
    out.push_str(&pairs.join("&"));
    out.push_str(&query_and_fragment[query_end..]);
    out
}

/// `name=value` with the value masked when the name says it is a secret; punctuation that ends
/// the surrounding sentence (`token=abc:` in `...?token=abc: refused`) stays.
fn masked_pair(pair: &str) -> String {
    let Some((name, value)) = pair.split_once('=') else {
        return pair.to_owned();
    };
    let kept = value.trim_end_matches(['.', ',', ':', ';', ')', ']', '}']);
    if kept.is_empty() || kept == MASK || !is_secret_parameter(name) {
        return pair.to_owned();
    }
    format!("{name}={MASK}{}", &value[kept.len()..])
}

/// Whether a query parameter named `name` carries a secret: a token, key, password, signature
/// or credential, in the spellings of OAuth, S3, GCS and Azure pre-signed URLs.
pub fn is_secret_parameter(name: &str) -> bool {
    let name = name
        .to_ascii_lowercase()
        .replace("%5f", "_")
        .replace("%2d", "-");
    const EXACT: &[&str] = &["sig", "key", "auth", "code", "pwd", "pass", "jwt"];
    const PARTS: &[&str] = &[
        "token",
        "secret",
        "password",
        "passwd",
        "signature",
        "credential",
        "apikey",
        "api_key",
        "api-key",
        "access_key",
        "authorization",
        "session",
    ];
    EXACT.contains(&name.as_str()) || PARTS.iter().any(|part| name.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_is_masked_and_the_host_stays() {
        for (given, shown) in [
            ("https://user:tok3n@host/x.git", "https://***@host/x.git"),
            ("https://tok3n@host", "https://***@host"),
            (
                "cannot reach the git remote http://u:p@127.0.0.1:9/x.git: refused",
                "cannot reach the git remote http://***@127.0.0.1:9/x.git: refused",
            ),
            (
                "http://[::1]@0.0.0.0:80/token",
                "http://***@0.0.0.0:80/token",
            ),
            ("(see https://a:b@c:1)", "(see https://***@c:1)"),
            ("\"https://a:b@c/d\"", "\"https://***@c/d\""),
            ("git+https://a:b@c/d", "git+https://***@c/d"),
            ("https://a@b@c/d@e", "https://***@c/d@e"),
            (
                "https://host/path@not-a-user",
                "https://host/path@not-a-user",
            ),
            (
                "no url here, user@example.org",
                "no url here, user@example.org",
            ),
            ("://nothing", "://nothing"),
            ("ssh://git@github.com/x", "ssh://git@github.com/x"),
            ("ssh://me:pw@127.0.0.1:22", "ssh://me:***@127.0.0.1:22"),
            ("git+ssh://me:pw@h/x", "git+ssh://me:***@h/x"),
        ] {
            assert_eq!(text(given), shown, "{given}");
        }
    }

    #[test]
    fn secret_query_values_are_masked_and_others_stay() {
        for (given, shown) in [
            (
                "https://h/simple/?token=abc&n=2",
                "https://h/simple/?token=***&n=2",
            ),
            (
                "https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=f00d&X-Amz-Expires=60",
                "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Expires=60",
            ),
            (
                "https://a.blob.core.windows.net/c?sv=2020&sig=xyz#frag",
                "https://a.blob.core.windows.net/c?sv=2020&sig=***#frag",
            ),
            (
                "the index at https://h/s?access_token=abc: refused",
                "the index at https://h/s?access_token=***: refused",
            ),
            (
                "http://127.0.0.1:1/token?scope=repository%3Aa%3Apull&service=reg",
                "http://127.0.0.1:1/token?scope=repository%3Aa%3Apull&service=reg",
            ),
            (
                "https://u:p@h/?private_token=1",
                "https://***@h/?private_token=***",
            ),
        ] {
            assert_eq!(text(given), shown, "{given}");
        }
    }

    #[test]
    fn masking_twice_changes_nothing_more() {
        let once = text("https://u:p@h/x?token=t and http://a@b/?sig=s ssh://u:p@h").into_owned();
        assert_eq!(text(&once), once);
        assert!(matches!(text(&once), Cow::Borrowed(_)));
    }

    #[test]
    fn json_documents_are_masked_everywhere() {
        let document = serde_json::json!({
            "error": { "message": "at https://u:p@h/x", "causes": ["https://h/?token=t"] },
            "n": 1,
        });
        let masked = json(&document).to_string();
        assert!(!masked.contains("u:p"), "{masked}");
        assert!(!masked.contains("token=t"), "{masked}");
        assert!(masked.contains("https://***@h/x"), "{masked}");
    }
}
