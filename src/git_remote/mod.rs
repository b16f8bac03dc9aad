//! Git remotes: a URL and a branch in, full 40-hex commit ids out.
//!
//! The branch head is read the way `git ls-remote` reads it (connect, list the advertised
//! refs, disconnect), so nothing is downloaded to learn it. Resolving a revision that is not a
//! ref tip (a short id, an older commit) needs the objects: the branch is fetched into a bare
//! cache repository under `$XDG_CACHE_HOME/forge/git/` (else `~/.cache/forge/git/`), one per
//! URL and shared with the patch stage, and later fetches only bring what is new.

pub mod http;

use std::path::PathBuf;

use sha2::{Digest as _, Sha256};

use crate::diagnostics::{Advice, Advise};
use crate::redact::Redacted;
use crate::types::git::{BranchName, GitRev};
use crate::types::url::Url;

/// One git remote, asked about one URL at a time.
pub trait GitRemote {
    /// The commit `branch` points at on the remote (its `HEAD` when no branch is named).
    fn head(&self, url: &Url, branch: Option<&BranchName>) -> Result<GitRev, GitRemoteError>;

    /// The full id of `revision` (7 to 40 hex digits), which must be on `branch` of the remote
    /// (or on any of its branches when none is named).
    fn resolve(
        &self,
        url: &Url,
        branch: Option<&BranchName>,
        revision: &str,
    ) -> Result<GitRev, GitRemoteError>;
}

/// Why a remote could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GitRemoteError {
    /// Connecting or listing failed.
    #[error("cannot reach the git remote {}: {message}", Redacted(url))]
    Unreachable {
        /// The remote.
        url: String,
        /// What libgit2 said.
        message: String,
    },
    /// The remote has no such branch.
    #[error("the git remote {} has no branch `{branch}`", Redacted(url))]
    NoBranch {
        /// The remote.
        url: String,
        /// The branch.
        branch: String,
    },
    /// The revision is not on the remote (or not on the branch).
    #[error("revision {revision} is not on {place} of {}", Redacted(url))]
    UnknownRevision {
        /// The remote.
        url: String,
        /// Where it was looked for: `branch nv_dev` or `any branch`.
        place: String,
        /// What was asked for.
        revision: String,
    },
    /// A short revision matches several commits.
    #[error(
        "revision {revision} is ambiguous on {}: it prefixes more than one commit",
        Redacted(url)
    )]
    Ambiguous {
        /// The remote.
        url: String,
        /// What was asked for.
        revision: String,
    },
    /// The local cache could not be used.
    #[error("cannot use the git cache {}: {message}", path.display())]
    Cache {
        /// The cache repository.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Advise for GitRemoteError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            GitRemoteError::Unreachable { .. } => {
                "check the pin's `url` and the network (`git ls-remote URL` shows what forge sees)"
                    .to_owned()
            }
            GitRemoteError::NoBranch { .. } => {
                "fix the pin's `branch` in pins.toml (`git ls-remote --heads URL` lists them)"
                    .to_owned()
            }
            GitRemoteError::UnknownRevision { .. } => {
                "pass --to with a commit that is on the branch, or leave --to out for the branch head"
                    .to_owned()
            }
            GitRemoteError::Ambiguous { .. } => "pass more hex digits of the commit".to_owned(),
            GitRemoteError::Cache { .. } => {
                "remove the cache folder (forge recreates it) or set XDG_CACHE_HOME to a writable folder"
                    .to_owned()
            }
        })
    }
}

crate::advised!(GitRemoteError);

/// The real remote: libgit2, with a fetch cache for revisions that are not ref tips.
#[derive(Debug, Clone, Default)]
pub struct Git2Remote;

impl Git2Remote {
    fn list(&self, url: &Url) -> Result<Vec<(String, git2::Oid)>, GitRemoteError> {
        let unreachable = |error: git2::Error| GitRemoteError::Unreachable {
            url: url.to_string(),
            message: error.message().to_owned(),
        };
        let mut remote = detached_remote(url.as_str()).map_err(unreachable)?;
        remote
            .connect(git2::Direction::Fetch)
            .map_err(unreachable)?;
        let heads = remote
            .list()
            .map_err(unreachable)?
            .iter()
            .map(|head| (head.name().to_owned(), head.oid()))
            .collect();
        // A failed disconnect changes nothing about what was listed.
        let _ = remote.disconnect();
        Ok(heads)
    }

    fn cache(&self, url: &Url) -> Result<git2::Repository, GitRemoteError> {
        // The folder the patch stage fetches into too: a bump that checks a series reuses it.
        let path = cache_folder(url.as_str());
        let cache_error = |error: git2::Error| GitRemoteError::Cache {
            path: path.clone(),
            message: error.message().to_owned(),
        };
        match git2::Repository::open_bare(&path) {
            Ok(repository) => Ok(repository),
            Err(_) => {
                std::fs::create_dir_all(&path).map_err(|error| GitRemoteError::Cache {
                    path: path.clone(),
                    message: error.to_string(),
                })?;
                git2::Repository::init_bare(&path).map_err(cache_error)
            }
        }
    }
}

