//! Stage 2: a `Recipe` in, the `Dockerfile` text out.
//!
//! The recipe is turned into a plain view (`View`) of strings and lists, with everything a
//! template must not retype already derived: pip requirements, wheel versions, smoke gates,
//! labels. `templates/Dockerfile.j2` is rendered from that view by minijinja in strict mode, so a
//! template that names a pin pins.toml does not define is an error naming template, line and
//! expression. The output depends on nothing but the recipe: no clock, no machine, no order of
//! a hash map.

pub mod instructions;
mod view;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use sha2::{Digest as _, Sha256};
use view::{View, patched};

use crate::diagnostics::{Advice, Advise};
use crate::fs::{Confined, PathError};
use crate::location::Location;
use crate::pins::{Moves, gate};
use crate::recipe::{DOCKERFILE_TEMPLATE, Recipe};
use crate::types::oci::Digest;

/// The build argument that carries the recipe's git commit into the revision label; it is an
/// argument rather than rendered text so that committing the render does not change it.
pub const REVISION_ARG: &str = "FORGE_REVISION";

/// A rendered Dockerfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dockerfile {
    text: String,
}

impl Dockerfile {
    /// The Dockerfile text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The sha256 of the text.
    pub fn digest(&self) -> Digest {
        Digest::from_sha256(&Sha256::digest(self.text.as_bytes()))
    }
}

/// Why the template could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The template folder or file is missing.
    #[error("template {} not found", path.display())]
    Missing {
        /// The path looked at.
        path: PathBuf,
    },
    /// The template failed to render.
    #[error("{location}: {message}")]
    Template {
        /// Template file, line and column.
        location: Location,
        /// What went wrong, with the expression at fault.
        message: String,
        /// What to do about it.
        hint: String,
    },
    /// A template is a special file, or leads out of the recipe folder.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A git pin has a patch series the rendered Dockerfile does not copy.
    #[error(
        "{}: pin `{pin}` has a patch series, but the Dockerfile never copies {folder}/, so the image would be built without it",
        template.display()
    )]
    SeriesNotCopied {
        /// The template.
        template: PathBuf,
        /// The git pin.
        pin: String,
        /// The series' folder in the build context.
        folder: String,
    },
    /// A donor's image starts no stage of the rendered Dockerfile.
    #[error(
        "{}: donor `{donor}` is in pins.toml, but no stage of the Dockerfile starts FROM it",
        template.display()
    )]
    DonorNotStaged {
        /// The template.
        template: PathBuf,
        /// The donor's name.
        donor: String,
    },
    /// A patch script's step is not in the rendered Dockerfile.
    #[error(
        "{}: patch script `{script}` is in pins.toml, but the Dockerfile never runs it",
        template.display()
    )]
    ScriptNotRun {
        /// The template.
        template: PathBuf,
        /// The script's file.
        script: String,
    },
    /// A fix's check is not in the rendered Dockerfile.
    #[error(
        "{}: fix `{fix}` comes with {by}, but the Dockerfile never runs that step's gate, so nothing would check it",
        template.display()
    )]
    FixNotChecked {
        /// The template.
        template: PathBuf,
        /// The fix.
        fix: String,
        /// The pin or overlay it names.
        by: String,
    },
}

impl Advise for RenderError {
    fn advice(&self) -> Advice {
        match self {
            RenderError::Missing { .. } => Advice::Hint(format!(
                "a recipe keeps its template at templates/{DOCKERFILE_TEMPLATE}"
            )),
            RenderError::Template { hint, .. } => Advice::Hint(hint.clone()),
            RenderError::Path(error) => error.advice(),
            RenderError::SeriesNotCopied { pin, .. } => Advice::Hint(format!(
                "in the pin's build step, `COPY {{{{ pins['{pin}'].series.from }}}}/ {{{{ pins['{pin}'].series.to }}}}` and apply its `*.patch` files in name order after the checkout (the default template's DeepGEMM step shows how)"
            )),
            RenderError::DonorNotStaged { donor, .. } => Advice::Hint(format!(
                "start its stage with `FROM {{{{ donors['{donor}'].reference }}}} AS {donor}`, then `COPY --from={donor} ...` in the image's stage"
            )),
            RenderError::ScriptNotRun { .. } => Advice::Hint(
                "after the overlays: `{% for script in scripts %}COPY {{ script.file }} {{ script.to }}` then `RUN {{ script.run }}{% endfor %}` (the default template's step 5 shows how)".to_owned(),
            ),
            RenderError::FixNotChecked { .. } => Advice::Hint(
                "end the step with the gate forge generates for it: `{{ pins.NAME.gate }}` for a pin (`{{ pins.NAME.shim.gate }}` when it has a shim), `{{ overlay.gate }}` for an overlay".to_owned(),
            ),
        }
    }
}

