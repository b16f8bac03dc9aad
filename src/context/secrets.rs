//! Secret-looking files: names that usually hold private keys, tokens or passwords. The context
//! never carries one silently, nor drops one silently: the build refuses until `.dockerignore`
//! excludes it or pins.toml's `[context] allow_secrets` names it.

/// Folders whose every file counts as a secret.
const FOLDERS: &[&str] = &[".ssh", ".gnupg"];

/// File names that hold credentials.
const NAMES: &[&str] = &[
    ".env",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".dockercfg",
];

/// `.env.*` files that are, by convention, templates without values.
const ENV_TEMPLATES: &[&str] = &[".env.example", ".env.sample", ".env.template"];

/// The names ssh gives private keys (`id_rsa`, `id_ed25519_sk`, `id_rsa.old`); their `.pub`
/// halves are public.
const KEY_PREFIXES: &[&str] = &["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];

/// Extensions of key and certificate stores, compared without regard to case.
const EXTENSIONS: &[&str] = &[".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk"];

/// Whether the file at `path` (context-relative, `/`-separated) looks like a secret.
pub fn looks_secret(path: &str) -> bool {
    let mut components = path.rsplit('/');
    let name = components.next().unwrap_or_default();
    let lowercase = name.to_ascii_lowercase();
    components.any(|folder| FOLDERS.contains(&folder))
        || NAMES.contains(&name)
        || (name.starts_with(".env.") && !ENV_TEMPLATES.contains(&name))
        || (KEY_PREFIXES.iter().any(|prefix| name.starts_with(prefix)) && !name.ends_with(".pub"))
        || EXTENSIONS
            .iter()
            .any(|extension| lowercase.len() > extension.len() && lowercase.ends_with(extension))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_credentials_and_env_files_look_secret() {
        for path in [
            "overlays/app/id_ed25519",
            "overlays/app/id_ecdsa_sk",
            "overlays/app/id_rsa.old",
            "overlays/app/.ssh/config",
            "overlays/app/.env",
            "overlays/app/.env.local",
            "overlays/app/.netrc",
            "overlays/app/.git-credentials",
            "overlays/app/client.p12",
            "overlays/app/tls/SERVER.PEM",
            "overlays/app/tls/server.key",
        ] {
            assert!(looks_secret(path), "{path}");
        }
        for path in [
            "overlays/app/id_ed25519.pub",
            "overlays/app/.env.example",
            "overlays/app/keys.py",
            "overlays/app/monkey",
            "overlays/app/.key",
            "overlays/app/ssh/config",
            "overlays/app/environment",
        ] {
            assert!(!looks_secret(path), "{path}");
        }
    }
}
