//! How forge ends: the exit status, and the one place errors are rendered as
//! `error:` / `caused by:` / `hint:` (and, with `--json`, as one JSON document on stdout).
//!
//! Each error type says what to do about itself by implementing `Advise` (a hint, or why there
//! is none, and whether it is a check that failed) and registering with `advised!` next to its
//! definition; `report` asks every error in the chain. There is no list of error types here:
//! a new type is found by registering it, and a test fails for a type that is not registered.

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

/// What an error tells the user to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advice {
    /// A hint to print.
    Hint(String),
    /// No hint, and why: the message already says all there is to do, or an error further
    /// along the chain gives the hint.
    Nothing(&'static str),
}

/// An error that knows what to advise and how forge ends because of it.
pub trait Advise: std::error::Error {
    /// A hint, or why there is none.
    fn advice(&self) -> Advice;

    /// How forge ends when this error is in the chain: `Error` unless it is a check that ran
    /// and did not hold.
    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Error
    }
}

/// Finds the `Advise` of an error of one registered type.
pub type Finder = for<'a> fn(&'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Advise>;

/// Every registered error type's finder (see `advised!`).
#[linkme::distributed_slice]
pub static ADVISED: [Finder];

/// Registers an error type that implements `Advise`, so that `report` finds its advice
/// wherever it appears in an error's chain. Write it next to the type's `Advise` impl.
#[macro_export]
macro_rules! advised {
    ($type:ty) => {
        const _: () = {
            fn find<'a>(
                error: &'a (dyn ::std::error::Error + 'static),
            ) -> ::std::option::Option<&'a dyn $crate::diagnostics::Advise> {
                error
                    .downcast_ref::<$type>()
                    .map(|error| error as &dyn $crate::diagnostics::Advise)
            }
            #[::linkme::distributed_slice($crate::diagnostics::ADVISED)]
            #[linkme(crate = ::linkme)]
            static FIND: $crate::diagnostics::Finder = find;
        };
    };
}

/// The advice of `error`, if its type is registered.
pub fn advice_of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Advise> {
    ADVISED.iter().find_map(|find| find(error))
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

impl Advise for CheckFailed {
    fn advice(&self) -> Advice {
        match &self.hint {
            Some(hint) => Advice::Hint(hint.clone()),
            None => Advice::Nothing("the check names what did not hold"),
        }
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Failure
    }
}

advised!(CheckFailed);

/// What an error chain says, ready to print: the message, its causes (each once), the hints,
/// and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The outermost message.
    pub message: String,
    /// The causes, outermost first, without repeats.
    pub causes: Vec<String>,
    /// The hints of the chain, outermost first, without repeats.
    pub hints: Vec<String>,
    /// How forge ends.
    pub exit: ExitStatus,
}

/// Reads `error`'s chain, with the secrets of every URL in it masked (`redact`).
pub fn render(error: &anyhow::Error) -> Rendered {
    let text = |message: String| crate::redact::text(&message).into_owned();
    let mut chain = error.chain();
    let message = text(
        chain
            .next()
            .expect("an error has at least itself in its chain")
            .to_string(),
    );
    let mut causes: Vec<String> = Vec::new();
    let mut last = message.clone();
    for cause in chain {
        let cause = text(cause.to_string());
        // `#[error(transparent)]` wrappers repeat their source's text; say it once.
        if cause != last {
            causes.push(cause.clone());
        }
        last = cause;
    }
    let advised: Vec<&dyn Advise> = error.chain().filter_map(advice_of).collect();
    let mut hints: Vec<String> = Vec::new();
    for advise in &advised {
        if let Advice::Hint(hint) = advise.advice()
            && !hints.contains(&text(hint.clone()))
        {
            hints.push(text(hint));
        }
    }
    let exit = if advised
        .iter()
        .any(|advise| advise.exit_status() == ExitStatus::Failure)
    {
        ExitStatus::Failure
    } else {
        ExitStatus::Error
    };
    Rendered {
        message,
        causes,
        hints,
        exit,
    }
}

/// Prints `error` with its causes and hints, and says which exit status it means. With `--json`
/// the same goes to stdout as `{"error": {message, causes, hint, exit}}`.
pub fn report(printer: &Printer, error: &anyhow::Error) -> ExitStatus {
    let rendered = render(error);
    printer.error(&rendered.message);
    for cause in &rendered.causes {
        printer.note("caused by", cause);
    }
    for hint in &rendered.hints {
        printer.note("hint", hint);
    }
    printer.document(&Failed {
        error: FailedError {
            message: &rendered.message,
            causes: &rendered.causes,
            hint: (!rendered.hints.is_empty()).then(|| rendered.hints.join("\n")),
            exit: rendered.exit as u8,
        },
    });
    rendered.exit
}

/// A failed command's answer: the error on stderr says it; `--json` prints this, unless the
/// command's own document is already on stdout (a failed verification's report).
#[derive(Debug, serde::Serialize)]
struct Failed<'a> {
    error: FailedError<'a>,
}

/// The error: its message, its causes, its hints joined by lines, and the exit status.
#[derive(Debug, serde::Serialize)]
struct FailedError<'a> {
    message: &'a str,
    causes: &'a [String],
    hint: Option<String>,
    exit: u8,
}

impl crate::printer::Document for Failed<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer {
        source: CheckFailed,
    }

    #[test]
    fn a_hint_and_a_failed_check_are_found_along_the_chain() {
        let error = anyhow::Error::from(Outer {
            source: CheckFailed::new("inner", "do this"),
        });
        let rendered = render(&error);
        assert_eq!(rendered.message, "outer");
        assert_eq!(rendered.causes, ["inner"]);
        assert_eq!(rendered.hints, ["do this"]);
        assert_eq!(rendered.exit, ExitStatus::Failure);
    }
}
