//! A check (one row: what was looked at, what the record says, what was found) and the report
//! of a verification, as a table or as JSON.

use serde::Serialize;

use crate::table::Section;
use crate::types::oci::Digest;

/// What a check looks at; `as_str` is its name in the table and in `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An input's digest now against the recorded one.
    Input,
    /// What a recorded tag names on a daemon.
    Tag,
    /// Whether a daemon's tags name one image.
    TagsAgree,
    /// The base image's id on the daemon.
    BaseId,
    /// The base image's digest on the daemon.
    BaseDigest,
    /// The sha256 of the bytes a registry served against the digest it claimed.
    ServedDigest,
    /// A tag's manifest in the registry against the pushed digest.
    Registry,
    /// The image a tag's manifest holds against the recorded one.
    RegistryImage,
    /// Whether the registry's tags name one manifest.
    RegistryTagsAgree,
    /// An index's entry for one of the recorded platforms.
    Platform,
    /// Whether the recorded image is there to run for `--contents`.
    Contents,
    /// What a pin installed, read back from the image.
    Pin,
    /// An overlay file in the image.
    File,
    /// A fix's check, run in the image.
    Fix,
    /// A patch script's check, run in the image.
    Script,
    /// A signature attached to a tag's manifest.
    Signature,
    /// The subject of the signed provenance.
    ProvenanceSubject,
    /// The inputs the signed provenance names.
    ProvenanceInputs,
    /// The SBOM attached to a tag's manifest.
    Sbom,
    /// The recorded image against the one `--rebuild` made: the image, then each config
    /// field, layer and file that differs.
    Rebuild,
}

impl Kind {
    /// The name the table and `--json` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::Tag => "tag",
            Kind::TagsAgree => "tags agree",
            Kind::BaseId => "base id",
            Kind::BaseDigest => "base digest",
            Kind::ServedDigest => "served digest",
            Kind::Registry => "registry",
            Kind::RegistryImage => "registry image",
            Kind::RegistryTagsAgree => "registry tags agree",
            Kind::Platform => "platform",
            Kind::Contents => "contents",
            Kind::Pin => "pin",
            Kind::File => "file",
            Kind::Fix => "fix",
            Kind::Script => "script",
            Kind::Signature => "signature",
            Kind::ProvenanceSubject => "provenance subject",
            Kind::ProvenanceInputs => "provenance inputs",
            Kind::Sbom => "sbom",
            Kind::Rebuild => "rebuild",
        }
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One check: what was looked at, what the record or recipe says, what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The kind of check.
    pub name: Kind,
    /// The daemon the check asked, for the checks that ask one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// What was checked (`repository:tag`, an input, a pin, a path in the image).
    pub subject: String,
    /// What the record or the recipe says.
    pub expected: String,
    /// What was found.
    pub actual: String,
    /// Whether they agree.
    pub ok: bool,
    /// What else was found that did not decide the check (layers ignored, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Check {
    /// A check that holds when `expected == actual`.
    pub fn compare(
        name: Kind,
        subject: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        let (expected, actual) = (expected.into(), actual.into());
        Self {
            name,
            node: None,
            subject: subject.into(),
            ok: expected == actual,
            expected,
            actual,
            note: None,
        }
    }

    /// A check whose outcome is decided by the caller.
    pub fn new(
        name: Kind,
        subject: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
        ok: bool,
    ) -> Self {
        Self {
            name,
            node: None,
            subject: subject.into(),
            expected: expected.into(),
            actual: actual.into(),
            ok,
            note: None,
        }
    }

    /// The check with `note` beside its verdict.
    #[must_use]
    pub fn noted(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    /// The check as asked of the daemon `node`.
    #[must_use]
    pub fn on(mut self, node: &str) -> Self {
        self.node = Some(node.to_owned());
        self
    }

    /// The subject with its node, as messages name it: `node: repository:tag`.
    pub fn full_subject(&self) -> String {
        match &self.node {
            Some(node) => format!("{node}: {}", self.subject),
            None => self.subject.clone(),
        }
    }
}

/// A verification's answer: the table says it (`Printer::answer`); `--json` prints
/// `{"ok": bool, "lane": null | {"of", "experimental"}, "checks": [{"name", "subject",
/// "expected", "actual", "ok", ...}], "unreached": [...]}`.
#[derive(Debug, serde::Serialize)]
pub struct Verdict<'a> {
    ok: bool,
    /// The lane the recorded recipe is (`null` for a baseline).
    lane: Option<&'a crate::pins::Lane>,
    checks: &'a [Check],
    unreached: &'a [String],
}

