//! Stage 6: a successful build in, `forge.lock` out: the record of what went into the image
//! and what came out, written atomically and only after the build, its tags and its pushes all
//! succeeded.
//!
//! The record is TOML, like pins.toml beside it: it is read in review next to the pins it
//! records, diffs line by line, and carries a comment saying what it is. `--locked` compares
//! a fresh computation of `Inputs` with the record and refuses to build when they differ.
//!
//! forge.lock holds one of two things (`Lock`): a build's whole `Record`, or only the recipe's
//! `[inputs]` (with the base's `[base]` when a build recorded one), which `forge lock` and
//! `forge pin bump` write without a build so that a fresh clone can build `--locked`. A record
//! is kept only while its inputs are the recipe's: once they move, the build it describes is
//! not of this recipe any more, and what stays is the inputs and the base.
//!
//! Here: the file (reading, parsing, writing) and `Lock`; the record's schema is in `record`,
//! the inputs and how two sets differ in `inputs`, what can go wrong in `error`. A command asks
//! the recipe for forge.lock (`Recipe::lock`), which reads it once.

mod error;
mod inputs;
mod record;

pub use error::LockError;
pub use inputs::Inputs;
pub use record::{
    AttachmentKind, AttachmentRecord, BaseRecord, ImageRecord, PatchRecord, PlatformRecord, Record,
    TagRecord,
};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fs::{Written, write_if_changed};
use crate::location::Location;

/// The record's file name, in the recipe folder.
pub const LOCK_FILE: &str = "forge.lock";

/// The format version; bumped when a field changes meaning.
const FORMAT_VERSION: u32 = 1;

const HEADER: &str = "# forge.lock: the record of the last successful `forge build` of this recipe.\n\
# Written by forge after the build, its tags and its pushes succeeded; do not edit by hand.\n\
# `forge build --locked` refuses to build when the inputs no longer match [inputs].\n\n";

const INPUTS_HEADER: &str = "# forge.lock: the inputs of this recipe, as `forge lock` (or `forge pin bump`) computed them;\n\
# no build of them is recorded yet. Do not edit by hand.\n\
# `forge build --locked` refuses to build when the inputs no longer match [inputs].\n\n";

/// What forge.lock holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lock {
    /// The recipe's inputs without a build of them, and the base as the last build recorded it.
    Inputs {
        /// The inputs.
        inputs: Box<Inputs>,
        /// The base of the last build, kept for what it says the base holds.
        base: Option<Box<BaseRecord>>,
    },
    /// A build's whole record.
    Built(Box<Record>),
}

impl Lock {
    /// The inputs it records.
    pub fn inputs(&self) -> &Inputs {
        match self {
            Lock::Inputs { inputs, .. } => inputs,
            Lock::Built(record) => &record.inputs,
        }
    }

    /// The base as the last build recorded it.
    pub fn base(&self) -> Option<&BaseRecord> {
        match self {
            Lock::Inputs { base, .. } => base.as_deref(),
            Lock::Built(record) => Some(&record.base),
        }
    }

    /// The build it records, if it records one.
    pub fn built(self) -> Option<Record> {
        match self {
            Lock::Inputs { .. } => None,
            Lock::Built(record) => Some(*record),
        }
    }

    /// The build's record, when the lock is one.
    pub fn built_ref(&self) -> Option<&Record> {
        match self {
            Lock::Inputs { .. } => None,
            Lock::Built(record) => Some(record),
        }
    }

    /// The lock with `inputs` as the recipe's: unchanged when they are the recorded ones, else
    /// the inputs alone with the recorded base.
    pub fn with_inputs(self, inputs: Inputs) -> Lock {
        if *self.inputs() == inputs {
            return self;
        }
        Lock::Inputs {
            base: self.base().cloned().map(Box::new),
            inputs: Box::new(inputs),
        }
    }

    /// The file as forge writes it.
    pub fn to_text(&self) -> String {
        match self {
            Lock::Built(record) => record.to_text(),
            Lock::Inputs { inputs, base } => {
                let body = toml::to_string(&InputsFile {
                    version: FORMAT_VERSION,
                    inputs: (**inputs).clone(),
                    base: base.as_deref().cloned(),
                })
                .expect("inputs serialize");
                format!("{INPUTS_HEADER}{body}")
            }
        }
    }

