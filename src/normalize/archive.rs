//! The archive `docker load` reads back: the rewritten layers, the config and `manifest.json`,
//! and none of the base's layers. The engine looks each layer up by its chain id before it
//! opens the file the manifest names, so a layer it already holds (every layer of the base)
//! needs no file.
//!
//! A layer is rewritten straight into the archive as the export streams in, its header filled
//! in once its size and digest are known, so forge's layers are written to disk once. Where the
//! export does not name its layers by digest, whether a layer is the base's shows only once it
//! has been read: such a layer, the last one written, is cut off again (`discard`).

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tar::{EntryType, Header};

use super::layer::{self, Hashing, Rewritten};
use crate::types::oci::Digest;

/// A `docker load` archive being written.
pub struct LoadArchive {
    out: BufWriter<std::fs::File>,
    file: tempfile::TempPath,
}

/// A layer written into the archive: where its rewritten bytes are, and what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The archive file.
    pub file: PathBuf,
    /// Where its header starts.
    pub start: u64,
    /// Its path in the archive.
    pub path: String,
    /// The rewritten layer.
    pub rewritten: Rewritten,
}

impl Placed {
    /// A reader of the rewritten layer's bytes.
    pub fn reader(&self) -> io::Result<impl Read + use<>> {
        let mut file = std::fs::File::open(&self.file)?;
        file.seek(SeekFrom::Start(self.start + 512))?;
        Ok(io::BufReader::with_capacity(1 << 20, file).take(self.rewritten.size))
    }
}

impl LoadArchive {
    /// Starts an archive in a temporary file in `folder`.
    pub fn create(folder: &Path) -> io::Result<Self> {
        let file = tempfile::Builder::new()
            .prefix("load-")
            .suffix(".tar")
            .tempfile_in(folder)?;
        let (file, path) = file.into_parts();
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, file),
            file: path,
        })
    }

    /// Rewrites the layer tar `raw` into the archive, its mtimes clamped to `epoch`, and returns
    /// the sha256 of `raw` as read (its diff id as the engine knows it) and where it went.
    pub fn rewrite(&mut self, raw: impl Read, epoch: u64) -> io::Result<(Digest, Placed)> {
        self.out.flush()?;
        let start = self.out.get_mut().stream_position()?;
        self.out.write_all(&[0; 512])?;
        let mut raw = Hashed::new(raw);
        let rewritten = layer::rewrite(&mut raw, &mut self.out, epoch)?;
        // The end of the raw tar (its zero blocks) belongs to its digest too.
        io::copy(&mut raw, &mut io::sink())?;
        layer::pad(&mut self.out, rewritten.size)?;
        self.out.flush()?;
        let end = self.out.get_mut().stream_position()?;
        let path = format!("{}/layer.tar", rewritten.diff_id.hex());
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(start))?;
        file.write_all(file_header(&path, rewritten.size).as_bytes())?;
        file.seek(SeekFrom::Start(end))?;
        let placed = Placed {
            file: self.file.to_path_buf(),
            start,
            path,
            rewritten,
        };
        Ok((raw.finish(), placed))
    }

    /// Cuts `placed`, the last layer written, off the archive again.
    pub fn discard(&mut self, placed: &Placed) -> io::Result<()> {
        self.out.flush()?;
        let file = self.out.get_mut();
        file.set_len(placed.start)?;
        file.seek(SeekFrom::Start(placed.start))?;
        Ok(())
    }

    /// Ends the archive with the config `config` (whose sha256 is the image id `id`) and the
    /// manifest naming `layers` (each layer's path, in the config's order; a layer the engine
    /// holds needs no file), and returns the file.
    pub fn finish(
        mut self,
        config: &[u8],
        id: &Digest,
        layers: &[String],
    ) -> io::Result<tempfile::TempPath> {
        let config_path = format!("{}.json", id.hex());
        let manifest = serde_json::to_vec(&serde_json::json!([{
            "Config": config_path,
            "RepoTags": null,
            "Layers": layers,
        }]))
        .expect("JSON serializes");
        for (path, bytes) in [(config_path.as_str(), config), ("manifest.json", &manifest)] {
            self.out
                .write_all(file_header(path, bytes.len() as u64).as_bytes())?;
            self.out.write_all(bytes)?;
            layer::pad(&mut self.out, bytes.len() as u64)?;
        }
        self.out.write_all(&[0; 1024])?;
        self.out.flush()?;
        Ok(self.file)
    }
}

/// Where a layer the engine holds is named in the archive (no file is there).
pub fn held_path(diff_id: &Digest) -> String {
    format!("{}/layer.tar", diff_id.hex())
}

/// A reader that hashes what it reads.
struct Hashed<R> {
    inner: R,
    hashing: Hashing<io::Sink>,
}

impl<R> Hashed<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            hashing: Hashing::new(io::sink()),
        }
    }

    fn finish(self) -> Digest {
        self.hashing.finish().0
    }
}

impl<R: Read> Read for Hashed<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.hashing.write_all(&buffer[..read])?;
        Ok(read)
    }
}

/// The header of a regular file of the archive.
fn file_header(path: &str, size: u64) -> Header {
    let mut header = Header::new_ustar();
    header.set_entry_type(EntryType::Regular);
    header.set_mode(0o644);
    header.set_size(size);
    header.set_mtime(0);
    header.as_ustar_mut().expect("a ustar header").name[..path.len()]
        .copy_from_slice(path.as_bytes());
    header.set_cksum();
    header
}
