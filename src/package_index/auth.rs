//! Credentials for package indexes, as pip finds them: the user information of an index URL
//! (`https://user:token@host/simple`), else the netrc entry for the index's host (`NETRC`, else
//! `~/.netrc`; its `default` entry when no `machine` matches). They go, as HTTP Basic
//! authentication, only to the host and port of an index that has them; a file on another host
//! (a CDN) gets none, and no redirect carries them (the agent drops them). Nothing prints them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;

use crate::types::url::Url;

/// Credentials by `host[:port]`.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    by_host: BTreeMap<String, String>,
}

/// A URL's parts: `scheme://`, the user information, `host[:port]`, the rest.
struct Parts<'a> {
    scheme: &'a str,
    userinfo: Option<&'a str>,
    host: &'a str,
    rest: &'a str,
}

fn parts(url: &str) -> Option<Parts<'_>> {
    let at = url.find("://")? + 3;
    let (scheme, after) = url.split_at(at);
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((userinfo, host)) => (Some(userinfo), host),
        None => (None, authority),
    };
    Some(Parts {
        scheme,
        userinfo,
        host,
        rest,
    })
}

/// `url` without its user information: what is actually requested.
pub fn without_userinfo(url: &str) -> String {
    match parts(url) {
        Some(parts) if parts.userinfo.is_some() => {
            format!("{}{}{}", parts.scheme, parts.host, parts.rest)
        }
        _ => url.to_owned(),
    }
}

impl Credentials {
    /// The credentials of each index in `indexes`: its URL's user information, else the netrc
    /// entry for its host.
    pub fn for_indexes<'a>(indexes: impl IntoIterator<Item = &'a Url>) -> Self {
        let netrc = netrc_path()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        let mut by_host = BTreeMap::new();
        for index in indexes {
            let Some(parts) = parts(index.as_str()) else {
                continue;
            };
            let pair = match parts.userinfo {
                Some(userinfo) => {
                    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                    Some((percent_decode(user), percent_decode(password)))
                }
                None => {
                    let host = parts
                        .host
                        .rsplit_once(':')
                        .map_or(parts.host, |(host, _)| host);
                    netrc_entry(&netrc, host)
                }
            };
            if let Some((user, password)) = pair {
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                by_host
                    .entry(parts.host.to_ascii_lowercase())
                    .or_insert(format!("Basic {token}"));
            }
        }
        Self { by_host }
    }

    /// The `Authorization` value for a request to `url`, when it goes to an index host that has
    /// credentials.
    pub fn header_for(&self, url: &str) -> Option<&str> {
        let parts = parts(url)?;
        self.by_host
            .get(&parts.host.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// `NETRC`, else `~/.netrc`.
fn netrc_path() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    non_empty("NETRC")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".netrc")))
}

/// `(login, password)` for `host` in a netrc text: its `machine` entry, else `default`.
fn netrc_entry(text: &str, host: &str) -> Option<(String, String)> {
    let mut tokens = text.split_whitespace();
    let mut entries: Vec<(Option<String>, Option<String>, Option<String>)> = Vec::new();
    while let Some(token) = tokens.next() {
        match token {
            "machine" => entries.push((tokens.next().map(ToOwned::to_owned), None, None)),
            "default" => entries.push((None, None, None)),
            "login" => {
                if let Some(entry) = entries.last_mut() {
                    entry.1 = tokens.next().map(ToOwned::to_owned);
                }
            }
            "password" => {
                if let Some(entry) = entries.last_mut() {
                    entry.2 = tokens.next().map(ToOwned::to_owned);
                }
            }
            "account" => {
                tokens.next();
            }
            _ => {}
        }
    }
    let matching = entries
        .iter()
        .find(|(machine, _, _)| {
            machine
                .as_deref()
                .is_some_and(|m| m.eq_ignore_ascii_case(host))
        })
        .or_else(|| entries.iter().find(|(machine, _, _)| machine.is_none()))?;
    Some((matching.1.clone()?, matching.2.clone().unwrap_or_default()))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netrc_machine_then_default() {
        let text = "machine other.example login a password b\nmachine index.example\n  login me\n  password s3cret\ndefault login anon password x\n";
        assert_eq!(
            netrc_entry(text, "index.example"),
            Some(("me".to_owned(), "s3cret".to_owned()))
        );
        assert_eq!(
            netrc_entry(text, "elsewhere.example"),
            Some(("anon".to_owned(), "x".to_owned()))
        );
        assert_eq!(netrc_entry("machine a login b password c", "z"), None);
    }

    #[test]
    fn userinfo_is_split_off_and_decoded() {
        assert_eq!(
            without_userinfo("https://u:p%40ss@host:8443/simple/"),
            "https://host:8443/simple/"
        );
        let index: Url = "https://u:p%40ss@Host:8443/simple".parse().unwrap();
        let credentials = Credentials::for_indexes([&index]);
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("u:p@ss")
        );
        assert_eq!(
            credentials.header_for("https://host:8443/files/x.whl"),
            Some(expected.as_str())
        );
        assert_eq!(credentials.header_for("https://host/files/x.whl"), None);
        assert_eq!(credentials.header_for("https://cdn.example/x.whl"), None);
    }
}