    /// Writes the lock to `root`/forge.lock through a temporary file and a rename, only when
    /// its text changes.
    pub fn write(&self, root: &Path) -> Result<Written, LockError> {
        write_text(root, &self.to_text())
    }
}

/// Writes `text` to `root`/forge.lock through a temporary file and a rename, only when it
/// differs from what is there.
fn write_text(root: &Path, text: &str) -> Result<Written, LockError> {
    let path = path(root);
    write_if_changed(&path, text.as_bytes()).map_err(|source| LockError::Io {
        action: "write",
        path,
        source,
    })
}

/// forge.lock without a build: its version, the inputs, and the base when known.
#[derive(Debug, Serialize, Deserialize)]
struct InputsFile {
    version: u32,
    inputs: Inputs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<BaseRecord>,
}

/// The path of forge.lock in the recipe folder `root`.
pub fn path(root: &Path) -> PathBuf {
    crate::fs::in_folder(root, LOCK_FILE)
}

/// Reads the build recorded in `root`, if forge.lock records one.
pub fn read(root: &Path) -> Result<Option<Record>, LockError> {
    Ok(load(root)?.and_then(Lock::built))
}

/// Reads forge.lock in `root`, if there is one.
pub fn load(root: &Path) -> Result<Option<Lock>, LockError> {
    let path = path(root);
    let text = match crate::fs::read_state(&path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(source) => {
            return Err(LockError::Io {
                action: "read",
                path,
                source,
            });
        }
    };
    parse(&path, &text).map(Some)
}

