//! The recipe's files: writes that never leave a half-written file behind, and reads that stay
//! inside the recipe folder and refuse special files (FIFOs, sockets, devices) before opening
//! them.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether a folder entry is a `.git` (a repository's own folder, or a worktree's `.git` file):
/// what a checkout holds beside its tracked files.
pub fn is_git_entry(name: &std::ffi::OsStr) -> bool {
    name == ".git"
}

/// Whether `write_if_changed` touched the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The file held other bytes (or did not exist) and now holds the new ones.
    Changed,
    /// The file already held exactly these bytes; it was not rewritten.
    Unchanged,
}

/// `folder/name`, without a leading `./` when the folder is the current one, so that paths in
/// messages read as the user would type them.
pub fn in_folder(folder: &Path, name: &str) -> PathBuf {
    if folder == Path::new(".") {
        PathBuf::from(name)
    } else {
        folder.join(name)
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader sees the old content or the new, never a mix; a file that already holds `bytes` is
/// left alone (its mtime too).
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<Written> {
    if std::fs::read(path).is_ok_and(|current| current == bytes) {
        return Ok(Written::Unchanged);
    }
    stage(path, bytes)?
        .persist(path)
        .map_err(|error| error.error)?;
    Ok(Written::Changed)
}

/// Where a path the user names for output (`--out`, `--context-out`) leads, and how it is
/// written: atomic replacement is for regular files; a device or a FIFO (`/dev/null`,
/// `/dev/stdout` on a terminal or a pipe) is written through, never renamed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A regular file, or nothing yet: written through a temporary file and a rename. A
    /// symbolic link is followed, so the link stays and the file it names is replaced.
    File(PathBuf),
    /// A character device or a FIFO: opened and written in place.
    Through(PathBuf),
}

impl Destination {
    /// Where `path` leads; a folder, a socket or a block device is refused by name.
    pub fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::FileTypeExt as _;
        let refuse = |what: &str| {
            std::io::Error::other(format!(
                "{} is {what}: forge writes output only to a regular file, a character device or a FIFO",
                path.display()
            ))
        };
        // Every link followed; a path that does not exist (yet) is a new regular file, and a
        // link to nothing yet makes the file it names (the link stays).
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let dangling = std::fs::symlink_metadata(path)
                    .is_ok_and(|metadata| metadata.file_type().is_symlink());
                return Ok(Destination::File(if dangling {
                    resolve(path)?
                } else {
                    path.to_owned()
                }));
            }
            Err(error) => return Err(error),
        };
        let kind = metadata.file_type();
        if kind.is_char_device() || kind.is_fifo() {
            return Ok(Destination::Through(path.to_owned()));
        }
        if kind.is_dir() {
            return Err(refuse("a folder"));
        }
        if !kind.is_file() {
            return Err(refuse(if kind.is_socket() {
                "a socket"
            } else {
                "a block device"
            }));
        }
        let is_link = std::fs::symlink_metadata(path)?.file_type().is_symlink();
        Ok(Destination::File(if is_link {
            std::fs::canonicalize(path)?
        } else {
            path.to_owned()
        }))
    }
}

/// `write_if_changed` for a path the user names for output: through a device or FIFO, into
/// the regular file a link names, refusing anything else (see `Destination`).
pub fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<Written> {
    match Destination::of(path)? {
        Destination::File(file) => write_if_changed(&file, bytes),
        Destination::Through(special) => {
            std::fs::OpenOptions::new()
                .write(true)
                .open(special)?
                .write_all(bytes)?;
            Ok(Written::Changed)
        }
    }
}

/// `bytes` in a temporary file next to `path`, on disk and with the mode `path` has (else
/// 0644), ready to be renamed over it.
fn stage(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary = tempfile::Builder::new()
        .prefix(".forge-")
        .suffix(".tmp")
        .tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    // A temporary file is created 0600; give the result the mode the old file had, else 0644.
    let permissions = match std::fs::metadata(path) {
        Ok(metadata) => metadata.permissions(),
        Err(_) => std::os::unix::fs::PermissionsExt::from_mode(0o644),
    };
    temporary.as_file().set_permissions(permissions)?;
    temporary.as_file().sync_all()?;
    Ok(temporary)
}

