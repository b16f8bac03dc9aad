//! Moving pins: a pin, what upstream offers for it, and the constraints pins.toml records in;
//! the versions on offer, each with what refuses it, out.
//!
//! 1. `offer` asks upstream (the package index, a git remote, a registry) what there is.
//! 2. Every candidate newer than the pin is checked against the constraints of the pin and of
//!    its lockstep group (a group that is not lockstep moves as one, each member at its own
//!    version: `group`): deny lists (never overridable), allowed ranges (`--force` may cross
//!    them), wheel sets (every wheel must exist at the version on its own index), group
//!    partners (each must exist at the version too), wheels that fit the image (platform,
//!    Python, ABI, Requires-Python; `index::wheel`) and what the wheels declare of each other
//!    (`requires`: Requires-Dist from PEP 658 metadata files), and what they require of packages
//!    the recipe does not pin against what the last build's image holds (`from_base`).
//! 3. `edit` rewrites pins.toml with only the moved values changed; `steps` says which
//!    Dockerfile steps the move invalidates.
//! 4. A wheel set downloaded by URL is offered what the project's releases hold instead
//!    (`release`): each release newer than the pin, held back by the deny list, the allowed
//!    range, or a file of the set it lacks.

pub mod edit;
pub mod group;
pub mod release;
pub mod requires;
pub mod steps;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::diagnostics::{Advice, Advise};
use crate::git_remote::{GitRemote, GitRemoteError};
use crate::index::select::Indexes;
use crate::index::wheel::Target;
use crate::index::{Fit, IndexError, PackageIndex, Releases, metadata_cache};
use crate::pins::{Pin, PinKind, Pins, Source};
use crate::registry::{Registry, RegistryError, RemoteRepository};
use crate::types::dockerfile::Text;
use crate::types::git::GitRev;
use crate::types::oci::Tag;
use crate::types::python::{LocalLabel, PackageName, Version};
use crate::types::recipe::PinName;
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
}

/// The real clients an `Upstream` borrows: the package index, the git remote and the registry,
/// set up once per command.
pub struct Clients {
    indexes: Indexes,
    index: crate::index::SimpleIndex,
    git: crate::git_remote::Git2Remote,
    registry: crate::registry::RegistryClient,
    installed: BTreeMap<String, String>,
}

/// Where `pin bump` and `pin outdated` look, beyond what the recipe names.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// A mirror that replaces every package index (`--index-url`, `FORGE_INDEX_URL`).
    pub index_url: Option<crate::types::url::Url>,
    /// Registry hosts that may be spoken to over plain HTTP.
    pub insecure_registries: Vec<String>,
}

impl Clients {
    /// Clients for `recipe`: the index chosen from the mirror in `sources`, pip's settings and
    /// pins.toml; the registry with the base image's credentials (the environment's only when
    /// they are for the base's registry) and plain HTTP for the insecure hosts of `sources`.
    pub fn new(
        recipe: &crate::recipe::Recipe,
        sources: &Sources,
    ) -> Result<Self, crate::index::select::SelectError> {
        let indexes = Indexes::discover(sources.index_url.as_ref(), recipe.pins.index.as_ref())?;
        // Credentials go to the hosts of the indexes in force only.
        let own = recipe
            .pins
            .pins
            .values()
            .flat_map(packages_of)
            .filter_map(|(_, _, own)| own.cloned())
            .collect::<Vec<Url>>();
        let credentials = crate::index::auth::Credentials::for_indexes(
            [indexes.default_index().0]
                .into_iter()
                .chain(indexes.extra())
                .chain(&own),
        );
        // A record that cannot be read says nothing about the base here; the build reports it.
        let installed = crate::lock::load(&recipe.root)
            .ok()
            .flatten()
            .and_then(|lock| lock.base().map(|base| base.packages.clone()))
            .unwrap_or_default();
        Ok(Self {
            installed,
            indexes,
            index: crate::index::SimpleIndex::with_credentials(credentials),
            git: crate::git_remote::Git2Remote,
            registry: crate::registry::RegistryClient::new(sources.insecure_registries.clone())
                .with_credentials_for(
                    recipe.pins.base.image.registry(),
                    &recipe.pins.image.repository.registry(),
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
        }
    }
}

/// Whether pre-releases (`a`, `b`, `rc`, `.dev`) are on offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prereleases {
    /// Only final releases (and post-releases).
    Exclude,
    /// Pre-releases too.
    Include,
}

/// One package a pin installs, and where it is looked up.
#[derive(Debug, Clone)]
pub struct Package {
    /// The pin it belongs to.
    pub pin: PinName,
    /// The distribution.
    pub name: PackageName,
    /// The local label its versions carry (`cu130`), if any.
    pub local: Option<LocalLabel>,
    /// The index it is asked on.
    pub index: Url,
    /// What that index offers.
    pub releases: Releases,
}

impl Package {
    /// The version this package carries when its pin is at `version`.
    pub fn version_at(&self, version: &Version) -> String {
        match &self.local {
            Some(local) => format!("{version}+{local}"),
            None => version.to_string(),
        }
    }

