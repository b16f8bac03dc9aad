//! Render the Dockerfile to stdout or a file, or check that a committed render is current.

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::json;

use crate::diagnostics::CheckFailed;
use crate::fs::{Written, write_output};
use crate::printer::Printer;
use crate::recipe::Recipe;
use crate::render::{self, Dockerfile};

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
            if printer.is_json() {
                printer.json_data(
                    &json!({ "digest": digest.as_str(), "dockerfile": dockerfile.as_str() }),
                );
            } else {
                printer.data(dockerfile.as_str());
            }
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
            if printer.is_json() {
                printer.json(&json!({ "digest": digest.as_str(), "path": path, "changed": written == Written::Changed }));
            }
        }
        RenderMode::Check(path) => {
            let current = std::fs::read(path).ok();
            let fresh = current.as_deref() == Some(dockerfile.as_str().as_bytes());
            if printer.is_json() {
                printer.json(&json!({ "digest": digest.as_str(), "path": path, "current": fresh }));
            }
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