/// A special file: neither a regular file, a folder nor a symbolic link. Reading one can block
/// for ever (a FIFO) or never end (`/dev/zero`), so forge refuses it before opening it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A block device.
    BlockDevice,
    /// A character device.
    CharacterDevice,
}

impl Special {
    /// The kind of special file `file_type` is, if it is one.
    pub fn of(file_type: std::fs::FileType) -> Option<Self> {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            Some(Special::Fifo)
        } else if file_type.is_socket() {
            Some(Special::Socket)
        } else if file_type.is_block_device() {
            Some(Special::BlockDevice)
        } else if file_type.is_char_device() {
            Some(Special::CharacterDevice)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Special {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Special::Fifo => "FIFO (a named pipe)",
            Special::Socket => "socket",
            Special::BlockDevice => "block device",
            Special::CharacterDevice => "character device",
        })
    }
}

/// Why a recipe path was refused or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// Following its symbolic links leads out of the recipe folder.
    #[error(
        "{} leads to {}{}, outside the recipe folder {}",
        path.display(),
        target.display(),
        special.map(|kind| format!(" (a {kind})")).unwrap_or_default(),
        root.display()
    )]
    Outside {
        /// The path as forge was asked to read it.
        path: PathBuf,
        /// Where its links lead.
        target: PathBuf,
        /// The recipe folder, its links followed.
        root: PathBuf,
        /// What the target is, when it is a special file.
        special: Option<Special>,
    },
    /// It is a special file.
    #[error("{} is a {kind}", path.display())]
    Special {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: Special,
    },
    /// It could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl crate::diagnostics::Advise for PathError {
    fn advice(&self) -> crate::diagnostics::Advice {
        crate::diagnostics::Advice::Hint(match self {
            PathError::Outside { .. } => "forge reads only what lies inside the recipe folder: copy the file or folder in rather than linking to it".to_owned(),
            PathError::Special { .. } => "a recipe holds files, folders and symbolic links only: remove it (forge refused it without reading it)".to_owned(),
            PathError::Read { .. } => "check that the path exists and is readable".to_owned(),
        })
    }
}
crate::advised!(PathError);

impl PathError {
    fn read(path: &Path) -> impl FnOnce(std::io::Error) -> PathError + '_ {
        move |source| PathError::Read {
            path: path.to_owned(),
            source,
        }
    }
}

/// Where `path` leads once every symbolic link on it is followed, as the kernel follows them
/// (a `..` after a link leaves the link's target). The part of a path that does not exist is
/// taken as written, so a dangling link still says where it points.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    /// As the kernel's limit on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    let start = std::path::absolute(path)?;
    let mut pending: Vec<std::ffi::OsString> = start
        .components()
        .rev()
        .map(|component| component.as_os_str().to_owned())
        .collect();
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    let mut missing = false;
    while let Some(component) = pending.pop() {
        match component.to_str() {
            Some("/" | ".") => continue,
            Some("..") => {
                resolved.pop();
                continue;
            }
            _ => {}
        }
        let next = resolved.join(&component);
        if missing {
            resolved = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                pending.extend(
                    target
                        .components()
                        .rev()
                        .map(|component| component.as_os_str().to_owned()),
                );
            }
            Ok(_) => resolved = next,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                missing = true;
                resolved = next;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(resolved)
}

/// A folder whose paths must stay inside it: the recipe folder.
#[derive(Debug, Clone)]
pub struct Confined {
    /// The folder, its links followed.
    root: PathBuf,
}

impl Confined {
    /// The folder `root`.
    pub fn new(root: &Path) -> Result<Self, PathError> {
        let resolved = resolve(root).map_err(PathError::read(root))?;
        Ok(Self { root: resolved })
    }

