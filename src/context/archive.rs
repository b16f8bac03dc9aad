//! The deterministic tar writer: entries in byte order of their paths, every header normalised,
//! the bytes hashed as they are written so the archive is read once. Reading the files and
//! hashing (and storing) the archive run on two threads, as `tar -c | openssl dgst` runs in
//! two processes: hashing is the slower half, and it need not wait for the reads.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};

use sha2::{Digest as _, Sha256};

use super::ContextError;
use super::ignore::{Exclusions, Matched, Verdict};
use crate::fs::{PathError, Special};

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

    /// Adds the member at `from` under `at` as the docker CLI would send it: its own path
    /// followed (`COPY` follows a link it names), then walked with `exclusions` deciding, from
    /// the folders above it down, what goes in. Links inside it go in as links. A special file
    /// that would go in is refused before anything reads it.
    pub(super) fn insert_member(
        &mut self,
        at: &str,
        from: &Path,
        exclusions: &Exclusions,
    ) -> Result<(), ContextError> {
        let Some(parent) = exclusions.above(at) else {
            return Ok(());
        };
        let metadata = std::fs::metadata(from).map_err(|source| ContextError::Read {
            path: from.to_owned(),
            source,
        })?;
        self.insert_walked(at, from, &metadata, exclusions, &parent)
    }

    /// Adds `from` at `at` if the walk sends it, and what it holds, decided one by one.
    fn insert_walked(
        &mut self,
        at: &str,
        from: &Path,
        metadata: &std::fs::Metadata,
        exclusions: &Exclusions,
        parent: &Matched,
    ) -> Result<(), ContextError> {
        let file_type = metadata.file_type();
        let (verdict, matched) = exclusions.decide(at, file_type.is_dir(), parent);
        if verdict == Verdict::Skipped {
            return Ok(());
        }
        if let Some(kind) = Special::of(file_type) {
            return Err(PathError::Special {
                path: from.to_owned(),
                kind,
            }
            .into());
        }
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
        } else {
            if verdict == Verdict::Sent {
                self.insert(at, Source::Folder);
            }
            let read_error = |source| ContextError::Read {
                path: from.to_owned(),
                source,
            };
            for child in std::fs::read_dir(from).map_err(read_error)? {
                let child = child.map_err(read_error)?;
                let name = child.file_name();
                let Some(name) = name.to_str() else {
                    return Err(ContextError::NotUtf8 { path: child.path() });
                };
                let path = child.path();
                let metadata =
                    std::fs::symlink_metadata(&path).map_err(|source| ContextError::Read {
                        path: path.clone(),
                        source,
                    })?;
                self.insert_walked(
                    &format!("{at}/{name}"),
                    &path,
                    &metadata,
                    exclusions,
                    &matched,
                )?;
            }
        }
        Ok(())
    }

    /// The paths of the regular files it holds.
    pub(super) fn files(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter_map(|(path, source)| match source {
                Source::File { .. } => Some(path.as_str()),
                _ => None,
            })
    }

    /// How many entries there are.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Writes the archive to `sink`, returning the sha256 of its bytes and their count.
    pub(super) fn write<W: Write + Send>(
        &self,
        sink: W,
        mtime: u64,
    ) -> Result<(Vec<u8>, u64, W), ContextError> {
        std::thread::scope(|scope| {
            let (full, filled) = sync_channel(CHUNKS_IN_FLIGHT);
            let (spare, spares) = channel();
            let hashing = scope.spawn(move || hash_and_store(filled, spare, sink));
            // A large buffer: `io::copy` into a `BufWriter` reads straight into its spare room,
            // so file contents move in 1 MiB reads and 1 MiB chunks.
            let chunks = Chunks { full, spares };
            let mut builder = tar::Builder::new(BufWriter::with_capacity(CHUNK, chunks));
            let appended = self
                .entries
                .iter()
                .try_for_each(|(path, source)| append(&mut builder, path, source, mtime));
            // Finishing the archive and dropping the last sender ends the hashing thread, which
            // must happen on failure too before it is waited for.
            let archived = match appended {
                Ok(()) => builder
                    .into_inner()
                    .map_err(ContextError::Write)
                    .and_then(|buffered| {
                        buffered
                            .into_inner()
                            .map(drop)
                            .map_err(|error| ContextError::Write(error.into_error()))
                    }),
                Err(error) => {
                    drop(builder);
                    Err(error)
                }
            };
            let stored = hashing.join().expect("the hashing thread does not panic");
            match (archived, stored) {
                (Ok(()), Ok(result)) => Ok(result),
                // When storing failed, that is why the chunks stopped flowing.
                (_, Err(error)) => Err(ContextError::Write(error)),
                (Err(error), Ok(_)) => Err(error),
            }
        })
    }
}

