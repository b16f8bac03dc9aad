//! How forge ends: the exit status, and the one place errors are rendered as
//! `error:` / `caused by:` / `hint:`.

use crate::printer::Printer;

/// forge's exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything held.
    Success = 0,
    /// A check failed: a digest mismatch, a conflict, a refused constraint, a stale render.
    Failure = 1,
    /// forge could not do its job: bad usage, bad pins.toml, an unreachable daemon.
    Error = 2,
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        std::process::ExitCode::from(status as u8)
    }
}

/// A check that ran and did not hold: exit 1 rather than 2.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CheckFailed {
    /// What did not hold.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl CheckFailed {
    /// A failed check with a hint.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

/// The hint a typed error carries, if `error` is one forge knows.
fn hint_of(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    if let Some(error) = error.downcast_ref::<CheckFailed>() {
        return error.hint.clone();
    }
    if let Some(error) = error.downcast_ref::<crate::pins::LoadError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::recipe::RecipeError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::render::RenderError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::bump::BumpError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::bump::OfferError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::index::select::SelectError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::context::ContextError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::engine::EngineError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::registry::CredentialsError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::lock::LockError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::patch::PatchError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::verify::VerifyError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::registry::RegistryError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::publish::BuildError>() {
        return error.hint();
    }
    if let Some(error) = error.downcast_ref::<crate::ops::report::ReportError>() {
        return error.hint();
    }
    None
}

/// Whether `error` is a build that ran and failed (a step, the Dockerfile) rather than one the
/// environment stopped.
fn failed_build(error: &(dyn std::error::Error + 'static)) -> bool {
    error
        .downcast_ref::<crate::engine::EngineError>()
        .is_some_and(crate::engine::EngineError::is_failed_check)
}

/// Prints `error` with its causes and hints, and says which exit status it means.
pub fn report(printer: &Printer, error: &anyhow::Error) -> ExitStatus {
    let mut chain = error.chain();
    let head = chain
        .next()
        .expect("an error has at least itself in its chain");
    printer.error(head);
    let mut last = head.to_string();
    for cause in chain {
        let text = cause.to_string();
        // `#[error(transparent)]` wrappers repeat their source's text; say it once.
        if text != last {
            printer.note("caused by", &text);
        }
        last = text;
    }
    let mut hints: Vec<String> = error.chain().filter_map(hint_of).collect();
    hints.dedup();
    for hint in hints {
        printer.note("hint", hint);
    }
    let check_failed = |cause: &(dyn std::error::Error + 'static)| {
        cause.is::<CheckFailed>()
            || failed_build(cause)
            || cause
                .downcast_ref::<crate::patch::PatchError>()
                .is_some_and(crate::patch::PatchError::is_check_failure)
    };
    if error.chain().any(check_failed) {
        ExitStatus::Failure
    } else {
        ExitStatus::Error
    }
}
