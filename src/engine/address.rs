//! Where a Docker daemon listens: a `DOCKER_HOST`-style address in, a `DaemonAddress` out.
//!
//! The address is read as the docker CLI reads it: `unix:///path`, `tcp://HOST[:PORT]` (TLS
//! when `DOCKER_TLS_VERIFY` is set, with `ca.pem`, `cert.pem` and `key.pem` from
//! `DOCKER_CERT_PATH`), and `ssh://[USER@]HOST[:PORT]`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::types::oci::Platform;

/// The socket the docker CLI uses when `DOCKER_HOST` is unset.
pub const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// The port the docker CLI assumes for `tcp://HOST` without TLS.
const PLAIN_PORT: u16 = 2375;

/// The port the docker CLI assumes for `tcp://HOST` with TLS.
const TLS_PORT: u16 = 2376;

/// A daemon address forge knows how to reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonAddress {
    /// A Unix socket on this machine.
    Unix(PathBuf),
    /// A TCP listener, spoken to in plain HTTP or, with `tls`, over TLS with a client certificate.
    Tcp {
        /// `HOST:PORT`, the port filled in when the address left it out.
        authority: String,
        /// The certificate folder, when TLS is on.
        tls: Option<TlsFiles>,
    },
    /// A daemon on another machine, reached through the system `ssh`.
    Ssh(SshDestination),
}

/// Why an address was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressError {
    /// Why.
    pub reason: String,
}

fn refuse(reason: impl Into<String>) -> AddressError {
    AddressError {
        reason: reason.into(),
    }
}

impl DaemonAddress {
    /// Parses `host` as `DOCKER_HOST` spells it; `tls` is the certificate folder when TLS is on
    /// (see `TlsFiles::from_environment`), used for `tcp://` addresses.
    pub fn parse(host: &str, tls: Option<TlsFiles>) -> Result<Self, AddressError> {
        let Some((scheme, rest)) = host.split_once("://") else {
            return Err(refuse(
                "expected unix://PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT]",
            ));
        };
        match scheme {
            "unix" => {
                // `unix://` alone is the default socket, as for the docker CLI.
                let path = if rest.is_empty() {
                    DEFAULT_HOST.trim_start_matches("unix://")
                } else {
                    rest
                };
                if !path.starts_with('/') {
                    return Err(refuse("a unix:// address needs an absolute socket path"));
                }
                Ok(DaemonAddress::Unix(PathBuf::from(path)))
            }
            // `http://` is how bollard spells a plain tcp:// address.
            "tcp" | "http" => {
                let default_port = if tls.is_some() { TLS_PORT } else { PLAIN_PORT };
                let (host, port) = host_and_port(rest.trim_end_matches('/'))?;
                if host.is_empty() {
                    return Err(refuse("a tcp:// address needs a host"));
                }
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.to_owned()
                };
                Ok(DaemonAddress::Tcp {
                    authority: format!("{host}:{}", port.unwrap_or(default_port)),
                    tls,
                })
            }
            "ssh" => SshDestination::parse(rest).map(DaemonAddress::Ssh),
            other => Err(refuse(format!(
                "the scheme {other}:// is not one of unix://, tcp:// and ssh://"
            ))),
        }
    }
}

/// Splits `HOST[:PORT]` or `[IPV6][:PORT]`.
fn host_and_port(text: &str) -> Result<(&str, Option<u16>), AddressError> {
    if text.contains('/') {
        return Err(refuse(format!(
            "{text:?} has a path after the host; name only HOST[:PORT]"
        )));
    }
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or_else(|| {
            refuse(format!(
                "{text:?} opens an IPv6 address with [ but never closes it"
            ))
        })?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(refuse(format!("{text:?} has text after the IPv6 address"))),
            },
        }
    } else if text.matches(':').count() > 1 {
        return Err(refuse(format!(
            "{text:?} looks like an IPv6 address; write it in brackets, as [ADDRESS]:PORT"
        )));
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = port
        .map(|port| {
            port.parse::<u16>()
                .ok()
                .filter(|port| *port != 0)
                .ok_or_else(|| refuse(format!("{port:?} is not a port number")))
        })
        .transpose()?;
    Ok((host, port))
}

