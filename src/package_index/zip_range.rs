//! A wheel's METADATA read out of the wheel itself, for indexes that offer no PEP 658 metadata
//! file: three HTTP range requests instead of the whole file (wheels of tens of MB): the file's
//! last bytes (the end of central directory record, and the zip64 one where the archive has
//! it), the central directory, then the METADATA entry alone, inflated here. A server that
//! answers the first range request with the whole file (it does not serve ranges) has sent
//! everything: the same records are read from that body instead. A wheel already on disk (a
//! download being hashed) is read the same way, from the file.

use std::io::Read;

use super::IndexError;

/// The end of central directory record is 22 bytes plus a comment of at most 65535; a zip64
/// archive puts its locator (20 bytes) just before it.
const TAIL: u64 = 22 + 65_535 + 20;

/// How a request for a URL is made (the index client's, with its credentials).
pub type Get<'a> = dyn Fn(&str) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> + 'a;

/// The largest METADATA forge inflates.
const METADATA_LIMIT: u64 = 16 * 1024 * 1024;

/// The largest wheel forge reads whole from a server that does not serve ranges.
const WHOLE_FILE_LIMIT: u64 = 2 * 1024 * 1024 * 1024;

/// Where the bytes of the wheel come from.
enum Wheel<'a> {
    /// Range requests, the file being `total` bytes; `tail` holds its last bytes.
    Ranges {
        agent: &'a Get<'a>,
        url: &'a str,
        total: u64,
        tail: Vec<u8>,
    },
    /// The whole file, from a server that does not serve ranges.
    Whole(Vec<u8>),
    /// A file on disk of `total` bytes; `tail` holds its last bytes.
    File {
        file: &'a std::fs::File,
        url: &'a str,
        total: u64,
        tail: Vec<u8>,
    },
}

impl Wheel<'_> {
    fn total(&self) -> u64 {
        match self {
            Wheel::Ranges { total, .. } | Wheel::File { total, .. } => *total,
            Wheel::Whole(bytes) => bytes.len() as u64,
        }
    }

    /// The file's last bytes, as fetched first.
    fn tail(&self) -> &[u8] {
        match self {
            Wheel::Ranges { tail, .. } | Wheel::File { tail, .. } => tail,
            Wheel::Whole(bytes) => {
                let from = bytes
                    .len()
                    .saturating_sub(usize::try_from(TAIL).unwrap_or(0));
                &bytes[from..]
            }
        }
    }

    /// Bytes `from..=last` (cut at the end of the file), from the tail when it holds them.
    fn read(&self, from: u64, last: u64) -> Result<Vec<u8>, IndexError> {
        let last = last.min(self.total().saturating_sub(1));
        match self {
            Wheel::Whole(bytes) => Ok(slice(bytes, from, last)),
            Wheel::File { file, url, .. } => {
                read_at(file, from, last).map_err(|error| IndexError::Invalid {
                    url: (*url).to_owned(),
                    message: format!("cannot read the downloaded file: {error}"),
                })
            }
            Wheel::Ranges {
                agent,
                url,
                total,
                tail,
            } => {
                let tail_start = total - tail.len() as u64;
                if from >= tail_start {
                    return Ok(slice(tail, from - tail_start, last - tail_start));
                }
                match range(agent, url, &format!("bytes={from}-{last}"))? {
                    Answer::Range(body, _) => Ok(body),
                    Answer::Whole(body) => Ok(slice(&body, from, last)),
                }
            }
        }
    }
}

fn slice(bytes: &[u8], from: u64, last: u64) -> Vec<u8> {
    let from = usize::try_from(from).unwrap_or(usize::MAX).min(bytes.len());
    let end = usize::try_from(last.saturating_add(1))
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    bytes.get(from..end).unwrap_or_default().to_vec()
}

/// The `*.dist-info/METADATA` of the wheel at `url`, read by range requests, or out of the
/// whole file when the server does not serve ranges.
pub fn metadata(agent: &Get<'_>, url: &str) -> Result<String, IndexError> {
    let wheel = match range(agent, url, &format!("bytes=-{TAIL}"))? {
        Answer::Range(tail, total) => Wheel::Ranges {
            agent,
            url,
            total,
            tail,
        },
        Answer::Whole(bytes) => Wheel::Whole(bytes),
    };
    Ok(metadata_of(&wheel, url)?.metadata)
}

/// What a wheel says of itself: its `.dist-info` folder and the METADATA in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistInfo {
    /// The folder's name, `NAME-VERSION.dist-info`.
    pub folder: String,
    /// The METADATA text.
    pub metadata: String,
}

