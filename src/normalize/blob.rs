//! A layer's blob: read through whatever compression the daemon used, written again compressed
//! one way.
//!
//! forge compresses every layer it writes with gzip at level 6, no name, no time and the
//! "unknown" system in the header (flate2 over miniz_oxide): the same tar gives the same blob
//! wherever forge runs. A change of compressor or level changes every digest, and bumps
//! `FORMAT`.

use std::collections::HashSet;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::layer::{self, Hashing, Index};
use super::manifest::{DOCKER_LAYER, Descriptor};
use crate::conduit::Stored;
use crate::types::oci::Digest;

/// The gzip level forge writes layers at.
const LEVEL: u32 = 6;

/// A layer forge wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The tar's sha256: its diff id.
    pub diff_id: Digest,
    /// The tar's size.
    pub size: u64,
    /// The blob: its digest and size, as a manifest names it.
    pub descriptor: Descriptor,
    /// The file that holds the blob.
    pub stored: Stored,
}

/// The tar inside the blob `stored`, which `descriptor` says how it is compressed.
pub fn open(stored: &Stored, descriptor: &Descriptor) -> io::Result<Box<dyn Read>> {
    let file = BufReader::with_capacity(1 << 20, std::fs::File::open(&stored.path)?);
    if descriptor.is_plain_tar() {
        return Ok(Box::new(file));
    }
    if descriptor.is_gzip() || descriptor.media_type.is_empty() {
        return Ok(Box::new(flate2::read::MultiGzDecoder::new(file)));
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "its media type {} is a compression forge does not read (it reads gzip and plain tar layers)",
            descriptor.media_type
        ),
    ))
}

/// The index of the layer in `stored`.
pub fn index(stored: &Stored, descriptor: &Descriptor) -> io::Result<Index> {
    layer::index(open(stored, descriptor)?)
}

/// Rewrites the layer in `stored` (see `layer::rewrite`) into a blob of forge's in `spool`.
pub fn rewrite(
    stored: &Stored,
    descriptor: &Descriptor,
    (epoch, drop): (u64, &HashSet<Vec<u8>>),
    spool: &Path,
) -> io::Result<Written> {
    let input = open(stored, descriptor)?;
    let mut file = tempfile::Builder::new()
        .prefix("layer-")
        .tempfile_in(spool)?;
    let compressed = Hashing::new(BufWriter::with_capacity(1 << 20, file.as_file_mut()));
    let mut encoder = flate2::GzBuilder::new()
        .operating_system(255)
        .write(compressed, flate2::Compression::new(LEVEL));
    let rewritten = layer::rewrite(input, &mut encoder, epoch, drop)?;
    let mut compressed = encoder.finish()?;
    compressed.flush()?;
    let (digest, size) = compressed.finish();
    let path = spool.join(format!("forge-{}", digest.hex()));
    file.persist(&path).map_err(|error| error.error)?;
    Ok(Written {
        diff_id: rewritten.diff_id,
        size: rewritten.size,
        descriptor: Descriptor {
            media_type: DOCKER_LAYER.to_owned(),
            size,
            digest,
        },
        stored: Stored { path, size },
    })
}

/// Compresses `tar` as forge compresses a layer: the blob's bytes.
#[cfg(test)]
pub fn compress(tar: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::GzBuilder::new()
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::new(LEVEL));
    encoder.write_all(tar).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_tar_gives_the_same_blob_with_no_name_and_no_time() {
        let tar = vec![7_u8; 4096];
        let blob = compress(&tar);
        assert_eq!(blob, compress(&tar));
        // The gzip header: no name flag, no modification time, the "unknown" system.
        assert_eq!(&blob[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
    }
}
