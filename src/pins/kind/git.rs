//! `kind = "git"`: a repository built from source at a commit, which the build writes into the
//! image's revision file and a `[[patches]]` series may patch.

use std::ops::Range;

use serde::Serialize;

use crate::types::git::{BranchName, GitRev};
use crate::types::python::Version;
use crate::types::recipe::PinName;
use crate::types::url::Url;

use super::super::gate;
use super::super::load::{LoadError, Loader};
use super::super::pin::{Distribution, Installed, Moves, Shown, Source};
use super::super::recipe::Notice;
use super::super::schema::{PinKind, RawPin};
use super::{Around, Keys, Kind, Listed, PinFact, SourceView};

/// The keys a `git` pin takes.
pub(super) const KEYS: Keys = Keys {
    allowed: &["module", "url", "branch", "rev", "group"],
    required: &["url", "rev"],
    module: true,
};

/// A `git` pin's payload: a plain remote (no placeholders), and a notice for a revision given by
/// a short prefix.
pub(super) fn load(
    loader: &Loader<'_>,
    name: &PinName,
    raw: RawPin,
    span: &Range<usize>,
    notices: &mut Vec<Notice>,
) -> Result<Source, LoadError> {
    let rev = raw.rev.expect("required");
    if !rev.is_full() {
        notices.push(loader.notice(
            span,
            format!(
                "pin `{name}`: revision {rev} is a short prefix; a later commit on the remote can make it ambiguous (resolve it to the full 40-hex id with `forge pin bump {name} --to {rev}`)"
            ),
        ));
    }
    let url = raw.url.expect("required");
    let Some(url) = url.plain() else {
        return Err(loader.error(
            span.clone(),
            format!("pin `{name}`: a git pin's url `{url}` cannot hold {{version}} or {{file}}"),
            "placeholders belong to a wheel set's url; a git pin names its remote as it is",
        ));
    };
    Ok(Source::Git(GitSource {
        url,
        branch: raw.branch,
        rev,
    }))
}

/// A git repository built from source.
#[derive(Debug, Clone)]
pub struct GitSource {
    /// Where to clone from.
    pub url: Url,
    /// The branch the revision lives on.
    pub branch: Option<BranchName>,
    /// The commit.
    pub rev: GitRev,
}

/// What the template sees of a `git` pin.
#[derive(Debug, Serialize)]
pub struct GitView {
    url: String,
    branch: Option<String>,
    rev: String,
    revision_file: String,
    /// The series forge applied to it, when one patches it: the build step applies it.
    series: Option<SeriesView>,
}

/// A git pin's patch series: `COPY {{ from }}/ {{ to }}`, then apply `{{ to }}*.patch` in name
/// order onto the checkout.
#[derive(Debug, Serialize)]
pub struct SeriesView {
    from: String,
    to: String,
}

/// A `git` pin's own fields in `pin list --json`.
#[derive(Debug, Serialize)]
pub struct GitListed<'a> {
    url: &'a str,
    branch: Option<&'a str>,
    rev: &'a str,
    rev_is_full: bool,
}

impl Kind for GitSource {
    fn kind(&self) -> PinKind {
        PinKind::Git
    }

    fn version(&self) -> Option<&Version> {
        None
    }

    fn current(&self) -> &str {
        self.rev.as_str()
    }

    fn in_base(&self) -> bool {
        false
    }

    fn unhashed(&self) -> Vec<String> {
        Vec::new()
    }

    fn installed(&self) -> Vec<Installed<'_>> {
        Vec::new()
    }

    fn distributions(&self) -> Vec<Distribution<'_>> {
        Vec::new()
    }

    fn shown(&self) -> Vec<Shown> {
        vec![Shown::Revision {
            rev: self.rev.to_string(),
        }]
    }

    fn moves(&self) -> Moves<'_> {
        Moves::ByCommit(self)
    }

    fn view(&self, around: &Around<'_>) -> SourceView {
        SourceView::Git(GitView {
            url: self.url.to_string(),
            branch: self.branch.as_ref().map(ToString::to_string),
            rev: self.rev.to_string(),
            revision_file: gate::revision_file(around.name),
            series: around.patched.then(|| SeriesView {
                from: gate::series_context_folder(around.name.as_str()),
                to: gate::series_image_folder(around.name.as_str()),
            }),
        })
    }

    fn facts(&self, name: &PinName) -> Vec<PinFact> {
        vec![PinFact {
            url: Some(self.url.to_string()),
            branch: self.branch.as_ref().map(ToString::to_string),
            ..PinFact::bare(name.to_string(), None, self.rev.to_string(), false)
        }]
    }

    fn described(&self) -> String {
        match &self.branch {
            Some(branch) => format!("{} ({branch})", self.url),
            None => self.url.to_string(),
        }
    }

    fn summary(&self) -> String {
        let branch = self
            .branch
            .as_ref()
            .map(|branch| format!(" {branch}"))
            .unwrap_or_default();
        let note = if self.rev.is_full() {
            ""
        } else {
            " (short rev: mutable-looking)"
        };
        format!("{}{branch}{note}", self.url)
    }

    fn listed(&self) -> Listed<'_> {
        Listed::Git(GitListed {
            url: self.url.as_str(),
            branch: self.branch.as_ref().map(BranchName::as_str),
            rev: self.rev.as_str(),
            rev_is_full: self.rev.is_full(),
        })
    }
}