impl fmt::Display for DaemonAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DaemonAddress::Unix(path) => write!(f, "unix://{}", path.display()),
            DaemonAddress::Tcp { authority, .. } => write!(f, "tcp://{authority}"),
            DaemonAddress::Ssh(destination) => destination.fmt(f),
        }
    }
}

/// The folder holding the client certificate, its key and the CA of a TLS daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The folder.
    pub folder: PathBuf,
}

impl TlsFiles {
    /// TLS as the docker CLI turns it on: `DOCKER_TLS_VERIFY` set to anything but the empty
    /// string (even `0`, as for the CLI), with the files in `DOCKER_CERT_PATH`, else the docker
    /// configuration folder (`DOCKER_CONFIG`, else `~/.docker`).
    pub fn from_environment() -> Option<Self> {
        let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        set("DOCKER_TLS_VERIFY")?;
        let folder = set("DOCKER_CERT_PATH")
            .or_else(|| set("DOCKER_CONFIG"))
            .map(PathBuf::from)
            .or_else(|| set("HOME").map(|home| Path::new(&home).join(".docker")))
            .unwrap_or_else(|| PathBuf::from(".docker"));
        Some(Self { folder })
    }

    /// The CA that signed the daemon's certificate.
    pub fn ca(&self) -> PathBuf {
        self.folder.join("ca.pem")
    }

    /// The client certificate.
    pub fn certificate(&self) -> PathBuf {
        self.folder.join("cert.pem")
    }

    /// The client certificate's private key.
    pub fn key(&self) -> PathBuf {
        self.folder.join("key.pem")
    }
}

/// `ssh://[USER@]HOST[:PORT]`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshDestination {
    /// The remote user, else ssh's own choice (its configuration, else the local user).
    pub user: Option<String>,
    /// The host name or address, without brackets.
    pub host: String,
    /// The port, else ssh's own choice.
    pub port: Option<u16>,
}

