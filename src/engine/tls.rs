//! TLS to a daemon as the docker CLI makes it with `DOCKER_TLS_VERIFY`: the files checked and
//! named before any handshake, the daemon's certificate held to `ca.pem` alone, and a refused
//! handshake told apart from a daemon out of reach.

use bollard::errors::Error as BollardError;

use super::EngineError;
use super::address::TlsFiles;
use super::bounded::Dial;

/// Whether the connection failed in the TLS handshake (a certificate one side would not accept)
/// rather than in reaching the daemon: rustls reports its errors as I/O errors of kind
/// `InvalidData`, where a daemon that is down gives `ConnectionRefused` and the like.
pub(super) fn refused_by_tls(error: &BollardError) -> bool {
    // An I/O error wrapping another hides the inner one from `source()`: look inside too.
    fn invalid_data(error: &std::io::Error) -> bool {
        error.kind() == std::io::ErrorKind::InvalidData
            || error
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<std::io::Error>())
                .is_some_and(invalid_data)
    }
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(invalid_data)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// TLS to `authority` as the docker CLI makes it with `DOCKER_TLS_VERIFY`: the daemon's
/// certificate checked against `ca.pem` alone, `cert.pem` and `key.pem` presented as the client's.
pub(super) fn tls_dial(host: &str, authority: &str, files: &TlsFiles) -> Result<Dial, EngineError> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    check_tls_files(host, files)?;
    let unreadable =
        |path: std::path::PathBuf, error: &dyn std::fmt::Display| EngineError::TlsFile {
            host: host.to_owned(),
            path: path.into(),
            problem: format!("cannot be used: {error}"),
        };
    let mut roots = rustls::RootCertStore::empty();
    let authorities = CertificateDer::pem_file_iter(files.ca())
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|error| unreadable(files.ca(), &error))?;
    for certificate in authorities {
        roots
            .add(certificate)
            .map_err(|error| unreadable(files.ca(), &error))?;
    }
    let chain = CertificateDer::pem_file_iter(files.certificate())
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|error| unreadable(files.certificate(), &error))?;
    let key = PrivateKeyDer::from_pem_file(files.key())
        .map_err(|error| unreadable(files.key(), &error))?;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| unreadable(files.ca(), &error))?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|error| unreadable(files.key(), &error))?;
    let name = authority
        .rsplit_once(':')
        .map_or(authority, |(name, _)| name)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let server =
        ServerName::try_from(name.to_owned()).map_err(|error| EngineError::UnsupportedHost {
            host: host.to_owned(),
            reason: format!("{name} is not a name TLS can check a certificate against: {error}"),
        })?;
    Ok(Dial::Tls {
        authority: authority.to_owned(),
        server,
        config: std::sync::Arc::new(config),
    })
}

/// Checks that the files TLS needs are there and hold PEM of the right kind, so that a wrong
/// file is named before any handshake, which would only say it failed.
fn check_tls_files(host: &str, files: &TlsFiles) -> Result<(), EngineError> {
    let wanted = [
        (files.ca(), "CERTIFICATE-----", "a PEM certificate"),
        (files.certificate(), "CERTIFICATE-----", "a PEM certificate"),
        (files.key(), "PRIVATE KEY-----", "a PEM private key"),
    ];
    for (path, marker, kind) in wanted {
        let problem = match std::fs::read_to_string(&path) {
            Ok(text) if text.contains(marker) => continue,
            Ok(_) => format!("does not hold {kind}"),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                "does not exist".to_owned()
            }
            Err(error) => format!("cannot be read: {error}"),
        };
        return Err(EngineError::TlsFile {
            host: host.to_owned(),
            path: path.into(),
            problem,
        });
    }
    Ok(())
}
