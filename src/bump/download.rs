//! The versions a wheel set downloaded by URL may move to: the project's releases newer than
//! the pin (drafts never, pre-releases only when asked), newest first, each with what holds it
//! back: the deny list, the allowed range, or a file of the set the release does not hold.
//!
//! A wheel set downloaded from a URL moves by `--to`: every file of the new version is
//! downloaded once and hashed (a range request or a listing proves nothing about a file's
//! bytes), checked to be the wheel its name says, and judged by the METADATA in those same
//! bytes; the move records the version with each wheel's sha256. A file missing from the
//! release, or one that is not its wheel, refuses the whole move, as a set moves together.

use std::collections::BTreeSet;
use std::str::FromStr;

use anyhow::Context as _;

use crate::bump::{self, BumpError, Downloaded, Upstream, VersionRefusal, YankedFiles};
use crate::diagnostics::CheckFailed;
use crate::package_index::download::{self, Fetched};
use crate::package_index::releases::{self, ApiToken, ReleasesError, TokenUse};
use crate::pins::{Pin, Wheel, WheelSet};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::types::python::Version;
use crate::types::url::{Url, UrlTemplate};

use super::edit::{Assignment, Segment};
use super::{Constraints, Move, PinBumpOptions, Prereleases, refused};

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

/// Plans the move of `pin`, whose wheel set `set` is downloaded from `url`, to `--to`; `None`
/// when it is already there with every hash recorded.
pub(super) fn plan_download(
    recipe: &Recipe,
    pin: &Pin,
    set: &WheelSet,
    url: &UrlTemplate,
    options: &PinBumpOptions,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<Option<Move>> {
    let WheelSet {
        version: current,
        wheels,
        releases,
        ..
    } = set;
    let version = match &options.to {
        Some(text) => Version::from_str(text)
            .ok()
            .filter(|version| !version.as_str().contains('+'))
            .ok_or_else(|| BumpError::InvalidTarget {
                value: text.clone(),
                message: "expected the set's version without a local label (each wheel's file carries its own)".to_owned(),
            })?,
        None => {
            let Some(releases) = releases else {
                return Err(BumpError::NeedsTarget {
                    pin: pin.name.clone(),
                    url: url.to_string(),
                }
                .into());
            };
            match newest_release(pin, set, releases, options, printer)? {
                Some(version) => version,
                None => return Ok(None),
            }
        }
    };
    check_constraints(pin, &version, options.constraints, printer)?;
    if &version == current && wheels.iter().all(|wheel| wheel.sha256.is_some()) {
        printer.status(
            "Fresh",
            format_args!("{} is already at {version}", pin.name),
        );
        return Ok(None);
    }
    let (downloaded, sizes): (Vec<Downloaded>, Vec<u64>) =
        download_files(pin, url, wheels, &version, printer)?
            .into_iter()
            .unzip();
    judge_downloads(
        recipe,
        pin,
        &version,
        &downloaded,
        options.constraints,
        upstream,
        printer,
    )?;
    let mut assignments = vec![Assignment::new(
        &["pins", pin.name.as_str()],
        "version",
        version.as_str(),
    )];
    let mut detail = Vec::new();
    for (index, ((wheel, file), size)) in wheels.iter().zip(&downloaded).zip(&sizes).enumerate() {
        let sha256 = &file.sha256;
        let mut assignment = Assignment::new(
            &["pins", pin.name.as_str(), "wheels"],
            "sha256",
            sha256.as_str(),
        );
        assignment.table.push(Segment::Index(index));
        assignments.push(assignment);
        detail.push(format!(
            "{} {} sha256:{} ({size} bytes)",
            wheel.package,
            wheel.version(&version),
            &sha256[..12]
        ));
    }
    Ok(Some(Move {
        subject: pin.name.to_string(),
        from: current.to_string(),
        to: version.to_string(),
        detail: detail.join(", "),
        assignments,
        patches: Vec::new(),
    }))
}

/// The newest release newer than the pin that has every file of the set and that the
/// constraints allow, warning about each newer one skipped; `None` (said as such) when there is
/// none.
fn newest_release(
    pin: &Pin,
    set: &WheelSet,
    releases: &Url,
    options: &PinBumpOptions,
    printer: &Printer,
) -> anyhow::Result<Option<Version>> {
    let newer = candidates(
        pin,
        set,
        releases,
        options.prereleases,
        options.constraints == Constraints::Enforce,
    )
    .with_context(|| {
        format!(
            "cannot look up the versions of {}; pins.toml was not changed",
            pin.name
        )
    })?;
    match newer.token {
        TokenUse::Sent(variable) => {
            printer.status(
                "Listed",
                format_args!("{releases} with the token in {variable}"),
            );
        }
        TokenUse::NotHttps(variable) => printer.warn(format_args!(
            "{variable} is set but not sent to {releases}: a token goes only over https"
        )),
        TokenUse::None => {}
    }
    if newer.cut {
        printer.warn(format_args!(
            "{releases} lists more releases than forge reads ({} pages); older ones are not offered",
            crate::package_index::releases::MAX_PAGES
        ));
    }
    let newer = newer.newer;
    let pick = newer
        .iter()
        .position(|candidate| candidate.refusals.is_empty());
    for skipped in &newer[..pick.unwrap_or(newer.len())] {
        let reasons: Vec<&str> = skipped
            .refusals
            .iter()
            .map(|(_, reason)| reason.as_str())
            .collect();
        printer.warn(format_args!(
            "skipping {} {}: {}",
            pin.name,
            skipped.version,
            reasons.join("; ")
        ));
    }
    let Some(pick) = pick else {
        printer.status(
            "Fresh",
            format_args!(
                "{} is at {}, the newest release with every file of the set that pins.toml allows ({} newer held back)",
                pin.name,
                pin.current(),
                newer.len()
            ),
        );
        return Ok(None);
    };
    Ok(Some(newer[pick].version.clone()))
}

/// The deny list always holds; the allowed range unless `--force`.
fn check_constraints(
    pin: &Pin,
    version: &Version,
    constraints: Constraints,
    printer: &Printer,
) -> anyhow::Result<()> {
    if let Some(denied) = pin.denied(version) {
        let refusal = VersionRefusal::Denied {
            pin: pin.name.clone(),
            reason: denied.reason.clone(),
        };
        return Err(refused(&pin.name, version, &[&refusal]).into());
    }
    if let Some(allow) = pin
        .allow
        .as_ref()
        .filter(|allow| !allow.contains(&version.pep440()))
    {
        let refusal = VersionRefusal::OutsideRange {
            pin: pin.name.clone(),
            range: allow.as_str().to_owned(),
        };
        if constraints == Constraints::Enforce {
            return Err(refused(&pin.name, version, &[&refusal]).into());
        }
        printer.warn(format_args!(
            "--force: moving {} to {version} although it is {refusal}",
            pin.name
        ));
    }
    Ok(())
}

/// Downloads every file of the set at `version` and returns each one with its sha256 and the
/// METADATA read out of the same bytes (each checked to be the wheel its file name says), or
/// refuses the move naming every file the server does not have.
fn download_files(
    pin: &Pin,
    url: &UrlTemplate,
    wheels: &[Wheel],
    version: &Version,
    printer: &Printer,
) -> anyhow::Result<Vec<(Downloaded, u64)>> {
    let mut downloaded = Vec::new();
    let mut missing = Vec::new();
    for wheel in wheels {
        let file_url = wheel
            .url(Some(url), version)
            .expect("every wheel of a set with a url has a file");
        let file = wheel
            .file
            .as_ref()
            .expect("every wheel of a set with a url has a file")
            .expand(version);
        printer.status("Hashing", format_args!("{file_url}"));
        match download::wheel(&file_url, &file)? {
            Fetched::Found {
                sha256,
                size,
                metadata,
            } => downloaded.push((
                Downloaded {
                    package: wheel.package.clone(),
                    local: wheel.local.clone(),
                    file,
                    url: file_url,
                    sha256: sha256.to_string(),
                    metadata,
                },
                size,
            )),
            Fetched::Missing { status } => {
                missing.push(format!("{} (HTTP {status} from {file_url})", wheel.package));
            }
        }
    }
    if !missing.is_empty() {
        return Err(CheckFailed::new(
            format!(
                "refusing to move {} to {version}: the release has no file for {}",
                pin.name,
                missing.join(", ")
            ),
            "every wheel of a set moves together: wait until the release has every file, or check the pin's `url` and each wheel's `file` in pins.toml; pins.toml was not changed",
        )
        .into());
    }
    Ok(downloaded)
}

/// Judges the move to the `downloaded` files as an index pin's move is judged: each wheel's
/// requirements on the pinned set and on the base's packages, and its `Requires-Python`; the
/// same refusal, naming the requirement, as the index path.
fn judge_downloads(
    recipe: &Recipe,
    pin: &Pin,
    version: &Version,
    downloaded: &[Downloaded],
    constraints: Constraints,
    upstream: &Upstream<'_>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let offer = bump::download_offer(&recipe.pins, pin, version, downloaded, upstream);
    let candidate = offer.judge(&recipe.pins, version, YankedFiles::Allowed);
    let force = constraints == Constraints::Force;
    if !(candidate.allowed() || force && candidate.forceable()) {
        let refusals: Vec<&VersionRefusal> = candidate.refusals.iter().collect();
        return Err(refused(&pin.name, version, &refusals).into());
    }
    super::report_from_base(&offer, &[(pin.name.clone(), version.clone())], printer);
    Ok(())
}
