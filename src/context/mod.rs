//! Stage 4: the rendered Dockerfile and the recipe paths it copies in, a deterministic build
//! context (a tar archive) and its sha256, the **context digest**, out.
//!
//! The archive holds only what the build needs: `Dockerfile` at its root, then each `Member`
//! (an overlay folder, the patched tree standing in for a patch target, a shim file) at its
//! recipe path. It depends on nothing but those bytes:
//!
//! - entries sorted by path, with a folder entry for every parent;
//! - every mtime `SOURCE_DATE_EPOCH`, else 0; uid and gid 0, no user or group names;
//! - modes 0755 for folders and executables, 0644 for other files; no extended attributes;
//! - symbolic links go in as links (as docker sends them), whatever they point at; only a
//!   member's own path is followed, as `COPY` follows it;
//! - `.dockerignore` is applied as the docker CLI applies it (`ignore`), and nothing else is
//!   left out: what docker would send of a member, forge sends;
//! - a secret-looking file (`secrets`) that `.dockerignore` leaves in refuses the build, unless
//!   pins.toml allows it by name;
//! - a special file (FIFO, socket, device) refuses the build before anything reads it.
//!
//! The archive is written once, to a temporary file, and hashed on the way, so even a large
//! context is neither read twice nor held in memory. `Output::Discard` only hashes (a dry run).

mod archive;
mod error;
pub mod ignore;
pub mod overlays;
pub mod secrets;

pub use error::ContextError;

use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

pub use ignore::{Exclusions, IgnoreFileError};

use crate::types::oci::Digest;
use crate::types::recipe::ContextPath;
use archive::{Entries, Source};

/// The name of the Dockerfile inside the context.
pub const DOCKERFILE: &str = "Dockerfile";

/// One recipe path copied into the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its path inside the context (the recipe path the Dockerfile names).
    pub at: String,
    /// Where its content is on disk (the recipe's own copy, or a patched tree).
    pub from: PathBuf,
}

/// Where the archive goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Nowhere: only its digest and size are wanted.
    Discard,
    /// A temporary file, removed when the `BuildContext` is dropped.
    TemporaryFile,
    /// A file that stays, written through a temporary file beside it and a rename.
    File(PathBuf),
}

/// The assembled context.
#[derive(Debug)]
pub struct BuildContext {
    /// The sha256 of the archive's bytes.
    pub digest: Digest,
    /// The archive's size in bytes.
    pub size: u64,
    /// How many entries (files, folders, links) it holds.
    pub entries: usize,
    archive: Option<Archive>,
}

/// Where an assembled archive lives.
#[derive(Debug)]
enum Archive {
    Temporary(NamedTempFile),
    Kept(PathBuf),
}

impl Archive {
    /// Where it is on disk.
    fn path(&self) -> Option<&Path> {
        Some(match self {
            Archive::Temporary(file) => file.path(),
            Archive::Kept(path) => path,
        })
    }
}

impl BuildContext {
    /// The archive on disk, unless it was assembled with `Output::Discard`.
    pub fn archive(&self) -> Option<&Path> {
        self.archive.as_ref().and_then(Archive::path)
    }
}

/// What goes into the context.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The rendered Dockerfile's text, stored as `Dockerfile`.
    pub dockerfile: &'a str,
    /// The recipe paths the Dockerfile copies; a later member at the same path replaces an
    /// earlier one.
    pub members: &'a [Member],
    /// Folders of files forge writes itself, after the members.
    pub generated: &'a [Generated],
    /// What stays out of the members.
    pub exclusions: &'a Exclusions,
    /// The secret-looking files of the members that may go in (pins.toml's `[context]
    /// allow_secrets`).
    pub allowed_secrets: &'a [ContextPath],
    /// The mtime every entry carries.
    pub mtime: u64,
}

/// A folder of files forge writes itself (the patches it applied to a git pin). The exclusions
/// never apply to it: the Dockerfile relies on every file in it, and a `.dockerignore` line that
/// dropped one would build the image without it.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// Its path inside the context.
    pub at: String,
    /// Its files, by name, and their bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Writes the context for `inputs` to `output` and returns its digest.
