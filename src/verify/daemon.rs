//! What a daemon (a node) holds: the recorded tags and whether they agree, the base image, and
//! whether the recorded image is there to run.

use crate::engine::ImageInfo;
use crate::lock::{BaseRecord, Record};
use crate::types::oci::Digest;

use super::check::{Check, Kind, MISSING, agreement};

/// What one recorded tag names on a node: the image id, or nothing.
pub type Resolved = Vec<(String, Option<Digest>)>;

/// Each recorded tag on `node` against the recorded image id, then whether the tags agree.
/// `resolved` pairs each `repository:tag` with the id it names on the node.
pub fn tags(record: &Record, node: &str, resolved: &Resolved) -> Vec<Check> {
    // A containerd store names the image by its manifest: the same image, by another name.
    let resolved: Resolved = resolved
        .iter()
        .map(|(reference, found)| {
            let found = found.as_ref().map(|id| {
                if record.names(id) {
                    record.image.id.clone()
                } else {
                    id.clone()
                }
            });
            (reference.clone(), found)
        })
        .collect();
    let mut checks: Vec<Check> = resolved
        .iter()
        .map(|(reference, found)| {
            Check::compare(
                Kind::Tag,
                reference.as_str(),
                record.image.id.as_str(),
                found.as_ref().map_or(MISSING, Digest::as_str),
            )
            .on(node)
        })
        .collect();
    if resolved.len() > 1 {
        checks.push(
            agreement(
                Kind::TagsAgree,
                None,
                resolved
                    .iter()
                    .map(|(reference, found)| (reference.as_str(), found.as_ref())),
            )
            .on(node),
        );
    }
    checks
}

/// The base image on `node` against the record: its digest in the base's repository (when
/// recorded) and its local id (when recorded). `found` is what the base reference names on the
/// node now.
pub fn base(recorded: &BaseRecord, node: &str, found: Option<&ImageInfo>) -> Vec<Check> {
    let subject = recorded.image.to_string();
    let mut checks = Vec::new();
    if let Some(digest) = &recorded.digest {
        let actual = found.and_then(|info| info.digest_in(recorded.image.as_str()));
        checks.push(
            Check::compare(
                Kind::BaseDigest,
                subject.clone(),
                digest.as_str(),
                actual.as_ref().map_or(MISSING, Digest::as_str),
            )
            .on(node),
        );
    }
    if let Some(id) = &recorded.id {
        // A containerd store names the base by its manifest, which the recorded digest is.
        let held = found.map(|info| {
            if recorded.digest.as_ref() == Some(&info.id.0) {
                id.as_str()
            } else {
                info.id.0.as_str()
            }
        });
        checks.push(
            Check::compare(Kind::BaseId, subject, id.as_str(), held.unwrap_or(MISSING)).on(node),
        );
    }
    checks
}

/// `--contents` on a daemon that does not hold the recorded image: nothing to run.
pub fn image_missing(node: &str, image: &Digest) -> Check {
    Check::new(
        Kind::Contents,
        image.as_str(),
        "the recorded image",
        MISSING,
        false,
    )
    .on(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_that_part_ways_name_each_image() {
        let check = agreement(
            Kind::TagsAgree,
            None,
            [
                ("r:latest", Some(&Digest::filled('a'))),
                ("r:dated", Some(&Digest::filled('b'))),
            ]
            .into_iter(),
        );
        assert!(!check.ok);
        assert_eq!(check.subject, "latest, dated");
        assert_eq!(
            check.actual,
            format!(
                "latest → {}; dated → {}",
                Digest::filled('a'),
                Digest::filled('b')
            )
        );
        let same = agreement(
            Kind::TagsAgree,
            None,
            [
                ("r:a", Some(&Digest::filled('a'))),
                ("r:b", Some(&Digest::filled('a'))),
            ]
            .into_iter(),
        );
        assert!(same.ok, "{same:?}");
        let missing = agreement(
            Kind::TagsAgree,
            None,
            [("r:a", None), ("r:b", None)].into_iter(),
        );
        assert!(!missing.ok, "two missing tags do not agree on an image");
    }
}