crate::advised!(RenderError);

/// What the render installs unchecked: for each pin, the distributions pip installs with no
/// recorded sha256, as a warning to show with the render.
pub fn unhashed_warnings(recipe: &Recipe) -> Vec<String> {
    recipe
        .pins
        .pins
        .values()
        .filter_map(|pin| {
            let unhashed = pin.unhashed();
            let version = pin.version()?;
            let how = match pin.moves() {
                Moves::ByDownload(..) => "downloads and records them",
                Moves::ByIndex | Moves::ByCommit(_) | Moves::WithTheBase { .. } => {
                    "records every file of the version its index offers"
                }
            };
            (!unhashed.is_empty()).then(|| {
                format!(
                    "pin `{}`: no sha256 recorded for {}, so the Dockerfile installs {} unchecked (`forge pin bump {} --to {version}` {how})",
                    pin.name,
                    unhashed.join(", "),
                    if unhashed.len() == 1 { "it" } else { "them" },
                    pin.name,
                )
            })
        })
        .collect()
}

/// Renders the recipe's Dockerfile.
pub fn dockerfile(recipe: &Recipe) -> Result<Dockerfile, RenderError> {
    let templates = recipe.templates_dir();
    let path = templates.join(DOCKERFILE_TEMPLATE);
    let source = match Confined::new(&recipe.files)?.read_to_string(&path) {
        Ok(source) => source,
        Err(PathError::Read { .. }) => return Err(RenderError::Missing { path }),
        Err(error) => return Err(error.into()),
    };
    dockerfile_from(recipe, &templates, &source)
}

/// Where the template `name` lies in `templates`, refusing names that climb out of it or
/// name hidden files (as minijinja's own path loader does).
fn template_path(templates: &Path, name: &str) -> Option<PathBuf> {
    let mut path = templates.to_owned();
    for segment in name.split('/') {
        if segment.is_empty() || segment.starts_with('.') || segment.contains('\\') {
            return None;
        }
        path.push(segment);
    }
    Some(path)
}

/// A loader of the templates a template includes, from `templates`, each read only when it
/// resolves inside the recipe folder and is a regular file; a refusal is kept in `refused`.
fn confined_loader(
    folder: Confined,
    templates: PathBuf,
    refused: Arc<Mutex<Option<PathError>>>,
) -> impl Fn(&str) -> Result<Option<String>, minijinja::Error> + Send + Sync + 'static {
    move |name| {
        let Some(path) = template_path(&templates, name) else {
            return Ok(None);
        };
        match folder.read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(PathError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(None)
            }
            Err(error) => {
                let message = error.to_string();
                *refused
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error);
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            }
        }
    }
}