    /// Whether the index has this package at the pin version `version`.
    pub fn has(&self, version: &Version) -> bool {
        self.parsed_at(version)
            .is_some_and(|version| self.releases.has(&version))
    }

    /// Why the index yanked this package at the pin version `version`, when every file of it
    /// is yanked.
    pub fn yanked(&self, version: &Version) -> Option<String> {
        self.releases.yanked(&self.parsed_at(version)?)
    }

    /// Whether this package at the pin version `version` has a wheel for `target`.
    pub fn fit(&self, version: &Version, target: &Target) -> Fit {
        match self.parsed_at(version) {
            Some(parsed) => self.releases.fit(&parsed, target),
            None => Fit::None {
                offered: Vec::new(),
            },
        }
    }

    fn parsed_at(&self, version: &Version) -> Option<pep440_rs::Version> {
        pep440_rs::Version::from_str(&self.version_at(version)).ok()
    }
}

/// Whether a move may land on yanked files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YankedFiles {
    /// Never: versions on offer are the ones with a wheel that is not yanked.
    Refused,
    /// An exact version given with `--to` (PEP 592 lets an exact pin use yanked files).
    Allowed,
}

/// Why a version may not be moved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A deny entry: never overridable.
    Denied {
        /// The pin whose deny list names it.
        pin: PinName,
        /// The recorded reason.
        reason: Text,
    },
    /// Outside a pin's `allow` range: `--force` crosses it.
    OutsideRange {
        /// The pin whose range it is.
        pin: PinName,
        /// The range.
        range: String,
    },
    /// A wheel of the set is not on its index at the version.
    WheelMissing {
        /// The wheel.
        package: PackageName,
        /// The version it would carry.
        version: String,
        /// Where it was looked for.
        index: Url,
    },
    /// No wheel of a package at the version fits the image (platform, Python, ABI,
    /// Requires-Python).
    NoFit {
        /// The package.
        package: PackageName,
        /// The version it would carry.
        version: String,
        /// The image, in words.
        target: String,
        /// The wheels there are at the version.
        offered: Vec<String>,
    },
    /// A requirement a wheel declares (`Requires-Dist`) that the pinned set would not meet.
    Requires {
        /// The package that declares it.
        package: String,
        /// Its version.
        version: String,
        /// The requirement (`nvidia-cutlass-dsl>=4.8.0`).
        requirement: String,
        /// The version the required package would be at.
        found: String,
        /// The required package (normalized).
        dependency: String,
    },
    /// A requirement on a package the recipe does not pin, which the base's recorded version
    /// does not meet.
    Base {
        /// The package that declares it.
        package: String,
        /// Its version.
        version: String,
        /// The requirement.
        requirement: String,
        /// The version the last build's image holds.
        found: String,
    },
    /// A lockstep partner is not on its index at the version.
    PartnerMissing {
        /// The partner pin.
        pin: PinName,
        /// Its package.
        package: PackageName,
        /// The version it would carry.
        version: String,
        /// Where it was looked for.
        index: Url,
    },
}

impl Refusal {
    /// Whether `--force` overrides it.
    pub fn forceable(&self) -> bool {
        matches!(self, Refusal::OutsideRange { .. })
    }

    /// A one-word kind for `--json`: `denied`, `range`, `wheel-set`, `group`, `wheel-fit`.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::NoFit { .. } => "wheel-fit",
            Refusal::Requires { .. } => "requires",
            Refusal::Base { .. } => "base",
            Refusal::Denied { .. } => "denied",
            Refusal::OutsideRange { .. } => "range",
            Refusal::WheelMissing { .. } => "wheel-set",
            Refusal::PartnerMissing { .. } => "group",
        }
    }
}

impl Refusal {
    /// What refuses, without the version it refuses: the same words for every version a
    /// constraint holds back, so that notes can list the versions once.
    pub fn summary(&self) -> String {
        match self {
            Refusal::WheelMissing { package, index, .. } => {
                format!("wheel {package} is not on {index}")
            }
            Refusal::PartnerMissing {
                pin,
                package,
                index,
                ..
            } => format!("group partner {pin} ({package}) is not on {index}"),
            Refusal::NoFit {
                package, target, ..
            } => format!("no wheel of {package} fits {target}"),
            Refusal::Requires {
                package,
                requirement,
                ..
            } => format!("{package} requires {requirement}"),
            Refusal::Base {
                package,
                requirement,
                found,
                ..
            } => format!("{package} requires {requirement} of the base, which has {found}"),
            Refusal::Denied { .. } | Refusal::OutsideRange { .. } => self.to_string(),
        }
    }
}

