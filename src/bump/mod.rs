//! Moving pins (`forge pin bump`, and what `pin outdated` asks): a pin, what upstream offers for
//! it, and the constraints pins.toml records in; the versions on offer, each with what refuses
//! it, the move, and pins.toml rewritten, out.
//!
//! 1. `offer` and `lookup` ask upstream (`upstream`: the package index, a git remote, a
//!    registry) what there is.
//! 2. `judging`: every candidate newer than the pin is checked against the constraints of the
//!    pin and of its lockstep group (a group that is not lockstep moves as one, each member at
//!    its own version: `group`): deny lists (never overridable), allowed ranges (`--force` may
//!    cross them), wheel sets (every wheel must exist at the version on its own index), group
//!    partners (each must exist at the version too), wheels that fit the image (platform,
//!    Python, ABI, Requires-Python; `package_index::wheel`) and what the wheels declare of each
//!    other (`requires`: Requires-Dist from PEP 658 metadata files), and what they require of
//!    packages the recipe does not pin against what the last build's image holds (`from_base`).
//!    Each finding is a `refusal`, which says whether `--force` may cross it.
//! 3. `plan` picks the move by how the pin moves (`Pin::moves`), one file each: `index` (a
//!    version its package index offers; `files` records the hashes of what pip may install),
//!    `download` (a wheel set by URL: its project's releases, every file downloaded and hashed),
//!    `git` (its branch head, the patch series checked there), `base` (the base image's tags),
//!    and `group` for a lockstep group.
//! 4. `write` rewrites pins.toml with only the moved values changed (`edit`), re-renders, and
//!    says which Dockerfile steps the move invalidates (`steps`).

mod base;
pub mod download;
pub mod edit;
mod files;
mod git;
pub mod group;
mod index;
mod judging;
mod lookup;
mod offer;
mod plan;
mod refusal;
pub mod requires;
pub mod steps;
mod upstream;
mod write;

pub use base::{BaseOffer, base_offer};
pub use git::{GitOffer, git_offer};
pub(crate) use index::report_from_base;
use judging::judge;
pub use judging::{FromBase, from_base};
pub use lookup::{Downloaded, coordinated_offer, download_offer, pin_of_package, version_offer};
pub use offer::{Candidate, OfferError, Package, Prereleases, VersionOffer, YankedFiles};
pub(crate) use plan::Move;
pub use plan::{
    BASE, BumpMode, BumpTarget, Bumped, Constraints, PinBumpOptions, SeriesCheck, find_pin,
    pin_bump_with,
};
pub use refusal::VersionRefusal;
pub(crate) use refusal::refused;
pub use upstream::{Clients, Sources, Upstream};

use crate::diagnostics::{Advice, Advise};
use crate::types::python::PackageName;
use crate::types::recipe::PinName;
use crate::types::url::Url;

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