/// Renders `source` as the recipe's Dockerfile template; templates it includes are read from
/// `templates`.
pub fn dockerfile_from(
    recipe: &Recipe,
    templates: &Path,
    source: &str,
) -> Result<Dockerfile, RenderError> {
    let path = templates.join(DOCKERFILE_TEMPLATE);
    let mut environment = Environment::new();
    environment.set_undefined_behavior(UndefinedBehavior::Strict);
    environment.set_auto_escape_callback(|_| AutoEscape::None);
    environment.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .expect("the default delimiters are valid"),
    );
    // A template that includes itself, or loops over a huge range, must end in an error, not
    // a hang or a stack overflow.
    environment.set_recursion_limit(64);
    environment.set_fuel(Some(crate::limits::TEMPLATE_FUEL));
    let folder = Confined::new(&recipe.files)?;
    let refused = Arc::new(Mutex::new(None));
    environment.set_loader(confined_loader(
        folder.clone(),
        templates.to_owned(),
        refused.clone(),
    ));

    let view = View::of(recipe);
    let text = environment
        .template_from_named_str(DOCKERFILE_TEMPLATE, source)
        .and_then(|template| {
            template.render(minijinja::Value::from(minijinja::value::Serde(&view)))
        })
        .map_err(|error| {
            let refused = refused
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            match refused {
                Some(refused) => RenderError::Path(refused),
                None => template_error(&folder, templates, &path, source, &error),
            }
        })?;
    // A series the Dockerfile never copies would be reported as applied and never reach the
    // image.
    for pin in recipe.pins.pins.values().filter(|pin| patched(recipe, pin)) {
        let folder = gate::series_context_folder(pin.name.as_str());
        let copied = instructions::instructions(&text).iter().any(|instruction| {
            instruction.is("COPY") && instruction.text.contains(&format!("{folder}/"))
        });
        if !copied {
            return Err(RenderError::SeriesNotCopied {
                template: path,
                pin: pin.name.to_string(),
                folder,
            });
        }
    }
    // A fix whose check the Dockerfile never runs would be declared and never proved.
    for fix in &recipe.pins.fixes {
        if !text.contains(&gate::for_fix(fix)) {
            return Err(RenderError::FixNotChecked {
                template: path,
                fix: fix.name.to_string(),
                by: fix.by.to_string(),
            });
        }
    }
    // A donor no stage starts from would be recorded and never copied from.
    for (name, donor) in &recipe.pins.donors {
        let reference = donor.reference();
        let staged = instructions::instructions(&text).iter().any(|instruction| {
            instruction.is("FROM") && instruction.text.split_whitespace().nth(1) == Some(&reference)
        });
        if !staged {
            return Err(RenderError::DonorNotStaged {
                template: path,
                donor: name.to_string(),
            });
        }
    }
    // A patch script the Dockerfile never runs would be recorded and never applied.
    for script in &recipe.pins.scripts {
        if !text.contains(&gate::for_script(script)) {
            return Err(RenderError::ScriptNotRun {
                template: path,
                script: script.file.to_string(),
            });
        }
    }
    Ok(Dockerfile { text })
}

fn template_error(
    folder: &Confined,
    templates: &Path,
    main: &Path,
    main_source: &str,
    error: &minijinja::Error,
) -> RenderError {
    // The error may come from an included template; read that one to place it.
    let (path, source) = match error.name() {
        Some(name) if name != DOCKERFILE_TEMPLATE => {
            let path = templates.join(name);
            let source = folder.read_to_string(&path).unwrap_or_default();
            (path, source)
        }
        _ => (main.to_owned(), main_source.to_owned()),
    };
    // minijinja places an attribute error at the attribute (`.deepgemm.branch`); widen the
    // range back to the start of the whole expression (`pins.deepgemm.branch`).
    let range = error.range().map(|range| {
        let is_expression =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '\'' | '-');
        let start = source[..range.start]
            .rfind(|c: char| !is_expression(c))
            .map_or(0, |index| index + 1);
        start..range.end
    });
    let offset = match (&range, error.line()) {
        (Some(range), _) => range.start,
        (None, Some(line)) => source
            .split_inclusive('\n')
            .take(line.saturating_sub(1))
            .map(str::len)
            .sum(),
        (None, None) => 0,
    };
    let location = Location::from_offset(&path, &source, offset);
    let expression = range
        .and_then(|range| source.get(range))
        .map(str::trim)
        .filter(|text| !text.is_empty());
    let detail = error
        .detail()
        .map(str::to_owned)
        .unwrap_or_else(|| error.kind().to_string());
    let (message, hint) = match (error.kind(), expression) {
        (minijinja::ErrorKind::UndefinedError, Some(expression)) => (
            format!("undefined value `{expression}`"),
            if expression.starts_with("pins") {
                "the template uses a pin that pins.toml does not define (or a field that kind of pin lacks): add it to pins.toml or drop it from the template".to_owned()
            } else {
                "the template names a value forge does not provide; see docs/template-and-context.md for what is available".to_owned()
            },
        ),
        (_, Some(expression)) => (
            format!("{detail} in `{expression}`"),
            "fix the template at that position".to_owned(),
        ),
        (_, None) => (detail, "fix the template at that position".to_owned()),
    };
    RenderError::Template {
        location,
        message,
        hint,
    }
}
