//! Container registries: a repository in, its tags and manifest digests out, over the
//! distribution API (`/v2/<name>/tags/list`, `/v2/<name>/manifests/<reference>`).
//!
//! Authentication follows what the registry asks for: anonymous first; on a `401` with
//! `WWW-Authenticate: Bearer realm=..,service=..,scope=..` a token is fetched from the realm
//! (with the user's credentials when there are some) and the request is sent again; on a
//! `Basic` challenge the credentials are sent directly. Credentials are looked up (see
//! `credentials`) only when a registry asks for them. Plain HTTP is used only for loopback hosts
//! and for hosts named with `--insecure-registry`; every other registry is spoken to over HTTPS.
//!
//! The credentials, and the tokens fetched with them, go only to the registry's own scheme,
//! host and port (see `trust`): a next link elsewhere is refused, a redirect elsewhere is
//! followed without them, a token realm elsewhere is asked anonymously, and nothing moves from
//! https to http.
//!
//! `api` is what forge asks (`Registry`) of which repository, `client` speaks it over HTTP(S),
//! `manifest` reads what comes back, `upload` pushes blobs and manifests, `referrers` lists and
//! adds the manifests that refer to an image, `error` says what went wrong.

mod api;
mod auth;
mod client;
pub mod credentials;
mod error;
mod manifest;
pub mod referrers;
pub mod trust;
mod upload;

pub use api::{Registry, RemoteRepository, image_of, natural_order};
pub use auth::Challenge;
pub use client::RegistryClient;
pub use credentials::{Credentials, CredentialsError, Lookup, Origin};
pub use error::RegistryError;
pub use manifest::{Held, MANIFEST_TYPES, Manifest, ManifestMediaType};
pub use trust::{Trust, UrlRefusal};
