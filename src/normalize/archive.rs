//! The archive `docker load` reads back: the rewritten layers, the config and `manifest.json`,
//! and none of the base's layers. The engine looks each layer up by its chain id before it
//! opens the file the manifest names, so a layer it already holds (every layer of the base)
//! needs no file. Each rewritten layer is written straight into the archive, its header filled
//! in once its size and digest are known, so forge's layers are written to disk once.

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use tar::{EntryType, Header};

use super::layer::{self, Rewritten};
use crate::types::oci::Digest;

/// A `docker load` archive being written.
pub struct LoadArchive {
    out: BufWriter<std::fs::File>,
    file: tempfile::TempPath,
    /// Each layer's path in the archive, in the config's order.
    layers: Vec<String>,
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
            layers: Vec::new(),
        })
    }

    /// Lists a layer the engine already holds, without its bytes.
    pub fn held(&mut self, diff_id: &Digest) {
        self.layers.push(layer_path(diff_id));
    }

    /// Rewrites the layer tar `raw` into the archive, its mtimes clamped to `epoch`.
    pub fn rewrite(&mut self, raw: impl Read, epoch: u64) -> io::Result<Rewritten> {
        self.out.flush()?;
        let start = self.out.get_mut().stream_position()?;
        self.out.write_all(&[0; 512])?;
        let rewritten = layer::rewrite(raw, &mut self.out, epoch)?;
        pad(&mut self.out, rewritten.size)?;
        self.out.flush()?;
        let end = self.out.get_mut().stream_position()?;
        let path = layer_path(&rewritten.diff_id);
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(start))?;
        file.write_all(file_header(&path, rewritten.size).as_bytes())?;
        file.seek(SeekFrom::Start(end))?;
        self.layers.push(path);
        Ok(rewritten)
    }

    /// Ends the archive with the config `config` (whose sha256 is the image id) and the
    /// manifest, and returns the file.
    pub fn finish(mut self, config: &[u8], id: &Digest) -> io::Result<tempfile::TempPath> {
        let config_path = format!("{}.json", id.hex());
        let manifest = serde_json::to_vec(&serde_json::json!([{
            "Config": config_path,
            "RepoTags": null,
            "Layers": self.layers,
        }]))
        .expect("JSON serializes");
        for (path, bytes) in [(config_path.as_str(), config), ("manifest.json", &manifest)] {
            self.out
                .write_all(file_header(path, bytes.len() as u64).as_bytes())?;
            self.out.write_all(bytes)?;
            pad(&mut self.out, bytes.len() as u64)?;
        }
        self.out.write_all(&[0; 1024])?;
        self.out.flush()?;
        self.out.get_ref().sync_data()?;
        Ok(self.file)
    }
}

/// Where a layer sits in the archive: `HEX/layer.tar`, as `docker save` lays it out.
fn layer_path(diff_id: &Digest) -> String {
    format!("{}/layer.tar", diff_id.hex())
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

/// Pads `size` bytes of data to the next 512-byte block.
fn pad(out: &mut impl Write, size: u64) -> io::Result<()> {
    let rest = (512 - size % 512) % 512;
    out.write_all(&[0; 512][..rest as usize])
}