    /// Where `path` leads, refused when that is outside the folder. `path` is as the caller
    /// holds it (the folder as given, joined with a path inside it); the target need not exist.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, PathError> {
        let target = resolve(path).map_err(PathError::read(path))?;
        if target.starts_with(&self.root) {
            return Ok(target);
        }
        let special = std::fs::metadata(&target)
            .ok()
            .and_then(|metadata| Special::of(metadata.file_type()));
        Err(PathError::Outside {
            path: path.to_owned(),
            target,
            root: self.root.clone(),
            special,
        })
    }

    /// The bytes of the regular file at `path`, which must resolve inside the folder.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, PathError> {
        let target = self.resolve(path)?;
        let mut file = open_regular(&target).map_err(|error| error.at(path))?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).map_err(PathError::read(path))?;
        Ok(bytes)
    }

    /// The text of the regular file at `path`, which must resolve inside the folder.
    pub fn read_to_string(&self, path: &Path) -> Result<String, PathError> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|_| PathError::Read {
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"),
        })
    }
}

impl PathError {
    /// The same error, naming `path` instead.
    fn at(self, path: &Path) -> Self {
        match self {
            PathError::Special { kind, .. } => PathError::Special {
                path: path.to_owned(),
                kind,
            },
            PathError::Read { source, .. } => PathError::Read {
                path: path.to_owned(),
                source,
            },
            outside @ PathError::Outside { .. } => outside,
        }
    }
}

/// The text of `path`, `None` when there is no such file; any other failure is the caller's to
/// name.
pub fn read_optional(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Removes the file at `path`; one already gone is fine.
pub fn remove_optional(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// The most bytes one of forge's own state files (forge.lock, a publication's or an apply's
/// intent) may hold: 16 MiB, hundreds of times what forge writes there.
pub const STATE_FILE_LIMIT: u64 = 16 * 1024 * 1024;

/// The text of forge's own state file at `path`, `None` when there is none: a regular file (a
/// FIFO, a device or a link to one is refused without being read, so that nothing blocks or
/// reads without end) of at most `STATE_FILE_LIMIT` bytes of UTF-8. A refusal is an I/O error
/// of kind `InvalidData` saying why.
pub fn read_state(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read as _;
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(PathError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(PathError::Special { kind, .. }) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("it is a {kind}, not a file forge wrote"),
            ));
        }
        Err(PathError::Read { source, .. }) => return Err(source),
        Err(other) => return Err(std::io::Error::other(other.to_string())),
    };
    let mut bytes = Vec::new();
    file.take(STATE_FILE_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > STATE_FILE_LIMIT {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it holds more than {} MiB, more than forge ever writes there",
                STATE_FILE_LIMIT >> 20
            ),
        ));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// Opens `path` for reading when it is (or its links lead to) a regular file, refusing a
/// special file without reading it: its type is looked at before it is opened, and again on
/// the open file (opened without blocking, as a FIFO would), in case it was swapped meanwhile.
pub fn open_regular(path: &Path) -> Result<std::fs::File, PathError> {
    let refuse = |file_type: std::fs::FileType| match Special::of(file_type) {
        Some(kind) => Err(PathError::Special {
            path: path.to_owned(),
            kind,
        }),
        None => Ok(()),
    };
    refuse(
        std::fs::metadata(path)
            .map_err(PathError::read(path))?
            .file_type(),
    )?;
    let file = std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::File::options().read(true),
        libc::O_NONBLOCK,
    )
    .open(path)
    .map_err(PathError::read(path))?;
    refuse(file.metadata().map_err(PathError::read(path))?.file_type())?;
    Ok(file)
}