/// The dist-info of the wheel in `file`, downloaded from `url` (named in errors): an error
/// says why the file is not a wheel.
pub fn dist_info_in_file(file: &std::fs::File, url: &str) -> Result<DistInfo, IndexError> {
    let io = |error: std::io::Error| IndexError::Invalid {
        url: url.to_owned(),
        message: format!("cannot read the downloaded file: {error}"),
    };
    let total = file.metadata().map_err(io)?.len();
    let tail = read_at(file, total.saturating_sub(TAIL), total.saturating_sub(1)).map_err(io)?;
    let wheel = Wheel::File {
        file,
        url,
        total,
        tail,
    };
    metadata_of(&wheel, url)
}

/// Bytes `from..=last` of `file` (none when `from` is past `last`).
fn read_at(file: &std::fs::File, from: u64, last: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt as _;
    let length = last.saturating_add(1).saturating_sub(from);
    let mut bytes = vec![0; usize::try_from(length).unwrap_or(usize::MAX)];
    let mut filled = 0;
    while filled < bytes.len() {
        match file.read_at(&mut bytes[filled..], from + filled as u64)? {
            0 => break,
            read => filled += read,
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// The dist-info of `wheel`, from its central directory and its METADATA entry.
fn metadata_of(wheel: &Wheel<'_>, url: &str) -> Result<DistInfo, IndexError> {
    let invalid = |message: &str| IndexError::Invalid {
        url: url.to_owned(),
        message: message.to_owned(),
    };
    let (offset, size) = central_directory(wheel).map_err(&invalid)?;
    let directory = wheel.read(offset, offset + size - 1)?;
    let entry = find_metadata(&directory)
        .ok_or_else(|| invalid("no *.dist-info/METADATA in the wheel's central directory"))?;
    // The local header repeats the name and may carry another extra field: leave room for it.
    let want = 30 + entry.name_length + entry.extra_length + entry.compressed + 1024;
    let local = wheel.read(entry.offset, entry.offset + want - 1)?;
    if !local.starts_with(b"PK\x03\x04") || local.len() < 30 {
        return Err(invalid(
            "the METADATA entry's local header is not where the directory says",
        ));
    }
    let start = 30 + usize::from(u16_at(&local, 26)) + usize::from(u16_at(&local, 28));
    let data = usize::try_from(entry.compressed)
        .ok()
        .and_then(|length| local.get(start..start.checked_add(length)?))
        .ok_or_else(|| invalid("the METADATA entry is cut short"))?;
    let mut text = Vec::new();
    match entry.method {
        0 => text.extend_from_slice(data),
        8 => {
            flate2::read::DeflateDecoder::new(data)
                .take(METADATA_LIMIT)
                .read_to_end(&mut text)
                .map_err(|error| invalid(&format!("cannot inflate METADATA: {error}")))?;
        }
        _ => {
            return Err(invalid(
                "METADATA is compressed with a method other than deflate",
            ));
        }
    }
    Ok(DistInfo {
        folder: entry.folder,
        metadata: String::from_utf8_lossy(&text).into_owned(),
    })
}

/// Where the central directory is and how long it is: from the end of central directory
/// record, or from the zip64 record its locator points at when the plain record's fields are
/// saturated.
fn central_directory(wheel: &Wheel<'_>) -> Result<(u64, u64), &'static str> {
    let tail = wheel.tail();
    let total = wheel.total();
    let end = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&at| tail[at..].starts_with(b"PK\x05\x06"))
        .ok_or("no zip end of central directory record: not a wheel")?;
    let record = &tail[end..];
    let (mut size, mut offset) = (u64::from(u32_at(record, 12)), u64::from(u32_at(record, 16)));
    if offset == 0xFFFF_FFFF || size == 0xFFFF_FFFF {
        let locator = end
            .checked_sub(20)
            .map(|at| &tail[at..end])
            .filter(|locator| locator.starts_with(b"PK\x06\x07"))
            .ok_or("a zip64 archive without its end of central directory locator")?;
        let record_at = u64_at(locator, 8);
        let zip64 = wheel
            .read(record_at, record_at + 55)
            .map_err(|_| "cannot read the zip64 end of central directory record")?;
        if !zip64.starts_with(b"PK\x06\x06") || zip64.len() < 56 {
            return Err("the zip64 end of central directory record is not where its locator says");
        }
        size = u64_at(&zip64, 40);
        offset = u64_at(&zip64, 48);
    }
    if size == 0 || offset.checked_add(size).is_none_or(|end| end > total) {
        return Err("a damaged central directory");
    }
    Ok((offset, size))
}

/// Where the METADATA entry is in the file, as the central directory says.
struct Entry {
    folder: String,
    method: u16,
    compressed: u64,
    offset: u64,
    name_length: u64,
    extra_length: u64,
}

fn find_metadata(directory: &[u8]) -> Option<Entry> {
    let mut at = 0;
    while directory.get(at..at + 4)? == b"PK\x01\x02" {
        let header = directory.get(at..at + 46)?;
        let name_length = usize::from(u16_at(header, 28));
        let extra_length = usize::from(u16_at(header, 30));
        let comment_length = usize::from(u16_at(header, 32));
        let name = directory.get(at + 46..at + 46 + name_length)?;
        let folder = std::str::from_utf8(name).ok().and_then(|name| {
            name.strip_suffix("/METADATA")
                .filter(|folder| folder.ends_with(".dist-info") && !folder.contains('/'))
                .map(str::to_owned)
        });
        if let Some(folder) = folder {
            let extra =
                directory.get(at + 46 + name_length..at + 46 + name_length + extra_length)?;
            let (compressed, offset) = zip64_sizes(
                extra,
                u32_at(header, 24),
                u32_at(header, 20),
                u32_at(header, 42),
            )?;
            return Some(Entry {
                folder,
                method: u16_at(header, 10),
                compressed,
                offset,
                name_length: name_length as u64,
                extra_length: extra_length as u64,
            });
        }
        at += 46 + name_length + extra_length + comment_length;
    }
    None
}

/// The compressed size and local header offset of an entry: the directory's own fields, or for
/// those saturated (0xFFFFFFFF) the zip64 extra field's, which lists in order only the
/// uncompressed size, compressed size and offset that are saturated.
fn zip64_sizes(
    extra: &[u8],
    uncompressed: u32,
    compressed: u32,
    offset: u32,
) -> Option<(u64, u64)> {
    const SATURATED: u32 = 0xFFFF_FFFF;
    if ![uncompressed, compressed, offset].contains(&SATURATED) {
        return Some((u64::from(compressed), u64::from(offset)));
    }
    let mut at = 0;
    let field = loop {
        let id = u16_at(extra.get(at..at + 4)?, 0);
        let length = usize::from(u16_at(extra, at + 2));
        let data = extra.get(at + 4..at + 4 + length)?;
        if id == 1 {
            break data;
        }
        at += 4 + length;
    };
    let mut values = field.chunks_exact(8).map(|chunk| u64_at(chunk, 0));
    if uncompressed == SATURATED {
        values.next()?;
    }
    let compressed = if compressed == SATURATED {
        values.next()?
    } else {
        u64::from(compressed)
    };
    let offset = if offset == SATURATED {
        values.next()?
    } else {
        u64::from(offset)
    };
    Some((compressed, offset))
}

/// What a server sent for a range request.
enum Answer {
    /// The range (206), and the file's whole length from `Content-Range`.
    Range(Vec<u8>, u64),
    /// The whole file (200): the server does not serve ranges.
    Whole(Vec<u8>),
}

/// `GET url` for `bytes`.
fn range(agent: &Get<'_>, url: &str, bytes: &str) -> Result<Answer, IndexError> {
    let unreachable = |message: String| IndexError::Unreachable {
        url: url.to_owned(),
        message,
    };
    let mut response = agent(url)
        .header("Range", bytes)
        .call()
        .map_err(|error| unreachable(error.to_string()))?;
    let status = response.status().as_u16();
    let limit = match status {
        206 => crate::http::BODY_LIMIT,
        200 => WHOLE_FILE_LIMIT,
        _ => {
            return Err(IndexError::Status {
                url: url.to_owned(),
                status,
            });
        }
    };
    let total = crate::http::header(&response, "content-range")
        .and_then(|value| value.rsplit('/').next())
        .and_then(|total| total.trim().parse::<u64>().ok());
    let body = response
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_vec()
        .map_err(|error| unreachable(error.to_string()))?;
    if status == 200 {
        return Ok(Answer::Whole(body));
    }
    let total = total.ok_or_else(|| IndexError::Invalid {
        url: url.to_owned(),
        message: "a range answer without the file's length in Content-Range".to_owned(),
    })?;
    Ok(Answer::Range(body, total))
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}