impl Refusal {
    /// `summary`, with the version of the package that declares a requirement: the words for
    /// versions of another package that requirement holds back.
    pub fn held_by(&self) -> String {
        match self {
            Refusal::Requires {
                package,
                version,
                requirement,
                ..
            } => format!("{package} {version} requires {requirement}"),
            _ => self.summary(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Denied { pin, reason } => write!(f, "denied for {pin}: {reason}"),
            Refusal::OutsideRange { pin, range } => {
                write!(f, "outside the allowed range {range} of {pin}")
            }
            Refusal::WheelMissing {
                package,
                version,
                index,
            } => write!(f, "wheel {package} {version} is not on {index}"),
            Refusal::PartnerMissing {
                pin,
                package,
                version,
                index,
            } => write!(
                f,
                "group partner {pin} ({package} {version}) is not on {index}"
            ),
            Refusal::Requires {
                package,
                version,
                requirement,
                found,
                ..
            } => write!(f, "{package} {version} requires {requirement}, not {found}"),
            Refusal::Base {
                package,
                version,
                requirement,
                found,
            } => write!(
                f,
                "{package} {version} requires {requirement} from the base, whose last build has {found}"
            ),
            Refusal::NoFit {
                package,
                version,
                target,
                offered,
            } if offered.is_empty() => {
                write!(
                    f,
                    "no wheel of {package} {version} fits {target} (no wheels)"
                )
            }
            Refusal::NoFit {
                package,
                version,
                target,
                offered,
            } => write!(
                f,
                "no wheel of {package} {version} fits {target} (wheels: {})",
                offered.join(", ")
            ),
        }
    }
}

/// A version on offer and what refuses it (nothing, when it is allowed).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The version.
    pub version: Version,
    /// What refuses it.
    pub refusals: Vec<Refusal>,
}

impl Candidate {
    /// Allowed as it is.
    pub fn allowed(&self) -> bool {
        self.refusals.is_empty()
    }

    /// Allowed with `--force`.
    pub fn forceable(&self) -> bool {
        self.refusals.iter().all(Refusal::forceable)
    }
}

/// What upstream offers a version-pinned pin and its group.
#[derive(Debug, Clone)]
pub struct VersionOffer {
    /// The pin.
    pub pin: PinName,
    /// Where it stands.
    pub current: Version,
    /// The pins that move with it (itself first).
    pub members: Vec<PinName>,
    /// Every package of every member, as its index sees it.
    pub packages: Vec<Package>,
    /// Every version newer than the current one, newest first.
    pub newer: Vec<Candidate>,
    /// The kind of each member.
    pub kinds: BTreeMap<PinName, PinKind>,
    /// What the image's wheels must fit, when the platform is Linux.
    pub target: Option<Target>,
    /// Why the index yanked the current version of the pin's first package, if it did.
    pub current_yanked: Option<String>,
    /// Every package the recipe pins (normalized name), at its current version.
    pub pinned: BTreeMap<String, pep440_rs::Version>,
    /// What each package declares at a version (normalized name, version), where the index
    /// offers its METADATA.
    pub declared: BTreeMap<(String, String), Vec<requires::Declared>>,
    /// Whether the members carry one version (`[groups.NAME] lockstep = true`); otherwise each
    /// member moves to its own version (`group::plan`).
    pub lockstep: bool,
    /// Each member's versions newer than its own, newest first.
    pub available: BTreeMap<PinName, Vec<Version>>,
    /// Each member's current version.
    pub currents: BTreeMap<PinName, Version>,
    /// The distributions the last build's image holds (normalized name to version).
    pub installed: BTreeMap<String, String>,
    /// Whether the members are the pin's group (otherwise pins a requirement brought in).
    pub grouped: bool,
}

impl VersionOffer {
    /// What pins.toml writes for `member` when the group moves to `version`: a python pin
    /// keeps its local label (`2.9.0+cu130`), a wheel set carries the bare version.
    pub fn pin_version(&self, member: &PinName, version: &Version) -> String {
        let package = self.packages.iter().find(|package| &package.pin == member);
        match (self.kinds.get(member), package) {
            (Some(PinKind::Python), Some(package)) => package.version_at(version),
            _ => version.to_string(),
        }
    }

    /// The newest version on offer, allowed or not.
    pub fn newest(&self) -> Option<&Candidate> {
        self.newer.first()
    }

    /// The newest version the constraints allow.
    pub fn newest_allowed(&self) -> Option<&Candidate> {
        self.newer.iter().find(|candidate| candidate.allowed())
    }

    /// Reads what the packages of the move declare at `version`, where the index offers it.
    pub fn learn(&mut self, version: &Version, upstream: &Upstream<'_>) {
        let members = self.members.clone();
        for member in &members {
            self.learn_member(member, version, upstream);
        }
    }

    /// Reads what the packages of `member` declare at `version`, where the index offers it.
    pub fn learn_member(&mut self, member: &PinName, version: &Version, upstream: &Upstream<'_>) {
        for package in self
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            let version_text = package.version_at(version);
            let key = (package.name.normalized(), version_text);
            if self.declared.contains_key(&key) {
                continue;
            }
            if let Some(parsed) = package.parsed_at(version)
                && let Some(requirements) =
                    declared(upstream, &package.releases, &parsed, self.target.as_ref())
            {
                self.declared.insert(key, requirements);
            }
        }
    }

    /// The constraints as they apply to `version`, which need not be newer or on the index:
    /// every member at `version` in a lockstep group, the pin alone otherwise.
    pub fn judge(&self, pins: &Pins, version: &Version, yanked: YankedFiles) -> Candidate {
        let moves: Vec<(PinName, Version)> = if self.lockstep {
            self.members
                .iter()
                .map(|member| (member.clone(), version.clone()))
                .collect()
        } else {
            vec![(self.pin.clone(), version.clone())]
        };
        Candidate {
            version: version.clone(),
            refusals: judge(pins, self, &moves, yanked),
        }
    }

    /// The pin's own packages that are not on their index at `version` (yanked files count
    /// as there).
    pub fn on_index(&self, version: &Version) -> Vec<&Package> {
        self.packages
            .iter()
            .filter(|package| {
                package.pin == self.pin
                    && !package.has(version)
                    && package.yanked(version).is_none()
            })
            .collect()
    }
}

