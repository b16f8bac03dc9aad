//! A wheel's METADATA read out of the wheel itself, for indexes that offer no PEP 658 metadata
//! file: three HTTP range requests instead of the whole file (wheels of tens of MB): the file's
//! last bytes (the end of central directory record), the central directory, then the METADATA
//! entry alone, inflated here.

use std::io::Read;

use super::IndexError;

/// The end of central directory record is 22 bytes plus a comment of at most 65535.
const TAIL: u64 = 22 + 65_535;

/// The largest METADATA forge inflates.
const METADATA_LIMIT: u64 = 16 * 1024 * 1024;

/// The `*.dist-info/METADATA` of the wheel at `url`, read by range requests.
pub fn metadata(agent: &ureq::Agent, url: &str) -> Result<String, IndexError> {
    let invalid = |message: &str| IndexError::Invalid {
        url: url.to_owned(),
        message: message.to_owned(),
    };
    let (tail, total) = range(agent, url, &format!("bytes=-{TAIL}"))?;
    let tail_start = total - tail.len() as u64;
    let end = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&at| tail[at..].starts_with(b"PK\x05\x06"))
        .ok_or_else(|| invalid("no zip end of central directory record: not a wheel"))?;
    let record = &tail[end..];
    let (size, offset) = (u64::from(u32_at(record, 12)), u64::from(u32_at(record, 16)));
    if offset == 0xFFFF_FFFF || offset + size > total {
        return Err(invalid(
            "a zip64 or damaged central directory, which forge does not read by ranges",
        ));
    }
    let directory = if offset >= tail_start {
        let from = usize::try_from(offset - tail_start).unwrap_or(usize::MAX);
        tail.get(from..).unwrap_or_default().to_vec()
    } else {
        range(agent, url, &format!("bytes={offset}-{}", offset + size - 1))?.0
    };
    let entry = find_metadata(&directory)
        .ok_or_else(|| invalid("no *.dist-info/METADATA in the wheel's central directory"))?;
    // The local header repeats the name and may carry another extra field: leave room for it.
    let want = 30 + entry.name_length + entry.extra_length + entry.compressed + 1024;
    let last = (entry.offset + want).min(total) - 1;
    let (local, _) = range(agent, url, &format!("bytes={}-{last}", entry.offset))?;
    if !local.starts_with(b"PK\x03\x04") || local.len() < 30 {
        return Err(invalid(
            "the METADATA entry's local header is not where the directory says",
        ));
    }
    let start = 30 + usize::from(u16_at(&local, 26)) + usize::from(u16_at(&local, 28));
    let data = usize::try_from(entry.compressed)
        .ok()
        .and_then(|length| local.get(start..start + length))
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
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Where the METADATA entry is in the file, as the central directory says.
struct Entry {
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
        let is_metadata = std::str::from_utf8(name).is_ok_and(|name| {
            name.split_once('/')
                .is_some_and(|(folder, file)| folder.ends_with(".dist-info") && file == "METADATA")
        });
        if is_metadata {
            return Some(Entry {
                method: u16_at(header, 10),
                compressed: u64::from(u32_at(header, 20)),
                offset: u64::from(u32_at(header, 42)),
                name_length: name_length as u64,
                extra_length: extra_length as u64,
            });
        }
        at += 46 + name_length + extra_length + comment_length;
    }
    None
}

/// `GET url` for `bytes`: the body and the file's whole length (from `Content-Range`). A server
/// that answers with the whole file instead is refused rather than read.
fn range(agent: &ureq::Agent, url: &str, bytes: &str) -> Result<(Vec<u8>, u64), IndexError> {
    let unreachable = |message: String| IndexError::Unreachable {
        url: url.to_owned(),
        message,
    };
    let mut response = agent
        .get(url)
        .header("Range", bytes)
        .call()
        .map_err(|error| unreachable(error.to_string()))?;
    let status = response.status().as_u16();
    if status != 206 {
        return Err(IndexError::Status {
            url: url.to_owned(),
            status,
        });
    }
    let total = crate::http::header(&response, "content-range")
        .and_then(|value| value.rsplit('/').next())
        .and_then(|total| total.trim().parse::<u64>().ok())
        .ok_or_else(|| IndexError::Invalid {
            url: url.to_owned(),
            message: "a range answer without the file's length in Content-Range".to_owned(),
        })?;
    let body = response
        .body_mut()
        .with_config()
        .limit(crate::http::BODY_LIMIT)
        .read_to_vec()
        .map_err(|error| unreachable(error.to_string()))?;
    Ok((body, total))
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}
