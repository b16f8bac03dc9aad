//! Render the Dockerfile to stdout or a file, or check that a committed render is current.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::diagnostics::CheckFailed;
use crate::fs::{Written, write_output};
use crate::printer::{Document, Printer};
use crate::recipe::Recipe;
use crate::render::{self, Dockerfile};
use crate::types::oci::Digest;

/// Where the render goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderMode {
    /// Print it.
    Stdout,
    /// Write it to a file, only if its content changes.
    Write(PathBuf),
    /// Compare it with a file and fail when they differ; write nothing.
    Check(PathBuf),
}

/// Options of `forge render`.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Where the render goes.
    pub mode: RenderMode,
}

/// Renders the recipe's Dockerfile as `options` say.
pub fn render(
    recipe: &Recipe,
    options: &RenderOptions,
    printer: &Printer,
) -> anyhow::Result<Dockerfile> {
    let dockerfile = render::dockerfile(recipe)?;
    for warning in render::unhashed_warnings(recipe) {
        printer.warn(warning);
    }
    crate::pipeline::wheels_load_on_the_base(recipe)?;
    let digest = dockerfile.digest();
    match &options.mode {
        RenderMode::Stdout => {
            printer.document(&Rendered::Printed {
                digest: &digest,
                dockerfile: dockerfile.as_str(),
            });
        }
        RenderMode::Write(path) => {
            let written = write_output(path, dockerfile.as_str().as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            match written {
                Written::Changed => {
                    printer.status("Rendered", format_args!("{} ({digest})", path.display()))
                }
                Written::Unchanged => {
                    printer.status("Fresh", format_args!("{} ({digest})", path.display()))
                }
            }
            printer.document(&Rendered::Written {
                digest: &digest,
                path,
                changed: written == Written::Changed,
            });
        }
        RenderMode::Check(path) => {
            let current = std::fs::read(path).ok();
            let fresh = current.as_deref() == Some(dockerfile.as_str().as_bytes());
            printer.document(&Rendered::Checked {
                digest: &digest,
                path,
                current: fresh,
            });
            if !fresh {
                let state = if current.is_some() {
                    "is out of date"
                } else {
                    "does not exist"
                };
                return Err(CheckFailed::new(
                    format!(
                        "{} {state}: a fresh render has digest {digest}",
                        path.display()
                    ),
                    format!(
                        "run `forge render --out {}` and commit the result",
                        path.display()
                    ),
                )
                .into());
            }
            printer.status("Fresh", format_args!("{} ({digest})", path.display()));
        }
    }
    Ok(dockerfile)
}

/// `forge render`'s answer: the Dockerfile on stdout (its text, or with its digest as JSON),
/// or, for `--out` and `--check`, what the statuses say.
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
enum Rendered<'a> {
    /// Printed on stdout.
    Printed {
        digest: &'a Digest,
        dockerfile: &'a str,
    },
    /// Written to `--out`.
    Written {
        digest: &'a Digest,
        path: &'a Path,
        changed: bool,
    },
    /// Compared with `--check`'s file.
    Checked {
        digest: &'a Digest,
        path: &'a Path,
        current: bool,
    },
}

impl Document for Rendered<'_> {
    fn text(&self) -> Option<String> {
        match self {
            Rendered::Printed { dockerfile, .. } => Some((*dockerfile).to_owned()),
            Rendered::Written { .. } | Rendered::Checked { .. } => None,
        }
    }

    fn is_product(&self) -> bool {
        matches!(self, Rendered::Printed { .. })
    }
}