/// Why the upstream of a pin could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// The package index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The git remote failed.
    #[error(transparent)]
    Git(#[from] GitRemoteError),
    /// The registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl Advise for OfferError {
    fn advice(&self) -> Advice {
        match self {
            OfferError::Index(error) => error.advice(),
            OfferError::Git(error) => error.advice(),
            OfferError::Registry(error) => error.advice(),
        }
    }
}

crate::advised!(OfferError);

/// What the index offers the version-pinned `pin` (python or wheels) and its group.
pub fn version_offer(
    pins: &Pins,
    pin: &Pin,
    upstream: &Upstream<'_>,
    prereleases: Prereleases,
) -> Result<VersionOffer, OfferError> {
    let mut members = vec![pin.name.clone()];
    if let Some(group) = &pin.group {
        members.extend(
            pins.pins
                .values()
                .filter(|other| other.group.as_ref() == Some(group) && other.name != pin.name)
                .map(|other| other.name.clone()),
        );
    }
    offer_for(pins, pin, members, true, upstream, prereleases)
}

/// What the index offers `pin` moved together with `others`, pins outside its group whose
/// requirements tie them to it: a coordinated move, each at its own version.
pub fn coordinated_offer(
    pins: &Pins,
    pin: &Pin,
    others: &[PinName],
    upstream: &Upstream<'_>,
    prereleases: Prereleases,
) -> Result<VersionOffer, OfferError> {
    let mut members = vec![pin.name.clone()];
    members.extend(others.iter().filter(|other| **other != pin.name).cloned());
    offer_for(pins, pin, members, false, upstream, prereleases)
}

fn offer_for(
    pins: &Pins,
    pin: &Pin,
    members: Vec<PinName>,
    members_are_group: bool,
    upstream: &Upstream<'_>,
    prereleases: Prereleases,
) -> Result<VersionOffer, OfferError> {
    let current = pin.version().expect("a version-pinned kind").clone();
    let mut fetched: BTreeMap<(String, String), Releases> = BTreeMap::new();
    let mut packages = Vec::new();
    for member in &members {
        let member = &pins.pins[member];
        for (name, local, own_index) in packages_of(member) {
            let index = upstream.indexes.for_package(own_index).clone();
            let key = (index.to_string(), name.normalized());
            let primary = packages.is_empty();
            let releases = match fetched.get(&key) {
                Some(releases) => releases.clone(),
                None => {
                    let releases = match releases_everywhere(upstream, own_index, &name) {
                        Ok(releases) => releases,
                        // A wheel or partner the index lacks altogether is missing at every
                        // version: a refusal naming it, not a failed lookup.
                        Err(IndexError::NotFound { .. }) if !primary => Releases::default(),
                        Err(error) => return Err(error.into()),
                    };
                    fetched.insert(key, releases.clone());
                    releases
                }
            };
            packages.push(Package {
                pin: member.name.clone(),
                name,
                local,
                index,
                releases,
            });
        }
    }

    let (available, currents) = member_versions(pins, &members, &packages, prereleases);
    let versions = available[&pin.name].clone();
    let current_parsed = current.pep440();
    let kinds = members
        .iter()
        .map(|member| (member.clone(), pins.pins[member].kind()))
        .collect();
    let current_yanked = packages[0].yanked(
        &Version::from_str(&current_parsed.clone().without_local().to_string())
            .unwrap_or_else(|_| current.clone()),
    );
    let lockstep = members_are_group
        && pin
            .group
            .as_ref()
            .is_some_and(|group| pins.lockstep.contains(group));
    let mut offer = VersionOffer {
        pin: pin.name.clone(),
        current,
        members,
        packages,
        newer: Vec::new(),
        kinds,
        target: Target::new(&pins.image.platform, pins.base.python.as_ref()),
        current_yanked,
        pinned: BTreeMap::new(),
        declared: BTreeMap::new(),
        lockstep,
        available,
        currents,
        installed: upstream.installed.clone(),
        grouped: members_are_group,
    };
    learn_the_others(pins, &mut offer, upstream, &mut fetched);
    if !offer.lockstep {
        group::order_members(&mut offer);
    }
    offer.newer = versions
        .iter()
        .map(|version| {
            if offer.lockstep {
                offer.learn(version, upstream);
            } else {
                offer.learn_member(&pin.name.clone(), version, upstream);
            }
            offer.judge(pins, version, YankedFiles::Refused)
        })
        .collect();
    Ok(offer)
}