/// The size of the chunks handed from the reading thread to the hashing one.
const CHUNK: usize = 1 << 20;

/// How many chunks may wait for the hashing thread: enough to ride out a slow read, little
/// enough that a 1 GiB context is never held in memory.
const CHUNKS_IN_FLIGHT: usize = 4;

/// The reading thread's end: hands each chunk written to the hashing thread, reusing the
/// buffers it has finished with.
struct Chunks {
    full: SyncSender<Vec<u8>>,
    spares: Receiver<Vec<u8>>,
}

impl Write for Chunks {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let mut chunk = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        chunk.clear();
        chunk.extend_from_slice(buffer);
        if self.full.send(chunk).is_err() {
            return Err(io::Error::other("the archive's hashing thread stopped"));
        }
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The hashing thread: hashes each chunk, writes it to `sink`, and hands the buffer back.
fn hash_and_store<W: Write>(
    filled: Receiver<Vec<u8>>,
    spare: std::sync::mpsc::Sender<Vec<u8>>,
    mut sink: W,
) -> io::Result<(Vec<u8>, u64, W)> {
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    for chunk in filled {
        hasher.update(&chunk);
        sink.write_all(&chunk)?;
        written += chunk.len() as u64;
        // The reading thread may have finished; then the buffer is simply dropped.
        let _ = spare.send(chunk);
    }
    sink.flush()?;
    Ok((hasher.finalize().to_vec(), written, sink))
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
            // Opened without blocking, and refused unless it is still a regular file.
            let file = crate::fs::open_regular(disk).map_err(|error| match error {
                PathError::Read { source, .. } => read_error(source),
                other => other.into(),
            })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that do not repeat within a chunk, so a chunk sent twice or dropped shows.
    fn counting(size: usize) -> Vec<u8> {
        (0..size)
            .map(|index| (index / 251 + index % 251) as u8)
            .collect()
    }

    #[test]
    fn an_archive_of_many_chunks_hashes_as_the_bytes_it_wrote() {
        let folder = tempfile::tempdir().unwrap();
        let big = folder.path().join("big.bin");
        // More chunks than may wait at once, so that buffers are handed back and reused.
        let content = counting((CHUNKS_IN_FLIGHT + 5) * CHUNK + CHUNK / 2 + 7);
        std::fs::write(&big, &content).unwrap();
        let mut entries = Entries::default();
        entries.insert(
            "big.bin",
            Source::File {
                path: big,
                executable: false,
            },
        );
        entries.insert("Dockerfile", Source::Bytes(b"FROM scratch\n".to_vec()));

        let (hash, size, written) = entries.write(Vec::new(), 0).unwrap();
        assert_eq!(size, written.len() as u64);
        assert_eq!(hash, Sha256::digest(&written).to_vec());
        let mut archive = tar::Archive::new(written.as_slice());
        let read: Vec<(String, Vec<u8>)> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let name = entry.path().unwrap().display().to_string();
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                (name, bytes)
            })
            .collect();
        assert_eq!(read.len(), 2);
        assert_eq!(
            read[0],
            ("Dockerfile".to_owned(), b"FROM scratch\n".to_vec())
        );
        assert_eq!(read[1].0, "big.bin");
        assert!(read[1].1 == content, "big.bin came back changed");
    }

    /// A sink that takes `room` bytes, then fails as a full disk does.
    #[derive(Debug)]
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::from_raw_os_error(28));
            }
            let count = buffer.len().min(self.room);
            self.room -= count;
            Ok(count)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_sink_stops_the_archive_with_its_own_error() {
        let folder = tempfile::tempdir().unwrap();
        let big = folder.path().join("big.bin");
        std::fs::write(&big, counting(8 * CHUNK)).unwrap();
        let mut entries = Entries::default();
        entries.insert(
            "big.bin",
            Source::File {
                path: big,
                executable: false,
            },
        );
        let error = entries.write(Full { room: CHUNK }, 0).unwrap_err();
        assert!(
            matches!(&error, ContextError::Write(cause) if cause.raw_os_error() == Some(28)),
            "{error:?}"
        );
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named_and_the_archive_stops() {
        let folder = tempfile::tempdir().unwrap();
        let missing = folder.path().join("gone.bin");
        let mut entries = Entries::default();
        entries.insert("a.txt", Source::Bytes(counting(2 * CHUNK)));
        entries.insert(
            "gone.bin",
            Source::File {
                path: missing.clone(),
                executable: false,
            },
        );
        let error = entries.write(io::sink(), 0).unwrap_err();
        assert!(
            matches!(&error, ContextError::Read { path, .. } if *path == missing),
            "{error:?}"
        );
    }
}
