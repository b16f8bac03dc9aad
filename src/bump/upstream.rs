//! Where new versions come from: the clients a bump asks (package index, git remote, registry)
//! and what the last build's image holds.

use std::collections::BTreeMap;

use crate::git_remote::GitRemote;
use crate::package_index::PackageIndex;
use crate::package_index::select::Indexes;
use crate::pins::Pin;
use crate::registry::Registry;
use crate::types::oci::RegistryHost;
use crate::types::url::Url;

/// Where new versions come from.
pub struct Upstream<'a> {
    /// The package index client.
    pub index: &'a dyn PackageIndex,
    /// Which index each package is asked on.
    pub indexes: &'a Indexes,
    /// The git remote client.
    pub git: &'a dyn GitRemote,
    /// The registry client.
    pub registry: &'a dyn Registry,
    /// The Python distributions the last build's image holds (normalized name to version), as
    /// forge.lock records them: what the base supplies to requirements on unpinned packages.
    pub installed: &'a BTreeMap<String, String>,
    /// The glibc the last build's image runs, as forge.lock records it: which manylinux wheels
    /// load there.
    pub glibc: Option<&'a str>,
}

/// The real clients an `Upstream` borrows: the package index, the git remote and the registry,
/// set up once per command.
pub struct Clients {
    indexes: Indexes,
    index: crate::package_index::SimpleIndex,
    git: crate::git_remote::Git2Remote,
    registry: crate::registry::RegistryClient,
    installed: BTreeMap<String, String>,
    glibc: Option<String>,
}

/// Where `pin bump` and `pin outdated` look, beyond what the recipe names.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// A mirror that replaces every package index (`--index-url`, `FORGE_INDEX_URL`).
    pub index_url: Option<crate::types::url::Url>,
    /// Registry hosts that may be spoken to over plain HTTP.
    pub insecure_registries: Vec<RegistryHost>,
}

impl Clients {
    /// Clients for `recipe`: the index chosen from the mirror in `sources`, pip's settings and
    /// pins.toml; the registry with the base image's credentials (the environment's only when
    /// they are for the base's registry) and plain HTTP for the insecure hosts of `sources`.
    pub fn new(
        recipe: &crate::recipe::Recipe,
        sources: &Sources,
    ) -> Result<Self, crate::package_index::select::SelectError> {
        let indexes = Indexes::discover(sources.index_url.as_ref(), recipe.pins.index.as_ref())?;
        // Credentials go to the hosts of the indexes in force only.
        let own = recipe
            .pins
            .pins
            .values()
            .flat_map(Pin::distributions)
            .filter_map(|distribution| distribution.index.cloned())
            .collect::<Vec<Url>>();
        let credentials = crate::package_index::auth::Credentials::for_indexes(
            [indexes.default_index().0]
                .into_iter()
                .chain(indexes.extra())
                .chain(&own),
        );
        // A record that cannot be read says nothing about the base here; the build reports it.
        let base = crate::lock::load(&recipe.root)
            .ok()
            .flatten()
            .and_then(|lock| lock.base().cloned());
        let (installed, glibc) =
            base.map_or_else(Default::default, |base| (base.packages, base.glibc));
        Ok(Self {
            installed,
            glibc,
            indexes,
            index: crate::package_index::SimpleIndex::with_credentials(credentials),
            git: crate::git_remote::Git2Remote,
            registry: crate::registry::RegistryClient::new(sources.insecure_registries.clone())
                .with_credentials_for(
                    recipe.pins.base.image.registry().as_str(),
                    Some(recipe.pins.image.repository.registry().as_str()),
                ),
        })
    }

    /// The clients, as the bump planner asks them.
    pub fn upstream(&self) -> Upstream<'_> {
        Upstream {
            index: &self.index,
            indexes: &self.indexes,
            git: &self.git,
            registry: &self.registry,
            installed: &self.installed,
            glibc: self.glibc.as_deref(),
        }
    }
}