/// A remote for `url` that belongs to no repository, for listing its refs. Every remote forge
/// makes comes from here or from `anonymous_remote`, so that http(s) goes through forge's
/// transport.
pub fn detached_remote(url: &str) -> Result<git2::Remote<'static>, git2::Error> {
    http::register();
    git2::Remote::create_detached(url)
}

/// An unnamed remote for `url` in `repository`, for fetching into it.
pub fn anonymous_remote<'r>(
    repository: &'r git2::Repository,
    url: &str,
) -> Result<git2::Remote<'r>, git2::Error> {
    http::register();
    repository.remote_anonymous(url)
}

/// The cache repository of the git remote `url`: `cache_root()/git/<16 hex of its sha256>`.
pub fn cache_folder(url: &str) -> PathBuf {
    let key = hex::encode(Sha256::digest(url.as_bytes()));
    cache_root().join("git").join(&key[..16])
}

/// `FORGE_CACHE_DIR`, else `$XDG_CACHE_HOME/forge`, else `~/.cache/forge`, else a folder in the
/// temporary directory.
pub fn cache_root() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(cache) = non_empty("FORGE_CACHE_DIR") {
        return PathBuf::from(cache);
    }
    if let Some(cache) = non_empty("XDG_CACHE_HOME") {
        return PathBuf::from(cache).join("forge");
    }
    match non_empty("HOME") {
        Some(home) => PathBuf::from(home).join(".cache").join("forge"),
        None => std::env::temp_dir().join("forge-cache"),
    }
}

fn branch_ref(branch: &BranchName) -> String {
    format!("refs/heads/{branch}")
}

impl GitRemote for Git2Remote {
    fn head(&self, url: &Url, branch: Option<&BranchName>) -> Result<GitRev, GitRemoteError> {
        let heads = self.list(url)?;
        let wanted = branch.map_or_else(|| "HEAD".to_owned(), branch_ref);
        let oid = heads
            .iter()
            .find(|(name, _)| *name == wanted)
            .map(|(_, oid)| *oid)
            .ok_or_else(|| GitRemoteError::NoBranch {
                url: url.to_string(),
                branch: branch.map_or_else(|| "HEAD".to_owned(), ToString::to_string),
            })?;
        Ok(oid
            .to_string()
            .parse()
            .expect("an object id is 40 hex digits"))
    }

    fn resolve(
        &self,
        url: &Url,
        branch: Option<&BranchName>,
        revision: &str,
    ) -> Result<GitRev, GitRemoteError> {
        let heads = self.list(url)?;
        let tips: Vec<git2::Oid> = match branch {
            Some(branch) => {
                let wanted = branch_ref(branch);
                let tip = heads
                    .iter()
                    .find(|(name, _)| *name == wanted)
                    .ok_or_else(|| GitRemoteError::NoBranch {
                        url: url.to_string(),
                        branch: branch.to_string(),
                    })?;
                vec![tip.1]
            }
            None => heads
                .iter()
                .filter(|(name, _)| name.starts_with("refs/heads/"))
                .map(|(_, oid)| *oid)
                .collect(),
        };
        let place = branch.map_or_else(
            || "any branch".to_owned(),
            |branch| format!("branch {branch}"),
        );
        let unknown = || GitRemoteError::UnknownRevision {
            url: url.to_string(),
            place: place.clone(),
            revision: revision.to_owned(),
        };
        // A branch tip is answered from the listing alone.
        if let Some(tip) = tips
            .iter()
            .find(|tip| tip.to_string().starts_with(revision))
        {
            return Ok(tip
                .to_string()
                .parse()
                .expect("an object id is 40 hex digits"));
        }

        let repository = self.cache(url)?;
        let refspecs: Vec<String> = match branch {
            Some(branch) => vec![format!(
                "+{}:refs/remotes/origin/{branch}",
                branch_ref(branch)
            )],
            None => vec!["+refs/heads/*:refs/remotes/origin/*".to_owned()],
        };
        let mut remote = anonymous_remote(&repository, url.as_str()).map_err(|error| {
            GitRemoteError::Unreachable {
                url: url.to_string(),
                message: error.message().to_owned(),
            }
        })?;
        remote
            .fetch(&refspecs, None, None)
            .map_err(|error| GitRemoteError::Unreachable {
                url: url.to_string(),
                message: error.message().to_owned(),
            })?;
        let commit = match repository.revparse_single(revision) {
            Ok(object) => object.peel_to_commit().map_err(|_| unknown())?.id(),
            Err(error) if error.code() == git2::ErrorCode::Ambiguous => {
                return Err(GitRemoteError::Ambiguous {
                    url: url.to_string(),
                    revision: revision.to_owned(),
                });
            }
            Err(_) => return Err(unknown()),
        };
        let on_a_tip = tips.iter().any(|tip| {
            *tip == commit
                || repository
                    .graph_descendant_of(*tip, commit)
                    .unwrap_or(false)
        });
        if !on_a_tip {
            return Err(unknown());
        }
        Ok(commit
            .to_string()
            .parse()
            .expect("an object id is 40 hex digits"))
    }
}