impl crate::printer::Document for Verdict<'_> {}

/// Every check of one verification, in the order they ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The checks.
    pub checks: Vec<Check>,
    /// The repository the checked image is in, which the table names once rather than in
    /// every subject.
    pub repository: Option<String>,
    /// The lane the recorded recipe is, when it varies another (`[lane]`).
    pub lane: Option<crate::pins::Lane>,
}

/// What `found` is written as when nothing was found.
pub const MISSING: &str = "missing";

impl Report {
    /// Adds checks.
    pub fn extend(&mut self, checks: impl IntoIterator<Item = Check>) {
        self.checks.extend(checks);
    }

    /// Whether every check holds.
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|check| check.ok)
    }

    /// The checks that do not hold.
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|check| !check.ok)
    }

    /// The report as `--json` prints it (`Verdict`); with `unreached`, the things that could
    /// not be asked, so that `ok` is false.
    pub fn verdict<'a>(&'a self, unreached: &'a [String]) -> Verdict<'a> {
        Verdict {
            ok: self.ok() && unreached.is_empty(),
            lane: self.lane.as_ref(),
            checks: &self.checks,
            unreached,
        }
    }

    /// The checks of the image in `repository`.
    pub fn of(repository: impl Into<String>) -> Self {
        Self {
            checks: Vec::new(),
            repository: Some(repository.into()),
            lane: None,
        }
    }

    /// The table people read: one row per check, columns aligned and fitted to the terminal.
    /// When the checks asked more than one daemon, each node's rows follow a line naming it,
    /// and the registry's a line of their own (one daemon is named by the status line before
    /// the table). Unless `wide`, digests and commits are cut to 12 hex digits, a row that
    /// holds shows its value once (`=` for the actual), and a subject in the image's repository
    /// is written from its `:` or `@` on, the repository named once under the table; `wide`
    /// shows every value whole and fits nothing.
    pub fn table(&self, wide: bool) -> String {
        let repository = self.repository.as_deref().filter(|_| !wide);
        let mut shortened = false;
        let mut subject =
            |text: &str| match repository.and_then(|repository| text.strip_prefix(repository)) {
                Some(rest) if rest.starts_with([':', '@']) => {
                    shortened = true;
                    rest.strip_prefix(": ").unwrap_or(rest).to_owned()
                }
                _ => text.to_owned(),
            };
        let cell = |text: &str| {
            if wide {
                text.to_owned()
            } else {
                crate::table::short_ids(text)
            }
        };
        let mut row = |check: &Check| {
            let verdict = match (check.ok, check.name) {
                (true, _) => "ok",
                (false, Kind::Input) => "STALE",
                (false, _) => "FAIL",
            };
            let mut actual = if !wide && check.ok && check.expected == check.actual {
                "=".to_owned()
            } else {
                cell(&check.actual)
            };
            if let Some(note) = &check.note {
                actual.push_str(&format!(" ({})", cell(note)));
            }
            [
                check.name.to_string(),
                cell(&subject(&check.subject)),
                cell(&check.expected),
                actual,
                verdict.to_owned(),
            ]
        };
        let sections = self.sections(&mut row);
        let width = if wide {
            usize::MAX
        } else {
            crate::table::width()
        };
        let mut table = crate::table::fit_sections(
            ["CHECK", "SUBJECT", "EXPECTED", "ACTUAL", "OK"],
            &sections,
            width,
        );
        if let Some(repository) = repository.filter(|_| shortened) {
            table.push_str(&crate::table::wrap(
                &format!("(:TAG and @DIGEST are of {repository})"),
                width,
                1,
            ));
        }
        table
    }
}

