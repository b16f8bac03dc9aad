//! The versions a wheel set downloaded by URL may move to: the project's releases newer than
//! the pin (drafts never, pre-releases only when asked), newest first, each with what holds it
//! back: the deny list, the allowed range, or a file of the set the release does not hold.

use std::collections::BTreeSet;

use crate::package_index::releases::{self, ApiToken, ReleasesError, TokenUse};
use crate::pins::WheelSet;
use crate::pins::{Pin, Wheel};
use crate::types::python::Version;
use crate::types::url::Url;

use super::Prereleases;

/// One release newer than the pin.
#[derive(Debug, Clone)]
pub struct ReleaseCandidate {
    /// Its version.
    pub version: Version,
    /// What holds it back, each as (`denied`, `range` or `wheel-set`, the reason in words);
    /// empty when nothing does.
    pub refusals: Vec<(&'static str, String)>,
}

/// The releases newer than a set, and how the listing was read.
#[derive(Debug, Clone)]
pub struct Candidates {
    /// Newest first.
    pub newer: Vec<ReleaseCandidate>,
    /// What the environment's GitHub token did.
    pub token: TokenUse,
    /// Whether the listing had more pages than forge reads.
    pub cut: bool,
}

/// Lists the releases at `url` newer than `pin`'s wheel set `set`, newest first, with the
/// environment's GitHub token; `enforce_range` false lets versions outside `allow` through
/// (`--force`).
pub fn candidates(
    pin: &Pin,
    set: &WheelSet,
    url: &Url,
    prereleases: Prereleases,
    enforce_range: bool,
) -> Result<Candidates, ReleasesError> {
    let (current, wheels) = (&set.version, &set.wheels);
    let listing = releases::list(url, ApiToken::from_environment().as_ref())?;
    let mut newer: Vec<ReleaseCandidate> = listing
        .releases
        .into_iter()
        .filter_map(|release| {
            let version = release.version?;
            let pre = release.prerelease || version.pep440().any_prerelease();
            let offered = version.pep440() > current.pep440()
                && (prereleases == Prereleases::Include || !pre);
            offered.then(|| ReleaseCandidate {
                refusals: refusals(pin, wheels, &version, &release.assets, enforce_range),
                version,
            })
        })
        .collect();
    newer.sort_by_key(|candidate| std::cmp::Reverse(candidate.version.pep440()));
    newer.dedup_by(|a, b| a.version == b.version);
    Ok(Candidates {
        newer,
        token: listing.token,
        cut: listing.cut,
    })
}

/// What holds back the release of `version` holding `assets`.
fn refusals(
    pin: &Pin,
    wheels: &[Wheel],
    version: &Version,
    assets: &BTreeSet<String>,
    enforce_range: bool,
) -> Vec<(&'static str, String)> {
    let mut refusals = Vec::new();
    if let Some(denied) = pin.denied(version) {
        refusals.push((
            "denied",
            format!("denied for {}: {}", pin.name, denied.reason),
        ));
    }
    if let Some(allow) = pin
        .allow
        .as_ref()
        .filter(|allow| enforce_range && !allow.contains(&version.pep440()))
    {
        refusals.push((
            "range",
            format!(
                "outside the allowed range {} of {}",
                allow.as_str(),
                pin.name
            ),
        ));
    }
    let missing: Vec<String> = wheels
        .iter()
        .filter_map(|wheel| wheel.file.as_ref())
        .map(|file| file.expand(version))
        .filter(|file| !assets.contains(file))
        .collect();
    if !missing.is_empty() {
        refusals.push((
            "wheel-set",
            format!("the release has no {}", missing.join(", ")),
        ));
    }
    refusals
}
