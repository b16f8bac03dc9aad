//! Why a version may not be moved to: what a deny list, an allowed range, an index, a wheel or a
//! requirement says against it, and whether `--force` may cross it.
//!
//! How a refused move is said: the reasons of a version on one line, and the failed check
//! (exit 1) with the hint its first reason calls for.

use std::fmt;

use crate::diagnostics::CheckFailed;
use crate::types::dockerfile::Text;
use crate::types::python::{PackageName, Version};
use crate::types::recipe::PinName;
use crate::types::url::Url;

/// Why a version may not be moved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionRefusal {
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

impl VersionRefusal {
    /// Whether `--force` overrides it.
    pub fn forceable(&self) -> bool {
        matches!(self, VersionRefusal::OutsideRange { .. })
    }

    /// A one-word kind for `--json`: `denied`, `range`, `wheel-set`, `group`, `wheel-fit`.
    pub fn kind(&self) -> &'static str {
        match self {
            VersionRefusal::NoFit { .. } => "wheel-fit",
            VersionRefusal::Requires { .. } => "requires",
            VersionRefusal::Base { .. } => "base",
            VersionRefusal::Denied { .. } => "denied",
            VersionRefusal::OutsideRange { .. } => "range",
            VersionRefusal::WheelMissing { .. } => "wheel-set",
            VersionRefusal::PartnerMissing { .. } => "group",
        }
    }
}

impl VersionRefusal {
    /// What refuses, without the version it refuses: the same words for every version a
    /// constraint holds back, so that notes can list the versions once.
    pub fn summary(&self) -> String {
        match self {
            VersionRefusal::WheelMissing { package, index, .. } => {
                format!("wheel {package} is not on {index}")
            }
            VersionRefusal::PartnerMissing {
                pin,
                package,
                index,
                ..
            } => format!("group partner {pin} ({package}) is not on {index}"),
            VersionRefusal::NoFit {
                package, target, ..
            } => format!("no wheel of {package} fits {target}"),
            VersionRefusal::Requires {
                package,
                requirement,
                ..
            } => format!("{package} requires {requirement}"),
            VersionRefusal::Base {
                package,
                requirement,
                found,
                ..
            } => format!("{package} requires {requirement} of the base, which has {found}"),
            VersionRefusal::Denied { .. } | VersionRefusal::OutsideRange { .. } => self.to_string(),
        }
    }
}

impl VersionRefusal {
    /// `summary`, with the version of the package that declares a requirement: the words for
    /// versions of another package that requirement holds back.
    pub fn held_by(&self) -> String {
        match self {
            VersionRefusal::Requires {
                package,
                version,
                requirement,
                ..
            } => format!("{package} {version} requires {requirement}"),
            _ => self.summary(),
        }
    }
}

impl fmt::Display for VersionRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionRefusal::Denied { pin, reason } => write!(f, "denied for {pin}: {reason}"),
            VersionRefusal::OutsideRange { pin, range } => {
                write!(f, "outside the allowed range {range} of {pin}")
            }
            VersionRefusal::WheelMissing {
                package,
                version,
                index,
            } => write!(f, "wheel {package} {version} is not on {index}"),
            VersionRefusal::PartnerMissing {
                pin,
                package,
                version,
                index,
            } => write!(
                f,
                "group partner {pin} ({package} {version}) is not on {index}"
            ),
            VersionRefusal::Requires {
                package,
                version,
                requirement,
                found,
                ..
            } => write!(f, "{package} {version} requires {requirement}, not {found}"),
            VersionRefusal::Base {
                package,
                version,
                requirement,
                found,
            } => write!(
                f,
                "{package} {version} requires {requirement} from the base, whose last build has {found}"
            ),
            VersionRefusal::NoFit {
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
            VersionRefusal::NoFit {
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

/// The refusal of a move as a failed check (exit 1), with the hint the reasons call for.
pub(crate) fn refused(
    pin: &PinName,
    version: &Version,
    refusals: &[&VersionRefusal],
) -> CheckFailed {
    let message = format!(
        "refusing to move {pin} to {version}: {}",
        join(refusals.iter().copied())
    );
    let hint = match refusals.first() {
        Some(VersionRefusal::Denied { .. }) => "the deny list in pins.toml records what broke; neither --to nor --force moves past it".to_owned(),
        Some(VersionRefusal::WheelMissing { package, version, .. }) => format!("every wheel of a set moves together: wait until {package} {version} is published on its index, or check the wheel's `index` in pins.toml"),
        Some(VersionRefusal::PartnerMissing { pin: partner, version, .. }) => format!("a lockstep group moves together: wait for {partner} {version}, or pick a version every member has with --to"),
        Some(VersionRefusal::Requires { requirement, .. }) => format!("the Dockerfile installs with --no-deps, so forge checks what each wheel declares: move the pin that provides {requirement} first (for a pin in the base, move the base), or pick a version whose requirements the pinned set meets"),
        Some(VersionRefusal::Base { requirement, .. }) => format!("the base must supply {requirement}: move the base (`forge pin bump base`, then `forge build` and `forge verify-digest --contents` to record what it holds), or pick another version"),
        Some(VersionRefusal::NoFit { package, .. }) => format!("the image needs a wheel of {package} for its platform and Python (`[image] platform`, `[base] python` in pins.toml); wait until one is published, or pick a version that has one"),
        Some(VersionRefusal::OutsideRange { .. }) => "pass --force to move outside the allowed range (a denied version can never be forced), or widen `allow` in pins.toml".to_owned(),
        None => "see `forge pin outdated`".to_owned(),
    };
    CheckFailed::new(message, hint)
}

/// The refusals of a version, as one line.
pub(super) fn join<'a>(refusals: impl IntoIterator<Item = &'a VersionRefusal>) -> String {
    refusals
        .into_iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