pub fn assemble(inputs: Inputs<'_>, output: Output) -> Result<BuildContext, ContextError> {
    let mut entries = Entries::default();
    // A later member replaces an earlier one at the same path whole: a patched tree stands in
    // for the folder it patched, files the patches deleted included.
    for member in inputs.members {
        entries.remove_tree(&member.at);
        entries.insert_member(&member.at, &member.from, inputs.exclusions)?;
    }
    let secrets: Vec<String> = entries
        .files()
        .filter(|path| secrets::looks_secret(path))
        .filter(|path| {
            !inputs
                .allowed_secrets
                .iter()
                .any(|allowed| allowed.as_str() == *path)
        })
        .map(str::to_owned)
        .collect();
    if !secrets.is_empty() {
        return Err(ContextError::Secrets { files: secrets });
    }
    for folder in inputs.generated {
        entries.remove_tree(&folder.at);
        entries.insert(&folder.at, Source::Folder);
        for (name, bytes) in &folder.files {
            entries.insert(
                &format!("{}/{name}", folder.at),
                Source::Bytes(bytes.clone()),
            );
        }
    }
    entries.insert(
        DOCKERFILE,
        Source::Bytes(inputs.dockerfile.as_bytes().to_vec()),
    );
    let (hash, size, archive) = write_archive(&entries, inputs.mtime, output)?;
    Ok(BuildContext {
        digest: Digest::from_sha256(&hash),
        size,
        entries: entries.len(),
        archive,
    })
}

/// Writes the archive where `output` says; its sha256, size and where it lives.
fn write_archive(
    entries: &Entries,
    mtime: u64,
    output: Output,
) -> Result<(Vec<u8>, u64, Option<Archive>), ContextError> {
    Ok(match output {
        Output::Discard => {
            let (hash, size, _) = entries.write(std::io::sink(), mtime)?;
            (hash, size, None)
        }
        Output::TemporaryFile => {
            let file = tempfile::Builder::new()
                .prefix("forge-context-")
                .suffix(".tar")
                .tempfile()
                .map_err(ContextError::Write)?;
            let (hash, size, file) = entries.write(file, mtime)?;
            (hash, size, Some(Archive::Temporary(file)))
        }
        Output::File(path) => {
            // Every failure from here on is the named file's, not the temporary folder's.
            let to = |source: std::io::Error| ContextError::WriteTo {
                path: path.clone(),
                source,
            };
            let named = |error: ContextError| match error {
                ContextError::Write(source) => to(source),
                other => other,
            };
            match crate::fs::Destination::of(&path).map_err(to)? {
                // A device or FIFO gets a copy of the archive the build reads from its own file.
                crate::fs::Destination::Through(special) => {
                    let (hash, size, archive) =
                        write_archive(entries, mtime, Output::TemporaryFile)?;
                    let kept = archive.as_ref().and_then(Archive::path);
                    let copied = kept.map_or(Ok(0), |kept| {
                        let mut out = std::fs::OpenOptions::new().write(true).open(&special)?;
                        std::io::copy(&mut std::fs::File::open(kept)?, &mut out)
                    });
                    copied.map_err(to)?;
                    (hash, size, archive)
                }
                crate::fs::Destination::File(target) => {
                    let folder = match target.parent() {
                        Some(parent) if !parent.as_os_str().is_empty() => parent,
                        _ => Path::new("."),
                    };
                    let file = tempfile::Builder::new()
                        .prefix(".forge-context-")
                        .suffix(".tmp")
                        .tempfile_in(folder)
                        .map_err(to)?;
                    let (hash, size, file) = entries.write(file, mtime).map_err(named)?;
                    file.persist(&target).map_err(|error| to(error.error))?;
                    (hash, size, Some(Archive::Kept(target)))
                }
            }
        }
    })
}

