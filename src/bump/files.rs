//! The files a move records: for each pin it moves that installs from an index, every file of
//! the new version pip may take on the image, with its sha256, written as the pin's `files` (a
//! wheel set's under each wheel) so that the render's `--hash` options make pip refuse any other
//! file.

use crate::bump::VersionOffer;
use crate::bump::edit::{Assigned, Assignment, Segment};
use crate::diagnostics::CheckFailed;
use crate::pins::{HashedFile, Installed, Pins};
use crate::types::python::Version;
use crate::types::recipe::PinName;

/// The `files` assignments for `member` landing at `version`, leaving out those that record
/// what pins.toml already holds; refused when the index lists no sha256 for a file pip may take.
pub(super) fn assignments(
    pins: &Pins,
    offer: &VersionOffer,
    member: &PinName,
    version: &Version,
) -> Result<Vec<Assignment>, CheckFailed> {
    let Some(pin) = pins.pins.get(member) else {
        return Ok(Vec::new());
    };
    let files_of = |package: &crate::types::python::PackageName| {
        let package = offer
            .packages
            .iter()
            .find(|found| &found.pin == member && &found.name == package)?;
        let files = package
            .hashed_files(version, offer.target.as_ref())
            .map_err(|unlisted| unlisted_refusal(member, version, &package.index, &unlisted));
        Some(files.and_then(|files| {
            if files.is_empty() {
                Err(no_file_loads(member, version, package, offer))
            } else {
                Ok(files)
            }
        }))
    };
    let mut assignments = Vec::new();
    for installed in pin.installed() {
        let Installed::Indexed {
            wheel,
            package,
            files: recorded,
        } = installed
        else {
            continue;
        };
        let Some(files) = files_of(package).transpose()? else {
            continue;
        };
        if files == recorded {
            continue;
        }
        let assignment = match wheel {
            None => Assignment::of(&["pins", member.as_str()], "files", tables(&files)),
            Some(index) => {
                let mut assignment = Assignment::of(
                    &["pins", member.as_str(), "wheels"],
                    "files",
                    tables(&files),
                );
                assignment.table.push(Segment::Index(index));
                assignment
            }
        };
        assignments.push(assignment);
    }
    Ok(assignments)
}

/// `[{ file = "...", sha256 = "..." }, ...]`.
fn tables(files: &[HashedFile]) -> Assigned {
    Assigned::Tables(
        files
            .iter()
            .map(|file| {
                vec![
                    ("file".to_owned(), file.file.to_string()),
                    ("sha256".to_owned(), file.sha256.to_string()),
                ]
            })
            .collect(),
    )
}

/// No file of `package` at `version` loads on the image: pip would find none to install.
fn no_file_loads(
    pin: &PinName,
    version: &Version,
    package: &crate::bump::Package,
    offer: &VersionOffer,
) -> CheckFailed {
    let target = offer
        .target
        .as_ref()
        .map_or_else(|| "the image".to_owned(), |target| target.describe());
    let offered: Vec<String> = package
        .releases
        .files
        .iter()
        .filter(|file| file.version.to_string() == package.version_at(version))
        .filter_map(|file| crate::package_index::wheel::tag_triple(&file.name))
        .collect();
    CheckFailed::new(
        format!(
            "refusing to move {pin} to {version}: no wheel of {} {} loads on {target} (offered: {})",
            package.name,
            package.version_at(version),
            if offered.is_empty() {
                "none".to_owned()
            } else {
                offered.join(", ")
            }
        ),
        "the image needs a wheel of the package for its platform, Python and glibc: pick a version that has one, or move the base; pins.toml was not changed",
    )
}

fn unlisted_refusal(
    pin: &PinName,
    version: &Version,
    index: &crate::types::url::Url,
    unlisted: &[String],
) -> CheckFailed {
    CheckFailed::new(
        format!(
            "refusing to move {pin} to {version}: {} lists no sha256 for {}",
            crate::redact::Redacted(index.as_str()),
            unlisted.join(", ")
        ),
        "pip's --hash needs the sha256 of every file it may take: use an index that lists them (PEP 691 `hashes`, or `#sha256=` on a PEP 503 link); pins.toml was not changed",
    )
}

/// A move's `detail` with the count of files it records (the tables it writes), when it
/// records any.
pub(super) fn detail(detail: String, assignments: &[Assignment]) -> String {
    let recorded: usize = assignments
        .iter()
        .map(|assignment| match &assignment.value {
            Assigned::Tables(tables) => tables.len(),
            _ => 0,
        })
        .sum();
    match recorded {
        0 => detail,
        1 => format!("{detail}; the sha256 of 1 file recorded"),
        count => format!("{detail}; the sha256 of {count} files recorded"),
    }
}