/// Each member's versions newer than its own (newest first; its first package says which
/// exist) and its current version without a local label.
fn member_versions(
    pins: &Pins,
    members: &[PinName],
    packages: &[Package],
    prereleases: Prereleases,
) -> (BTreeMap<PinName, Vec<Version>>, BTreeMap<PinName, Version>) {
    let mut available = BTreeMap::new();
    let mut currents = BTreeMap::new();
    for member in members {
        let first = packages
            .iter()
            .find(|package| &package.pin == member)
            .expect("every member installs a package");
        let member_current = pins.pins[member]
            .version()
            .expect("a version-pinned kind")
            .clone();
        available.insert(
            member.clone(),
            newer_versions(first, &member_current, prereleases),
        );
        let bare = Version::from_str(&member_current.pep440().without_local().to_string())
            .unwrap_or(member_current);
        currents.insert(member.clone(), bare);
    }
    (available, currents)
}

/// The versions of `package` newer than `current` (pre-releases only when asked), newest
/// first, without the local label the pin adds itself.
fn newer_versions(package: &Package, current: &Version, prereleases: Prereleases) -> Vec<Version> {
    let current_parsed = current.pep440();
    let wanted_local = package.local.as_ref().map(ToString::to_string);
    let mut versions: Vec<Version> = package
        .releases
        .versions
        .iter()
        .filter(|version| local_label(version) == wanted_local)
        .map(|version| version.clone().without_local())
        .filter(|version| *version > current_parsed.clone().without_local())
        .filter(|version| prereleases == Prereleases::Include || !version.any_prerelease())
        .filter_map(|version| Version::from_str(&version.to_string()).ok())
        .collect();
    versions.sort_by_key(|version| std::cmp::Reverse(version.pep440()));
    versions.dedup();
    versions
}

/// What every index a package is asked on offers it (pip's extra indexes after the default),
/// merged as pip merges them; an index that lacks the package adds nothing, and the package is
/// `NotFound` only when none has it.
fn releases_everywhere(
    upstream: &Upstream<'_>,
    own_index: Option<&Url>,
    name: &PackageName,
) -> Result<Releases, IndexError> {
    let mut merged: Option<Releases> = None;
    let mut missing = None;
    for index in upstream.indexes.all_for_package(own_index) {
        match upstream.index.releases(index, name) {
            Ok(releases) => match &mut merged {
                Some(merged) => {
                    merged.versions.extend(releases.versions);
                    merged.files.extend(releases.files);
                }
                None => merged = Some(releases),
            },
            Err(error @ IndexError::NotFound { .. }) => {
                missing.get_or_insert(error);
            }
            Err(error) => return Err(error),
        }
    }
    match (merged, missing) {
        (Some(merged), _) => Ok(merged),
        (None, Some(error)) => Err(error),
        (None, None) => Ok(Releases::default()),
    }
}

/// Records every pinned package at its current version and, for the pins outside the move,
/// what they declare there: a move must meet their requirements too.
fn learn_the_others(
    pins: &Pins,
    offer: &mut VersionOffer,
    upstream: &Upstream<'_>,
    fetched: &mut BTreeMap<(String, String), Releases>,
) {
    for pin in pins.pins.values() {
        let Some(version) = pin.version() else {
            continue;
        };
        let bare = Version::from_str(&version.pep440().without_local().to_string())
            .unwrap_or_else(|_| version.clone());
        for (name, local, own_index) in packages_of(pin) {
            let text = match &local {
                Some(local) => format!("{bare}+{local}"),
                None => bare.to_string(),
            };
            let Ok(parsed) = pep440_rs::Version::from_str(&text) else {
                continue;
            };
            offer.pinned.insert(name.normalized(), parsed.clone());
            let index = upstream.indexes.for_package(own_index).clone();
            let key = (index.to_string(), name.normalized());
            if !fetched.contains_key(&key) {
                // A pin outside the move that cannot be looked up declares nothing here.
                let releases = releases_everywhere(upstream, own_index, &name).unwrap_or_default();
                fetched.insert(key.clone(), releases);
            }
            let target = offer.target.as_ref();
            if let Some(requirements) = declared(upstream, &fetched[&key], &parsed, target) {
                offer
                    .declared
                    .insert((name.normalized(), parsed.to_string()), requirements);
            }
        }
    }
}

/// What a package declares at `version`: the METADATA of a wheel of it, from the PEP 658
/// metadata file where the index offers one, else read out of a wheel that fits the image by
/// range requests; `None` when neither can be read.
fn declared(
    upstream: &Upstream<'_>,
    releases: &Releases,
    version: &pep440_rs::Version,
    target: Option<&Target>,
) -> Option<Vec<requires::Declared>> {
    let wheels: Vec<&crate::index::IndexFile> = releases
        .files
        .iter()
        .filter(|file| &file.version == version && file.url.is_some())
        .filter(|file| file.name.ends_with(".whl"))
        .collect();
    let file = wheels.iter().find(|file| file.metadata).or_else(|| {
        wheels
            .iter()
            .find(|file| target.is_none_or(|target| target.fits_wheel(&file.name)))
            .or_else(|| wheels.first())
    })?;
    if let Some(text) = file.sha256.as_deref().and_then(metadata_cache::read) {
        return Some(requires::requirements(&text));
    }
    let url = file.url.as_deref()?;
    let text = if file.metadata {
        upstream.index.metadata(url).ok()?
    } else {
        upstream.index.metadata_in_wheel(url).ok()?
    };
    if let Some(sha256) = &file.sha256 {
        metadata_cache::write(sha256, &text);
    }
    Some(requires::requirements(&text))
}