/// The digest of recipe paths under `root` as forge would archive them (mtime 0), used to
/// record inputs such as the templates folder. Paths that do not exist are skipped.
pub fn digest_of(root: &Path, paths: &[&str]) -> Result<Digest, ContextError> {
    let mut entries = Entries::default();
    let exclusions = Exclusions::default();
    for path in paths {
        let from = root.join(path);
        if from.symlink_metadata().is_ok() {
            entries.insert_member(path, &from, &exclusions)?;
        }
    }
    let (hash, _, _) = entries.write(std::io::sink(), 0)?;
    Ok(Digest::from_sha256(&hash))
}

/// The mtime context entries carry: `SOURCE_DATE_EPOCH` when it is set, else 0.
pub fn mtime_from_environment() -> Result<u64, ContextError> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(value) if !value.trim().is_empty() => value
            .trim()
            .parse()
            .map_err(|_| ContextError::SourceDateEpoch { value }),
        _ => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    const DOCKERFILE_TEXT: &str = "FROM scratch\nCOPY overlays/a /a\n";

    /// Writes `files` under `root` in the given order, each with its own mtime.
    fn tree(root: &Path, files: &[(&str, &str)], mtime_base: i64) {
        for (index, (path, text)) in files.iter().enumerate() {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            let time = std::time::UNIX_EPOCH
                + std::time::Duration::from_secs((mtime_base + index as i64 * 977) as u64);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(time)
                .unwrap();
        }
    }

    fn digest(root: &Path, mtime: u64) -> BuildContext {
        let members = [Member {
            at: "overlays/a".to_owned(),
            from: root.join("overlays/a"),
        }];
        assemble(
            Inputs {
                dockerfile: DOCKERFILE_TEXT,
                members: &members,
                generated: &[],
                exclusions: &Exclusions::default(),
                allowed_secrets: &[],
                mtime,
            },
            Output::TemporaryFile,
        )
        .unwrap()
    }

    const FILES: &[(&str, &str)] = &[
        ("overlays/a/z.py", "z = 1\n"),
        ("overlays/a/deep/b.py", "b = 2\n"),
        ("overlays/a/a.py", "a = 3\n"),
    ];

    #[test]
    fn mtimes_creation_order_and_modes_do_not_change_the_digest() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        tree(first.path(), FILES, 1_000_000);
        let mut reversed = FILES.to_vec();
        reversed.reverse();
        tree(second.path(), &reversed, 1_700_000_000);
        // A umask difference: group-writable in one checkout only.
        let loose = second.path().join("overlays/a/a.py");
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o664)).unwrap();

        let one = digest(first.path(), 0);
        let two = digest(second.path(), 0);
        assert_eq!(one.digest, two.digest);
        assert_eq!(one.size, two.size);
        let bytes_one = std::fs::read(one.archive().unwrap()).unwrap();
        let bytes_two = std::fs::read(two.archive().unwrap()).unwrap();
        assert_eq!(bytes_one, bytes_two);
        assert_eq!(
            one.digest,
            Digest::from_sha256(&<sha2::Sha256 as sha2::Digest>::digest(&bytes_one))
        );

        // Content and the epoch do change it.
        assert_ne!(digest(first.path(), 1).digest, one.digest);
        std::fs::write(first.path().join("overlays/a/a.py"), "a = 4\n").unwrap();
        assert_ne!(digest(first.path(), 0).digest, one.digest);
    }

    #[test]
    fn headers_are_normalised_and_entries_sorted() {
        let root = tempfile::tempdir().unwrap();
        tree(root.path(), FILES, 1_234_567);
        let script = root.path().join("overlays/a/z.py");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir_all(root.path().join("overlays/a/.git")).unwrap();
        std::fs::write(root.path().join("overlays/a/.git/HEAD"), "ref").unwrap();

        let context = digest(root.path(), 42);
        let mut archive =
            tar::Archive::new(std::fs::File::open(context.archive().unwrap()).unwrap());
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let header = entry.header();
            assert_eq!(header.mtime().unwrap(), 42);
            assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
            assert_eq!(header.username().unwrap(), Some(""));
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mode = header.mode().unwrap();
            seen.push((path.clone(), mode));
            if Path::new(&path) == Path::new("Dockerfile") {
                let mut text = String::new();
                entry.read_to_string(&mut text).unwrap();
                assert_eq!(text, DOCKERFILE_TEXT);
            }
        }
        assert_eq!(
            seen,
            [
                ("Dockerfile".to_owned(), 0o644),
                ("overlays/".to_owned(), 0o755),
                ("overlays/a/".to_owned(), 0o755),
                // Nothing docker would send is left out: not even version control.
                ("overlays/a/.git/".to_owned(), 0o755),
                ("overlays/a/.git/HEAD".to_owned(), 0o644),
                ("overlays/a/a.py".to_owned(), 0o644),
                ("overlays/a/deep/".to_owned(), 0o755),
                ("overlays/a/deep/b.py".to_owned(), 0o644),
                ("overlays/a/z.py".to_owned(), 0o755),
            ]
        );
        assert_eq!(context.entries, seen.len());
    }

    #[test]
    fn a_later_member_replaces_an_earlier_one_whole() {
        let checked_in = tempfile::tempdir().unwrap();
        tree(checked_in.path(), FILES, 0);
        let patched = tempfile::tempdir().unwrap();
        tree(patched.path(), &[("z.py", "z = 2\n")], 0);
        let members = [
            Member {
                at: "overlays/a".to_owned(),
                from: checked_in.path().join("overlays/a"),
            },
            Member {
                at: "overlays/a".to_owned(),
                from: patched.path().to_owned(),
            },
        ];
        let context = assemble(
            Inputs {
                dockerfile: DOCKERFILE_TEXT,
                members: &members,
                generated: &[],
                exclusions: &Exclusions::default(),
                allowed_secrets: &[],
                mtime: 0,
            },
            Output::TemporaryFile,
        )
        .unwrap();
        let mut archive =
            tar::Archive::new(std::fs::File::open(context.archive().unwrap()).unwrap());
        let paths: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                entry
                    .unwrap()
                    .path()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            paths,
            ["Dockerfile", "overlays/", "overlays/a/", "overlays/a/z.py"]
        );
    }

    #[test]
    fn discarding_gives_the_same_digest_as_writing() {
        let root = tempfile::tempdir().unwrap();
        tree(root.path(), FILES, 0);
        let members = [Member {
            at: "overlays/a".to_owned(),
            from: root.path().join("overlays/a"),
        }];
        let inputs = Inputs {
            dockerfile: DOCKERFILE_TEXT,
            members: &members,
            generated: &[],
            exclusions: &Exclusions::default(),
            allowed_secrets: &[],
            mtime: 0,
        };
        let discarded = assemble(inputs, Output::Discard).unwrap();
        assert!(discarded.archive().is_none());
        assert_eq!(discarded.digest, digest(root.path(), 0).digest);
    }

    #[test]
    fn a_secret_looking_file_refuses_the_context_unless_allowed() {
        let root = tempfile::tempdir().unwrap();
        tree(root.path(), FILES, 0);
        let without = digest(root.path(), 0).entries;
        std::fs::write(root.path().join("overlays/a/server.pem"), "secret").unwrap();
        let members = [Member {
            at: "overlays/a".to_owned(),
            from: root.path().join("overlays/a"),
        }];
        let assemble_with = |exclusions: &Exclusions, allowed: &[ContextPath]| {
            assemble(
                Inputs {
                    dockerfile: DOCKERFILE_TEXT,
                    members: &members,
                    generated: &[],
                    exclusions,
                    allowed_secrets: allowed,
                    mtime: 0,
                },
                Output::Discard,
            )
        };
        let error = assemble_with(&Exclusions::default(), &[]).unwrap_err();
        assert!(
            matches!(&error, ContextError::Secrets { files } if files == &["overlays/a/server.pem"]),
            "{error:?}"
        );
        let exclusions = Exclusions::parse(Path::new(".dockerignore"), "**/*.pem\n").unwrap();
        assert_eq!(assemble_with(&exclusions, &[]).unwrap().entries, without);
        let allowed: ContextPath = "overlays/a/server.pem".parse().unwrap();
        let allowed_context = assemble_with(&Exclusions::default(), &[allowed]).unwrap();
        assert_eq!(allowed_context.entries, without + 1);
    }
}