impl SshDestination {
    /// Parses what follows `ssh://`.
    fn parse(rest: &str) -> Result<Self, AddressError> {
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, host_port) = match rest.rsplit_once('@') {
            Some((user, host_port)) => (Some(user), host_port),
            None => (None, rest),
        };
        if let Some(user) = user {
            if user.contains(':') {
                return Err(refuse(
                    "an ssh:// address cannot carry a password; use a key or an ssh agent",
                ));
            }
            if user.is_empty() || user.starts_with('-') {
                return Err(refuse(format!("{user:?} is not a user name")));
            }
        }
        let (host, port) = host_and_port(host_port)?;
        // ssh would read a leading `-` as an option.
        if host.is_empty() || host.starts_with('-') {
            return Err(refuse("an ssh:// address needs a host"));
        }
        Ok(Self {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for SshDestination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ssh://")?;
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

/// A daemon as `--host` names it, spelt as `DOCKER_HOST` spells it: checked when read, so a
/// command line naming none of the forms is refused before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonHost(String);

impl DaemonHost {
    /// The address as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for DaemonHost {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // The TLS setting only fills in a default port: the forms are the same without it.
        DaemonAddress::parse(text, None)
            .map(|_| Self(text.to_owned()))
            .map_err(|error| error.reason)
    }
}

impl fmt::Display for DaemonHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `--node PLATFORM=URL`: the daemon that builds one platform of the recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The platform, `OS/ARCH[/VARIANT]`.
    pub platform: Platform,
    /// The daemon that builds it natively.
    pub host: DaemonHost,
}

impl std::str::FromStr for Node {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (platform, host) = text
            .split_once('=')
            .ok_or("expected PLATFORM=URL, such as linux/arm64=ssh://USER@HOST")?;
        Ok(Self {
            platform: platform
                .parse()
                .map_err(|error: crate::types::GrammarError| error.to_string())?,
            host: host.parse()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_nodes_are_checked_when_read() {
        assert_eq!(
            "ssh://ops@spark-2".parse::<DaemonHost>().unwrap().as_str(),
            "ssh://ops@spark-2"
        );
        assert!(
            "node-2:2375"
                .parse::<DaemonHost>()
                .unwrap_err()
                .contains("expected unix://PATH")
        );
        let node: Node = "linux/arm64=tcp://spark-2:2375".parse().unwrap();
        assert_eq!(node.platform.as_str(), "linux/arm64");
        assert_eq!(node.host.as_str(), "tcp://spark-2:2375");
        assert!(
            "linux/arm64"
                .parse::<Node>()
                .unwrap_err()
                .contains("expected PLATFORM=URL")
        );
        assert!(
            "arm64=unix:///s.sock"
                .parse::<Node>()
                .unwrap_err()
                .contains("platform")
        );
        assert!(
            "linux/arm64=spark-2"
                .parse::<Node>()
                .unwrap_err()
                .contains("expected unix://")
        );
    }

    fn tls() -> Option<TlsFiles> {
        Some(TlsFiles {
            folder: PathBuf::from("/certs"),
        })
    }

    #[test]
    fn unix_addresses_name_a_socket_and_default_to_the_clis() {
        assert_eq!(
            DaemonAddress::parse("unix:///run/docker.sock", None),
            Ok(DaemonAddress::Unix(PathBuf::from("/run/docker.sock")))
        );
        assert_eq!(
            DaemonAddress::parse("unix://", None),
            Ok(DaemonAddress::Unix(PathBuf::from("/var/run/docker.sock")))
        );
        assert!(DaemonAddress::parse("unix://docker.sock", None).is_err());
    }

    #[test]
    fn tcp_addresses_take_the_clis_default_port_for_plain_and_tls() {
        let parse = |host, tls| match DaemonAddress::parse(host, tls) {
            Ok(DaemonAddress::Tcp { authority, tls }) => (authority, tls.is_some()),
            other => panic!("{host}: {other:?}"),
        };
        assert_eq!(
            parse("tcp://node-2", None),
            ("node-2:2375".to_owned(), false)
        );
        assert_eq!(
            parse("tcp://node-2", tls()),
            ("node-2:2376".to_owned(), true)
        );
        assert_eq!(
            parse("tcp://127.0.0.1:9000/", tls()),
            ("127.0.0.1:9000".to_owned(), true)
        );
        assert_eq!(
            parse("http://[::1]", None),
            ("[::1]:2375".to_owned(), false)
        );
        assert!(DaemonAddress::parse("tcp://node-2:port", None).is_err());
        assert!(DaemonAddress::parse("tcp://:2375", None).is_err());
        assert!(DaemonAddress::parse("tcp://node-2/v1.41", None).is_err());
    }

    #[test]
    fn ssh_addresses_keep_user_host_and_port_apart() {
        let parse = |host| match DaemonAddress::parse(host, None) {
            Ok(DaemonAddress::Ssh(destination)) => destination,
            other => panic!("{host}: {other:?}"),
        };
        let full = parse("ssh://ops@spark-2:2222");
        assert_eq!(full.user.as_deref(), Some("ops"));
        assert_eq!(full.host, "spark-2");
        assert_eq!(full.port, Some(2222));
        assert_eq!(full.to_string(), "ssh://ops@spark-2:2222");
        let bare = parse("ssh://spark-2");
        assert_eq!((bare.user, bare.port), (None, None));
        assert_eq!(parse("ssh://[fe80::1]:22").host, "fe80::1");
        assert!(DaemonAddress::parse("ssh://ops:secret@spark-2", None).is_err());
        assert!(DaemonAddress::parse("ssh://-oProxyCommand=x", None).is_err());
        assert!(DaemonAddress::parse("ssh://spark-2/var/run/docker.sock", None).is_err());
    }

    #[test]
    fn an_ipv6_address_without_brackets_is_refused_not_split() {
        let error = DaemonAddress::parse("tcp://fe80::1", None).unwrap_err();
        assert!(error.reason.contains("write it in brackets"), "{error:?}");
        assert!(DaemonAddress::parse("ssh://fe80::1:22", None).is_err());
    }

    #[test]
    fn other_schemes_are_refused() {
        assert!(DaemonAddress::parse("npipe:////./pipe/docker_engine", None).is_err());
        assert!(DaemonAddress::parse("/var/run/docker.sock", None).is_err());
    }
}
