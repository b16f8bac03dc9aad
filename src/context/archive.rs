//! The deterministic tar writer: entries in byte order of their paths, every header normalised,
//! the bytes hashed as they are written so the archive is read once.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::ContextError;
use super::ignore::Exclusions;

/// What an archive entry holds, and where its bytes come from.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// A folder.
    Folder,
    /// A file on disk, and whether any of its execute bits is set.
    File { path: PathBuf, executable: bool },
    /// A symbolic link and its target, as written.
    Symlink { target: PathBuf },
    /// Bytes forge produced itself (the rendered Dockerfile).
    Bytes(Vec<u8>),
}

/// The archive's entries, by their path inside it.
#[derive(Debug, Default)]
pub(super) struct Entries {
    entries: BTreeMap<String, Source>,
}

impl Entries {
    /// Adds `source` at `at`, with a folder entry for each of its parents.
    pub(super) fn insert(&mut self, at: &str, source: Source) {
        let mut parent = String::new();
        let components: Vec<&str> = at.split('/').filter(|part| !part.is_empty()).collect();
        for component in &components[..components.len().saturating_sub(1)] {
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(component);
            self.entries.insert(parent.clone(), Source::Folder);
        }
        self.entries.insert(components.join("/"), source);
    }

    /// Removes the entry at `at` and everything under it.
    pub(super) fn remove_tree(&mut self, at: &str) {
        let at = at.trim_matches('/');
        let prefix = format!("{at}/");
        self.entries
            .retain(|path, _| path != at && !path.starts_with(&prefix));
    }

    /// Adds the file or folder tree at `from` under `at`, leaving out what `exclusions` names.
    /// Folders are read in any order: the map sorts them.
    pub(super) fn insert_tree(
        &mut self,
        at: &str,
        from: &Path,
        exclusions: &Exclusions,
    ) -> Result<(), ContextError> {
        if exclusions.excludes(at) {
            return Ok(());
        }
        let metadata = std::fs::symlink_metadata(from).map_err(|source| ContextError::Read {
            path: from.to_owned(),
            source,
        })?;
        let file_type = metadata.file_type();
        if file_type.is_symlink() {
            let target = std::fs::read_link(from).map_err(|source| ContextError::Read {
                path: from.to_owned(),
                source,
            })?;
            self.insert(at, Source::Symlink { target });
        } else if file_type.is_file() {
            let executable =
                std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o111 != 0;
            self.insert(
                at,
                Source::File {
                    path: from.to_owned(),
                    executable,
                },
            );
        } else if file_type.is_dir() {
            self.insert(at, Source::Folder);
            let children = std::fs::read_dir(from).map_err(|source| ContextError::Read {
                path: from.to_owned(),
                source,
            })?;
            for child in children {
                let child = child.map_err(|source| ContextError::Read {
                    path: from.to_owned(),
                    source,
                })?;
                let name = child.file_name();
                let Some(name) = name.to_str() else {
                    return Err(ContextError::NotUtf8 { path: child.path() });
                };
                self.insert_tree(&format!("{at}/{name}"), &child.path(), exclusions)?;
            }
        } else {
            return Err(ContextError::Unsupported {
                path: from.to_owned(),
            });
        }
        Ok(())
    }

    /// How many entries there are.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Writes the archive to `sink`, returning the sha256 of its bytes and their count.
    pub(super) fn write<W: Write>(
        &self,
        sink: W,
        mtime: u64,
    ) -> Result<(Vec<u8>, u64, W), ContextError> {
        // A large buffer: `io::copy` into a `BufWriter` reads straight into its spare room, so
        // file contents move in 1 MiB reads and hash in 1 MiB updates.
        let hashing = HashingWriter {
            inner: sink,
            hasher: Sha256::new(),
            written: 0,
        };
        let mut builder = tar::Builder::new(BufWriter::with_capacity(1 << 20, hashing));
        for (path, source) in &self.entries {
            append(&mut builder, path, source, mtime)?;
        }
        let buffered = builder.into_inner().map_err(ContextError::Write)?;
        let hashing = buffered
            .into_inner()
            .map_err(|error| ContextError::Write(error.into_error()))?;
        Ok((
            hashing.hasher.finalize().to_vec(),
            hashing.written,
            hashing.inner,
        ))
    }
}

fn append<W: Write>(
    builder: &mut tar::Builder<W>,
    path: &str,
    source: &Source,
    mtime: u64,
) -> Result<(), ContextError> {
    let mut header = tar::Header::new_gnu();
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(mtime);
    header
        .set_username("")
        .and_then(|()| header.set_groupname(""))
        .map_err(ContextError::Write)?;
    match source {
        Source::Folder => {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            builder
                .append_data(&mut header, format!("{path}/"), io::empty())
                .map_err(ContextError::Write)
        }
        Source::Symlink { target } => {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            builder
                .append_link(&mut header, path, target)
                .map_err(ContextError::Write)
        }
        Source::Bytes(bytes) => {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(bytes.len() as u64);
            builder
                .append_data(&mut header, path, bytes.as_slice())
                .map_err(ContextError::Write)
        }
        Source::File {
            path: disk,
            executable,
        } => {
            let read_error = |source| ContextError::Read {
                path: disk.clone(),
                source,
            };
            let file = std::fs::File::open(disk).map_err(read_error)?;
            let size = file.metadata().map_err(read_error)?.len();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if *executable { 0o755 } else { 0o644 });
            header.set_size(size);
            // A file that shrinks while it is read would leave a short entry; refuse instead.
            let mut reader = ExactReader {
                inner: file.take(size),
                remaining: size,
            };
            builder
                .append_data(&mut header, path, &mut reader)
                .map_err(|error| match error.kind() {
                    io::ErrorKind::UnexpectedEof => ContextError::Changed { path: disk.clone() },
                    _ => read_error(error),
                })
        }
    }
}

/// A reader that fails with `UnexpectedEof` when the file ends before its announced size.
struct ExactReader<R> {
    inner: R,
    remaining: u64,
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buffer)?;
        if count == 0 && self.remaining > 0 && !buffer.is_empty() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.remaining -= count as u64;
        Ok(count)
    }
}

/// Passes bytes on to `inner`, hashing and counting them.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let count = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..count]);
        self.written += count as u64;
        Ok(count)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