impl Report {
    /// The checks' rows (`row` of each) in sections: one per node and one for the registry
    /// when the checks asked more than one node, else one.
    fn sections(&self, mut row: impl FnMut(&Check) -> [String; 5]) -> Vec<Section<5>> {
        let mut nodes: Vec<&str> = self
            .checks
            .iter()
            .filter_map(|check| check.node.as_deref())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut sections: Vec<Section<5>> = Vec::new();
        let mut current: Option<String> = None;
        for check in &self.checks {
            let heading = (nodes.len() > 1).then(|| check.section()).flatten();
            match sections.last_mut() {
                Some(section) if heading.is_none() || heading == current => {
                    section.rows.push(row(check));
                }
                _ => {
                    current.clone_from(&heading);
                    sections.push(Section {
                        heading,
                        rows: vec![row(check)],
                    });
                }
            }
        }
        sections
    }
}

impl Check {
    /// The line a multi-node table puts before this check's rows: its node, or the registry
    /// for what was asked of one; none for a check that belongs with the rows before it (an
    /// input, or what was read from the first node's image).
    fn section(&self) -> Option<String> {
        if let Some(node) = &self.node {
            return Some(format!("on {node}:"));
        }
        match self.name {
            Kind::ServedDigest
            | Kind::Registry
            | Kind::RegistryImage
            | Kind::RegistryTagsAgree
            | Kind::Platform
            | Kind::Signature
            | Kind::ProvenanceSubject
            | Kind::ProvenanceInputs
            | Kind::Sbom => Some("in the registry:".to_owned()),
            Kind::Input
            | Kind::Tag
            | Kind::TagsAgree
            | Kind::BaseId
            | Kind::BaseDigest
            | Kind::Contents
            | Kind::Pin
            | Kind::File
            | Kind::Fix
            | Kind::Script
            | Kind::Rebuild => None,
        }
    }
}