/// What `text` holds, checked: its format version first (a file of another version is refused
/// before its fields are read), then its fields; a build's record must record at least one
/// tag. Every refusal names `path` with the line and column of what is wrong.
fn parse(path: &Path, text: &str) -> Result<Lock, LockError> {
    let at = |span: Option<std::ops::Range<usize>>| match span {
        Some(span) => Location::from_offset(path, text, span.start).to_string(),
        None => path.display().to_string(),
    };
    let invalid = |error: toml::de::Error| LockError::Invalid {
        at: at(error.span()),
        message: error.message().trim_end().to_owned(),
    };
    /// The fields read before the others: the version, and whether a build is recorded.
    #[derive(Deserialize)]
    struct Header {
        version: toml::Spanned<i64>,
        image: Option<toml::Value>,
    }
    let header: Header = toml::from_str(text).map_err(invalid)?;
    if *header.version.get_ref() != i64::from(FORMAT_VERSION) {
        return Err(LockError::Version {
            at: at(Some(header.version.span())),
            found: *header.version.get_ref(),
        });
    }
    if header.image.is_none() {
        let file: InputsFile = toml::from_str(text).map_err(invalid)?;
        return Ok(Lock::Inputs {
            inputs: Box::new(file.inputs),
            base: file.base.map(Box::new),
        });
    }
    let record: Record = toml::from_str(text).map_err(invalid)?;
    if record.tags.is_empty() {
        return Err(LockError::Invalid {
            at: at(None),
            message: "it records no tag; every build records the tags it applied".to_owned(),
        });
    }
    Ok(Lock::Built(Box::new(record)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::{Advice, Advise as _};
    use crate::types::oci::Digest;

    #[test]
    fn attachments_are_recorded_and_a_record_without_them_still_reads() {
        let unsigned = Record::sample();
        let text = unsigned.to_text();
        assert!(!text.contains("attachments"), "{text}");
        assert_eq!(
            parse(Path::new("forge.lock"), &text).unwrap(),
            Lock::Built(Box::new(unsigned))
        );
        let mut signed = Record::sample();
        signed.attachments = vec![AttachmentRecord {
            kind: AttachmentKind::Signature,
            subject: Digest::filled('b'),
            tag: format!("sha256-{}.sig", "b".repeat(64)),
            manifest: Digest::filled('c'),
            content: Digest::filled('d'),
        }];
        let text = signed.to_text();
        assert!(
            text.contains("[[attachments]]\nkind = \"signature\""),
            "{text}"
        );
        assert_eq!(
            parse(Path::new("forge.lock"), &text).unwrap(),
            Lock::Built(Box::new(signed))
        );
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let folder = tempfile::tempdir().unwrap();
        assert_eq!(read(folder.path()).unwrap(), None);
        let record = Record::sample();
        assert_eq!(record.write(folder.path()).unwrap(), Written::Changed);
        assert_eq!(record.write(folder.path()).unwrap(), Written::Unchanged);
        assert_eq!(read(folder.path()).unwrap(), Some(record.clone()));
        let text = std::fs::read_to_string(path(folder.path())).unwrap();
        assert!(text.starts_with("# forge.lock"), "{text}");
        assert!(text.contains("mutability = \"immutable\""), "{text}");
    }

    #[test]
    fn inputs_alone_read_back_and_keep_the_base_the_last_build_recorded() {
        let folder = tempfile::tempdir().unwrap();
        let built = Lock::Built(Box::new(Record::sample()));
        assert_eq!(
            built.clone().with_inputs(Inputs::sample()),
            built,
            "the same inputs keep the build"
        );
        let mut moved = Inputs::sample();
        moved.pins = Digest::filled('f');
        let lock = built.with_inputs(moved.clone());
        assert_eq!(
            lock,
            Lock::Inputs {
                inputs: Box::new(moved),
                base: Some(Box::new(Record::sample().base)),
            }
        );
        lock.write(folder.path()).unwrap();
        let text = std::fs::read_to_string(path(folder.path())).unwrap();
        assert!(
            text.starts_with("# forge.lock: the inputs of this recipe"),
            "{text}"
        );
        assert!(!text.contains("[image]"), "{text}");
        assert_eq!(load(folder.path()).unwrap(), Some(lock));
        assert_eq!(read(folder.path()).unwrap(), None, "no build is recorded");
    }

    #[test]
    fn differences_name_each_changed_input() {
        let recorded = Record::sample().inputs;
        let mut current = recorded.clone();
        assert!(recorded.differences(&current).is_empty());
        current.context = Digest::filled('7');
        current.pins = Digest::filled('8');
        let fields: Vec<&str> = recorded
            .differences(&current)
            .iter()
            .map(|(field, ..)| *field)
            .collect();
        assert_eq!(fields, ["pins.toml", "context"]);
    }

    #[test]
    fn a_damaged_record_is_refused_with_its_path() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(path(folder.path()), "version = \"one\"\n").unwrap();
        let error = read(folder.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("forge.lock:1:11: not a valid build record: invalid type: string \"one\", expected i64"),
            "{error}"
        );
    }

    #[test]
    fn a_record_of_another_format_version_is_refused_at_its_line() {
        let folder = tempfile::tempdir().unwrap();
        let future = "version = 99";
        let text = Record::sample()
            .to_text()
            .replace("version = 1\n", &format!("{future}\n"));
        std::fs::write(path(folder.path()), &text).unwrap();
        let line = text.lines().position(|line| line == future).unwrap() + 1;
        let error = read(folder.path()).unwrap_err();
        assert!(
            error.to_string().ends_with(&format!(
                "forge.lock:{line}:11: forge.lock format version 99; this forge reads version 1"
            )),
            "{error}"
        );
        let Advice::Hint(hint) = error.advice() else {
            panic!("a hint")
        };
        assert!(hint.contains("a newer forge wrote it"), "{hint}");
    }

    #[test]
    fn a_record_without_tags_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        let mut record = Record::sample();
        record.tags.clear();
        std::fs::write(path(folder.path()), record.to_text()).unwrap();
        let error = read(folder.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("forge.lock: not a valid build record: it records no tag; every build records the tags it applied"),
            "{error}"
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_is_refused_at_its_line() {
        let folder = tempfile::tempdir().unwrap();
        let text = Record::sample()
            .to_text()
            .replace("context_mtime = 0", "context_mtime = \"soon\"");
        std::fs::write(path(folder.path()), &text).unwrap();
        let line = text
            .lines()
            .position(|line| line.starts_with("context_mtime"))
            .unwrap()
            + 1;
        let error = read(folder.path()).unwrap_err().to_string();
        assert!(error.contains(&format!("forge.lock:{line}:")), "{error}");
    }
}