fn local_label(version: &pep440_rs::Version) -> Option<String> {
    version
        .to_string()
        .split_once('+')
        .map(|(_, local)| local.to_owned())
}

/// The pin that installs `package` (normalized name), if one does.
pub fn pin_of_package<'a>(pins: &'a Pins, package: &str) -> Option<&'a Pin> {
    pins.pins.values().find(|pin| {
        packages_of(pin)
            .iter()
            .any(|(name, _, _)| name.normalized() == package)
    })
}

/// The packages a pin installs: (name, local label, own index).
fn packages_of(pin: &Pin) -> Vec<(PackageName, Option<LocalLabel>, Option<&Url>)> {
    match &pin.source {
        Source::Python {
            package,
            version,
            index,
            ..
        } => {
            let local = version
                .as_str()
                .split_once('+')
                .and_then(|(_, local)| local.parse().ok());
            vec![(package.clone(), local, index.as_ref())]
        }
        Source::Wheels { wheels, .. } => wheels
            .iter()
            .map(|wheel| {
                (
                    wheel.package.clone(),
                    wheel.local.clone(),
                    wheel.index.as_ref(),
                )
            })
            .collect(),
        Source::Git { .. } | Source::Assert { .. } => Vec::new(),
    }
}

/// What refuses `moves` (each member to its version): deny lists and allowed ranges, the
/// packages each member installs (on their index, with a wheel that fits the image), and the
/// requirements the pinned set would leave unmet afterwards.
fn judge(
    pins: &Pins,
    offer: &VersionOffer,
    moves: &[(PinName, Version)],
    yanked: YankedFiles,
) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    let moves: Vec<(PinName, Version)> = moves
        .iter()
        .map(|(member, version)| {
            let bare = Version::from_str(version.as_str().split('+').next().unwrap_or_default())
                .unwrap_or_else(|_| version.clone());
            (member.clone(), bare)
        })
        .collect();
    for (member, version) in &moves {
        let pin = &pins.pins[member];
        let written = offer.pin_version(member, version);
        let written = Version::from_str(&written).unwrap_or_else(|_| version.clone());
        if let Some(denied) = pin.denied(&written).or_else(|| pin.denied(version)) {
            refusals.push(Refusal::Denied {
                pin: member.clone(),
                reason: denied.reason.clone(),
            });
        }
    }
    for (member, version) in &moves {
        let pin = &pins.pins[member];
        if let Some(allow) = pin
            .allow
            .as_ref()
            .filter(|allow| !allow.contains(&version.pep440()))
        {
            refusals.push(Refusal::OutsideRange {
                pin: member.clone(),
                range: allow.as_str().to_owned(),
            });
        }
    }
    for (member, version) in &moves {
        let mut packages = offer
            .packages
            .iter()
            .filter(|package| &package.pin == member);
        let first = packages.next().map(|package| package.name.clone());
        for package in offer
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            package_refusals(
                offer,
                package,
                version,
                yanked,
                first.as_ref(),
                &mut refusals,
            );
        }
    }
    refusals.extend(requirement_refusals(offer, &moves));
    refusals.extend(from_base(offer, &moves).into_iter().filter_map(|needed| {
        let found = needed.installed?;
        (!needed.holds).then_some(Refusal::Base {
            package: needed.package,
            version: needed.version,
            requirement: needed.requirement,
            found,
        })
    }));
    refusals
}

/// A requirement of a moved package on a package the recipe does not pin: the base must
/// supply it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromBase {
    /// The package that declares it.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The requirement (`cuda-python>=12.0`).
    pub requirement: String,
    /// The version the last build's image holds, when forge.lock records one.
    pub installed: Option<String>,
    /// Whether that version meets the requirement (true when none is recorded).
    pub holds: bool,
}