/// One row saying whether every subject named the same digest.
/// `place`, when given, names where the tags are (a registry's repository); a daemon's
/// agreement names its node instead.
pub(super) fn agreement<'a>(
    name: Kind,
    place: Option<&str>,
    found: impl Iterator<Item = (&'a str, Option<&'a Digest>)>,
) -> Check {
    let found: Vec<(&str, Option<&Digest>)> = found.collect();
    // Each image once, in the order its first tag comes in the record: the same row on every
    // machine, whatever ids the images got.
    let mut distinct: Vec<(Option<&Digest>, Vec<&str>)> = Vec::new();
    for (what, digest) in &found {
        match distinct.iter_mut().find(|(known, _)| known == digest) {
            Some((_, whats)) => whats.push(what),
            None => distinct.push((*digest, vec![what])),
        }
    }
    let subjects: Vec<&str> = found
        .iter()
        .map(|(what, _)| what.rsplit(':').next().unwrap_or(what))
        .collect();
    let ok = distinct.len() == 1 && distinct[0].0.is_some();
    let actual = if ok {
        "one image".to_owned()
    } else {
        distinct
            .iter()
            .map(|(digest, whats)| {
                let tags: Vec<&str> = whats
                    .iter()
                    .map(|what| what.rsplit(':').next().unwrap_or(what))
                    .collect();
                format!(
                    "{} → {}",
                    tags.join(", "),
                    digest.map_or(MISSING, |digest| digest.as_str())
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let subjects = subjects.join(", ");
    Check::new(
        name,
        place.map_or_else(|| subjects.clone(), |place| format!("{place}: {subjects}")),
        "one image",
        actual,
        ok,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_aligns_columns_and_says_stale_for_inputs() {
        let report = Report {
            checks: vec![
                Check::compare(Kind::Input, "pins.toml", "sha256:1", "sha256:2"),
                Check::compare(Kind::Tag, "node: r:latest", "sha256:1", "sha256:1"),
            ],
            repository: None,
            lane: None,
        };
        let table = report.table(true);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "CHECK  SUBJECT         EXPECTED  ACTUAL    OK");
        assert_eq!(lines[1], "input  pins.toml       sha256:1  sha256:2  STALE");
        assert_eq!(lines[2], "tag    node: r:latest  sha256:1  sha256:1  ok");
        assert!(!report.ok());
        assert_eq!(
            serde_json::to_value(report.verdict(&[])).unwrap()["ok"],
            false
        );
    }

    #[test]
    fn the_narrow_table_cuts_digests_and_commits_and_shows_a_holding_value_once() {
        let (one, two) = (Digest::filled('1'), Digest::filled('2'));
        let commit = "3f1c0de5a9b2e47c8d6f0a1b2c3d4e5f60718293";
        let report = Report {
            checks: vec![
                Check::compare(Kind::Input, "pins.toml", one.as_str(), two.as_str()),
                Check::compare(Kind::Tag, format!("r@{one}"), one.as_str(), one.as_str())
                    .on("unix:///var/run/docker.sock"),
                Check::compare(Kind::Pin, "app", commit, commit),
            ],
            repository: None,
            lane: None,
        };
        let table = report.table(false);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines,
            [
                "CHECK  SUBJECT                EXPECTED             ACTUAL               OK",
                "input  pins.toml              sha256:111111111111  sha256:222222222222  STALE",
                "tag    r@sha256:111111111111  sha256:111111111111  =                    ok",
                "pin    app                    3f1c0de5a9b2         =                    ok",
            ]
        );
    }

    #[test]
    fn checks_on_two_nodes_follow_a_line_naming_each_and_the_registry_its_own() {
        let one = Digest::filled('1');
        let report = Report {
            checks: vec![
                Check::compare(Kind::Input, "pins.toml", one.as_str(), one.as_str()),
                Check::compare(Kind::Tag, "r:latest", one.as_str(), one.as_str())
                    .on("unix:///var/run/docker.sock"),
                Check::compare(Kind::Pin, "flashinfer", "0.6.14", "0.6.14"),
                Check::compare(Kind::Tag, "r:latest", one.as_str(), MISSING)
                    .on("tcp://spark-2:2375"),
                Check::compare(Kind::Registry, "h/r:latest", one.as_str(), one.as_str()),
            ],
            repository: None,
            lane: None,
        };
        let table = report.table(false);
        assert_eq!(
            table,
            "CHECK     SUBJECT     EXPECTED             ACTUAL   OK\n\
             input     pins.toml   sha256:111111111111  =        ok\n\
             on unix:///var/run/docker.sock:\n\
             tag       r:latest    sha256:111111111111  =        ok\n\
             pin       flashinfer  0.6.14               =        ok\n\
             on tcp://spark-2:2375:\n\
             tag       r:latest    sha256:111111111111  missing  FAIL\n\
             in the registry:\n\
             registry  h/r:latest  sha256:111111111111  =        ok\n"
        );
        let one_node = Report {
            checks: report.checks[..3].to_vec(),
            repository: None,
            lane: None,
        };
        assert!(
            !one_node.table(false).contains("on unix"),
            "{}",
            one_node.table(false)
        );
        assert_eq!(
            report.failed().next().unwrap().full_subject(),
            "tcp://spark-2:2375: r:latest"
        );
        let json = serde_json::to_value(report.verdict(&[])).unwrap();
        assert_eq!(json["checks"][0].get("node"), None);
        assert_eq!(json["checks"][3]["node"], "tcp://spark-2:2375");
        assert_eq!(json["checks"][3]["subject"], "r:latest");
    }

    #[test]
    fn subjects_in_the_images_repository_name_it_once_under_the_table() {
        let one = Digest::filled('1');
        let repository = "127.0.0.1:5000/forge-journey/tester";
        let mut report = Report::of(repository);
        report.extend([
            Check::compare(
                Kind::Tag,
                format!("{repository}:2026-07-08-offline"),
                one.as_str(),
                one.as_str(),
            ),
            Check::compare(
                Kind::RegistryTagsAgree,
                format!("{repository}: latest, 2026-07-08-offline"),
                "one image",
                "one image",
            ),
            Check::compare(
                Kind::Tag,
                "127.0.0.1:5000/other:latest",
                one.as_str(),
                MISSING,
            ),
        ]);
        assert_eq!(
            report.table(false),
            "CHECK                SUBJECT                      EXPECTED             ACTUAL   OK\n\
             tag                  :2026-07-08-offline          sha256:111111111111  =        ok\n\
             registry tags agree  latest, 2026-07-08-offline   one image            =        ok\n\
             tag                  127.0.0.1:5000/other:latest  sha256:111111111111  missing  FAIL\n\
             (:TAG and @DIGEST are of 127.0.0.1:5000/forge-journey/tester)\n"
        );
        assert!(
            report
                .table(true)
                .contains(&format!("{repository}:2026-07-08-offline")),
            "--wide shows every subject whole"
        );
        assert_eq!(
            serde_json::to_value(report.verdict(&[])).unwrap()["checks"][0]["subject"],
            format!("{repository}:2026-07-08-offline")
        );
    }
}