/// Writes several files so that they change together: every new content goes to a temporary
/// file next to its target first, then each is renamed into place; when a rename fails, the
/// files already replaced get their old bytes back (a file that did not exist is removed), so
/// the set is left all old or all new. Files that already hold their bytes are not touched.
pub fn write_together(files: &[(&Path, &[u8])]) -> std::io::Result<Vec<Written>> {
    let mut staged = Vec::new();
    for (path, bytes) in files {
        let old = std::fs::read(path).ok();
        if old.as_deref() == Some(*bytes) {
            staged.push((*path, old, None));
            continue;
        }
        let temporary = stage(path, bytes)?;
        staged.push((*path, old, Some(temporary)));
    }
    let mut replaced: Vec<(&Path, Option<Vec<u8>>)> = Vec::new();
    let mut written = Vec::new();
    for (path, old, temporary) in staged {
        let Some(temporary) = temporary else {
            written.push(Written::Unchanged);
            continue;
        };
        if let Err(error) = temporary.persist(path) {
            for (path, old) in replaced.into_iter().rev() {
                // Best effort: the error that stopped the write is the one to report.
                let _ = match old {
                    Some(old) => write_if_changed(path, &old).map(drop),
                    None => std::fs::remove_file(path),
                };
            }
            return Err(error.error);
        }
        replaced.push((path, old));
        written.push(Written::Changed);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_file_that_is_not_there_is_none_and_removed_already() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("state");
        assert_eq!(read_optional(&path).unwrap(), None);
        remove_optional(&path).unwrap();
        std::fs::write(&path, "held").unwrap();
        assert_eq!(read_optional(&path).unwrap().as_deref(), Some("held"));
        remove_optional(&path).unwrap();
        assert!(!path.exists());
        // Anything but absence is the caller's to name.
        std::fs::create_dir(&path).unwrap();
        assert!(read_optional(&path).is_err());
        assert!(remove_optional(&path).is_err());
    }

    #[test]
    fn links_are_followed_as_the_kernel_follows_them() {
        let folder = tempfile::tempdir().unwrap();
        let root = resolve(folder.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        symlink("a/b", root.join("link")).unwrap();
        symlink("/nonexistent/x", root.join("dangling")).unwrap();
        assert_eq!(resolve(&root.join("link")).unwrap(), root.join("a/b"));
        // `..` leaves the link's target, not the link.
        assert_eq!(resolve(&root.join("link/..")).unwrap(), root.join("a"));
        assert_eq!(
            resolve(&root.join("dangling/y")).unwrap(),
            PathBuf::from("/nonexistent/x/y")
        );
        symlink("loop", root.join("loop")).unwrap();
        assert!(resolve(&root.join("loop")).is_err());

        let confined = Confined::new(&root).unwrap();
        assert!(confined.resolve(&root.join("link/c")).is_ok());
        let error = confined.resolve(&root.join("dangling")).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("leads to /nonexistent/x, outside"),
            "{error}"
        );
        symlink("/dev/null", root.join("null")).unwrap();
        let error = confined.read(&root.join("null")).unwrap_err();
        assert!(
            error.to_string().contains("(a character device)"),
            "{error}"
        );
    }

    #[test]
    fn a_relative_folder_reads_the_paths_joined_to_it() {
        // The crate's own folder, as `-C src` names it from the crate root.
        let confined = Confined::new(Path::new("src")).unwrap();
        let text = confined
            .read_to_string(&Path::new("src").join("fs.rs"))
            .unwrap();
        assert!(text.starts_with("//!"));
        let error = confined
            .read(&Path::new("src").join("../Cargo.toml"))
            .unwrap_err();
        assert!(matches!(error, PathError::Outside { .. }), "{error}");
    }

    #[test]
    fn special_files_are_refused_without_being_read() {
        let folder = tempfile::tempdir().unwrap();
        let socket = folder.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let error = open_regular(&socket).unwrap_err();
        assert!(
            matches!(
                error,
                PathError::Special {
                    kind: Special::Socket,
                    ..
                }
            ),
            "{error}"
        );
        let error = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                error,
                PathError::Special {
                    kind: Special::CharacterDevice,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn files_written_together_are_left_all_old_when_one_cannot_be_written() {
        let folder = tempfile::tempdir().unwrap();
        let first = folder.path().join("first.txt");
        std::fs::write(&first, "old\n").unwrap();
        // A folder where the second file should go: its rename fails after the first's.
        let second = folder.path().join("second.txt");
        std::fs::create_dir(&second).unwrap();
        std::fs::write(second.join("keep"), "x").unwrap();
        let result = write_together(&[(&first, b"new\n"), (&second, b"new\n")]);
        assert!(result.is_err());
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "old\n");

        let third = folder.path().join("third.txt");
        let written = write_together(&[(&first, b"new\n"), (&third, b"3\n")]).unwrap();
        assert_eq!(written, [Written::Changed, Written::Changed]);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "new\n");
        assert_eq!(std::fs::read_to_string(&third).unwrap(), "3\n");
    }
}