/// What the packages `moves` installs require of packages the recipe does not pin, checked
/// against what the last build's image holds where forge.lock records it.
pub fn from_base(offer: &VersionOffer, moves: &[(PinName, Version)]) -> Vec<FromBase> {
    let environment = offer.target.as_ref().and_then(requires::environment);
    let mut needed = Vec::new();
    for (member, version) in moves {
        for package in offer
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            let at = package.version_at(version);
            let Some(declared) = offer.declared.get(&(package.name.normalized(), at.clone()))
            else {
                continue;
            };
            for (written, requirement) in declared {
                let applies = match &environment {
                    Some(environment) => requirement.evaluate_markers(environment, &[]),
                    None => requirement.marker.evaluate_extras(&[]),
                };
                let name = requirement.name.to_string();
                if !applies || offer.pinned.contains_key(&name) {
                    continue;
                }
                let installed = offer.installed.get(&name).cloned();
                let holds = installed.as_ref().is_none_or(|found| {
                    match (
                        &requirement.version_or_url,
                        pep440_rs::Version::from_str(found),
                    ) {
                        (
                            Some(pep508_rs::VersionOrUrl::VersionSpecifier(specifiers)),
                            Ok(found),
                        ) => specifiers.contains(&found.without_local()),
                        _ => true,
                    }
                });
                needed.push(FromBase {
                    package: package.name.to_string(),
                    version: at.clone(),
                    requirement: written.replace(' ', ""),
                    installed,
                    holds,
                });
            }
        }
    }
    needed
}

/// Whether `package` is on its index at `version` with a wheel that fits the image.
fn package_refusals(
    offer: &VersionOffer,
    package: &Package,
    version: &Version,
    yanked: YankedFiles,
    first_of_member: Option<&PackageName>,
    refusals: &mut Vec<Refusal>,
) {
    let present =
        package.has(version) || yanked == YankedFiles::Allowed && package.yanked(version).is_some();
    if present {
        let Some(target) = &offer.target else { return };
        match package.fit(version, target) {
            Fit::Fits => {}
            Fit::OnlyYanked if yanked == YankedFiles::Allowed => {}
            Fit::OnlyYanked => refusals.push(Refusal::NoFit {
                package: package.name.clone(),
                version: package.version_at(version),
                target: target.describe(),
                offered: vec!["only yanked ones".to_owned()],
            }),
            Fit::None { offered } => refusals.push(Refusal::NoFit {
                package: package.name.clone(),
                version: package.version_at(version),
                target: target.describe(),
                offered,
            }),
        }
        return;
    }
    if package.pin == offer.pin || !offer.lockstep {
        // The pin's first package not having it is "not on the index", said by the caller.
        if Some(&package.name) != first_of_member || package.pin != offer.pin {
            refusals.push(Refusal::WheelMissing {
                package: package.name.clone(),
                version: package.version_at(version),
                index: package.index.clone(),
            });
        }
    } else {
        refusals.push(Refusal::PartnerMissing {
            pin: package.pin.clone(),
            package: package.name.clone(),
            version: package.version_at(version),
            index: package.index.clone(),
        });
    }
}

/// The requirements `moves` would leave unmet: those the moved packages declare at their new
/// versions on any pinned package, and those the other pins declare on the moved ones.
fn requirement_refusals(offer: &VersionOffer, moves: &[(PinName, Version)]) -> Vec<Refusal> {
    let environment = offer.target.as_ref().and_then(requires::environment);
    let mut after = offer.pinned.clone();
    let mut moved = Vec::new();
    for (member, version) in moves {
        for package in offer
            .packages
            .iter()
            .filter(|package| &package.pin == member)
        {
            if let Some(parsed) = package.parsed_at(version) {
                after.insert(package.name.normalized(), parsed);
                moved.push((package.name.normalized(), package.version_at(version)));
            }
        }
    }
    let mut unmet = Vec::new();
    for ((name, at), requirements) in &offer.declared {
        let is_moved = moved.iter().any(|(moved, _)| moved == name);
        if is_moved && !moved.contains(&(name.clone(), at.clone())) {
            continue; // another version of a moved package
        }
        if !is_moved && offer.pinned.get(name).map(ToString::to_string).as_ref() != Some(at) {
            continue;
        }
        for found in requires::unmet(name, at, requirements, environment.as_ref(), &after) {
            // A pin outside the move is only held to what the move changes.
            let on_moved = moved.iter().any(|(moved, _)| *moved == found.dependency);
            if is_moved || on_moved {
                unmet.push(found);
            }
        }
    }
    unmet
        .into_iter()
        .map(|found| Refusal::Requires {
            package: found.package,
            version: found.version,
            requirement: found.requirement,
            found: found.found,
            dependency: found.dependency,
        })
        .collect()
}

/// What a git remote offers a git pin.
#[derive(Debug, Clone)]
pub struct GitOffer {
    /// Where the pin stands.
    pub current: GitRev,
    /// The head of its branch (or the remote's HEAD), full 40-hex.
    pub head: GitRev,
}

impl GitOffer {
    /// Whether the pin already names the head (a short revision that prefixes it counts as
    /// behind, since it is not yet the full id).
    pub fn is_current(&self) -> bool {
        self.current == self.head
    }
}

/// What the remote offers the git pin `pin`.
pub fn git_offer(pin: &Pin, upstream: &Upstream<'_>) -> Result<GitOffer, OfferError> {
    let Source::Git { url, branch, rev } = &pin.source else {
        unreachable!("git_offer is called for git pins only")
    };
    Ok(GitOffer {
        current: rev.clone(),
        head: upstream.git.head(url, branch.as_ref())?,
    })
}

/// What the registry offers the base image.
#[derive(Debug, Clone)]
pub struct BaseOffer {
    /// The tag the base names now, if any.
    pub current: Option<String>,
    /// The newest tag matching `[base] tags` (the current tag when there is no pattern).
    pub newest: String,
    /// The digest of the newest tag's manifest.
    pub digest: crate::types::oci::Digest,
    /// Tags newer than the current one that match the pattern, newest first.
    pub newer: Vec<String>,
}

/// Asks the registry for the base image's tags and the digest of the one to move to; `to`
/// names a tag instead of the newest.
pub fn base_offer(
    pins: &Pins,
    upstream: &Upstream<'_>,
    to: Option<&Tag>,
) -> Result<BaseOffer, OfferError> {
    let base = &pins.base;
    let repository = RemoteRepository::of(&base.image);
    let current = base.image.tag().map(ToOwned::to_owned);
    let (newest, newer) = match (to, &base.tags) {
        (Some(tag), _) => (tag.to_string(), Vec::new()),
        (None, Some(pattern)) => {
            let matcher = pattern.compile();
            let mut matching: Vec<String> = upstream
                .registry
                .tags(&repository)?
                .into_iter()
                .filter(|tag| matcher.matches(tag))
                .collect();
            matching.sort_by(|a, b| crate::registry::natural_order(b, a));
            let newer: Vec<String> = matching
                .iter()
                .filter(|tag| {
                    current
                        .as_deref()
                        .is_none_or(|current| crate::registry::natural_order(tag, current).is_gt())
                })
                .cloned()
                .collect();
            let newest = newer
                .first()
                .cloned()
                .or_else(|| current.clone())
                .or_else(|| matching.first().cloned())
                .ok_or_else(|| RegistryError::NotFound {
                    url: repository.to_string(),
                    what: format!("a tag matching {pattern}"),
                })?;
            (newest, newer)
        }
        (None, None) => (
            current.clone().unwrap_or_else(|| "latest".to_owned()),
            Vec::new(),
        ),
    };
    let digest = upstream.registry.manifest_digest(&repository, &newest)?;
    Ok(BaseOffer {
        current,
        newest,
        digest,
        newer,
    })
}

/// The closest pin name to a mistyped one, within a small edit distance.
pub fn closest_name<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(wanted, name), name))
        .filter(|(distance, name)| *distance <= (name.len() / 3).max(2))
        .min()
        .map(|(_, name)| name)
}

/// Why a bump could not even be judged: the pin, the target or the version is not there.
#[derive(Debug, thiserror::Error)]
pub enum BumpError {
    /// No pin of that name.
    #[error("pins.toml has no pin `{name}`")]
    UnknownPin {
        /// The name asked for.
        name: String,
        /// The closest existing name.
        suggestion: Option<String>,
        /// Every name that exists.
        known: Vec<String>,
    },
    /// The base image supplies the pin: it moves with the base, never alone.
    #[error("pin `{pin}` ({kind}) is supplied by the base image; forge does not move it alone")]
    InBase {
        /// The pin.
        pin: PinName,
        /// Its kind.
        kind: crate::pins::PinKind,
    },
    /// `--to` is not a valid version, revision or tag for the pin.
    #[error("--to {value:?}: {message}")]
    InvalidTarget {
        /// What was given.
        value: String,
        /// What was expected.
        message: String,
    },
    /// The pin's package does not exist at the version on its index.
    #[error("{package} {version} is not on {}", crate::redact::Redacted(index.as_str()))]
    NotOnIndex {
        /// The pin.
        pin: PinName,
        /// Its package.
        package: PackageName,
        /// The version asked for, as the package carries it.
        version: String,
        /// The index asked.
        index: Url,
    },
    /// A wheel set downloaded by URL moves only to a version named with `--to`.
    #[error(
        "pin `{pin}` downloads its wheels from {url}, where forge lists no versions: name the version with --to"
    )]
    NeedsTarget {
        /// The pin.
        pin: PinName,
        /// Its URL template.
        url: String,
    },
}

impl Advise for BumpError {
    fn advice(&self) -> Advice {
        Advice::Hint(match self {
            BumpError::UnknownPin {
                suggestion: Some(suggestion),
                ..
            } => format!("did you mean `{suggestion}`? (`forge pin list` shows every pin)"),
            BumpError::UnknownPin { known, .. } => format!(
                "the pins are: {}, and `base` for the base image",
                known.join(", ")
            ),
            BumpError::InBase { pin, .. } => format!("moving {pin} alone would only change what the build asserts about the base: `forge pin bump base` moves the base image, then set {pin}'s version in pins.toml to what the new base ships"),
            BumpError::InvalidTarget { .. } => "give --to an exact version (0.6.15), a git commit (7 to 40 hex digits) or an image tag, as the pin's kind needs".to_owned(),
            BumpError::NotOnIndex { pin, .. } => format!("`forge pin outdated` lists the versions on offer; leave --to out to move {pin} to the newest allowed one"),
            BumpError::NeedsTarget { pin, .. } => format!("`forge pin bump {pin} --to VERSION` downloads every file of the set at VERSION and records their sha256"),
        })
    }
}

crate::advised!(BumpError);
