//! One layer as a function of its content: a layer tar in, the same entries written again out.
//!
//! Each entry keeps its path, type, permission bits, owner and group by number, link target,
//! device numbers, extended attributes and bytes, in the order the layer has them. What a
//! daemon, a clock or a build cache adds goes: every modification time becomes the epoch (a
//! cached step keeps the times of the build that first ran it, so only one value for all of
//! them gives one layer), file-type bits in the mode (kept by some engines) are dropped, and so
//! are user and group names, access and change times. A directory entry that changes nothing of
//! the layers below (the same permissions, owner, group and attributes as the directory there;
//! some engines write one for every mount point a RUN step had) is left out, as `drop` says.
//! Every header is written one way (ustar, a PAX record where a value does not fit), so the
//! same entries give the same bytes whichever engine wrote the layer.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Read, Write};

use sha2::{Digest as _, Sha256};
use tar::{EntryType, Header};

use crate::types::oci::Digest;

/// The widest path or link target a ustar header holds without a PAX record.
const USTAR_NAME: usize = 100;

/// The largest owner id a ustar header holds (seven octal digits).
const USTAR_ID: u64 = 0o7_777_777;

/// PAX keys whose values forge writes itself (from the header it builds) or drops as
/// host-specific (the times: forge sets one mtime for all); every other PAX record of an entry
/// (extended attributes above all) is kept.
const REWRITTEN_KEYS: [&str; 10] = [
    "path", "linkpath", "size", "uid", "gid", "uname", "gname", "atime", "ctime", "mtime",
];

/// The name of the entry that makes a directory opaque (hides what the layers below hold in it).
const OPAQUE: &[u8] = b".wh..wh..opq";

/// The prefix of an entry that deletes what the layers below hold under the rest of its name.
const WHITEOUT: &[u8] = b".wh.";

/// What rewriting a layer produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The sha256 of the tar written: the layer's new diff id.
    pub diff_id: Digest,
    /// The bytes written.
    pub size: u64,
    /// The entries written.
    pub entries: u64,
}

/// A directory's metadata, as far as whether an entry changes it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directory {
    /// Permission bits, with set-id and sticky bits.
    pub mode: u32,
    /// Owner and group, by number.
    pub owner: (u64, u64),
    /// Extended attributes, by PAX key.
    pub attributes: BTreeMap<String, Vec<u8>>,
}

/// What a layer holds at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A directory.
    Directory(Directory),
    /// Anything else: a file, a link, a device.
    Other,
}

/// What a layer holds, by path (without a leading `/` or `./`, or a trailing `/`), as the
/// layers above it need to know: its entries, what it deletes, which directories it makes
/// opaque, and its directory entries in order.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Every entry's path and what it is (the last entry for a path, as extraction keeps).
    pub entries: HashMap<Vec<u8>, Held>,
    /// Paths it deletes.
    pub deleted: HashSet<Vec<u8>>,
    /// Directories it makes opaque.
    pub opaque: HashSet<Vec<u8>>,
    /// The sha256 of the layer's bytes as read.
    pub diff_id: Option<Digest>,
}

/// The path of an entry as the index keys it.
pub fn key(path: &[u8]) -> Vec<u8> {
    let mut path = path;
    while let Some(rest) = path.strip_prefix(b"./").or_else(|| path.strip_prefix(b"/")) {
        path = rest;
    }
    while let Some(rest) = path.strip_suffix(b"/") {
        path = rest;
    }
    if path == b"." {
        Vec::new()
    } else {
        path.to_vec()
    }
}

/// The parent of an index path (`""` for the root's children).
pub fn parent(path: &[u8]) -> &[u8] {
    path.iter()
        .rposition(|byte| *byte == b'/')
        .map_or(&path[..0], |at| &path[..at])
}

/// Reads the layer tar `input` once for its index and its sha256 (its diff id as built).
pub fn index(input: impl Read) -> io::Result<Index> {
    let mut hashing = HashingReader::new(input);
    let mut found = Index::default();
    {
        let mut archive = tar::Archive::new(&mut hashing);
        for entry in archive.entries()? {
            let mut entry = entry?;
            let canonical = Canonical::of(&mut entry, 0)?;
            let path = key(&canonical.path);
            let name = &path[parent(&path).len()..];
            let name = name.strip_prefix(b"/").unwrap_or(name);
            if name == OPAQUE {
                found.opaque.insert(parent(&path).to_vec());
            } else if let Some(deleted) = name.strip_prefix(WHITEOUT) {
                let mut target = parent(&path).to_vec();
                if !target.is_empty() {
                    target.push(b'/');
                }
                target.extend_from_slice(deleted);
                found.deleted.insert(target);
            } else {
                found.entries.insert(path, canonical.held());
            }
        }
    }
    // What follows the archive's end (its padding to a block) is part of the layer's bytes.
    io::copy(&mut hashing, &mut io::sink())?;
    found.diff_id = Some(hashing.finish());
    Ok(found)
}

/// Rewrites the layer tar `input` into `output` with every modification time the epoch,
/// leaving out each directory entry whose index path `drop` names.
pub fn rewrite(
    input: impl Read,
    output: impl Write,
    epoch: u64,
    drop: &HashSet<Vec<u8>>,
) -> io::Result<Rewritten> {
    let mut archive = tar::Archive::new(input);
    let mut out = Hashing::new(output);
    let mut entries = 0;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let canonical = Canonical::of(&mut entry, epoch)?;
        if canonical.kind == EntryType::Directory && drop.contains(&key(&canonical.path)) {
            continue;
        }
        canonical.write(&mut out, &mut entry)?;
        entries += 1;
    }
    // The end of an archive: two zero blocks, as every tar writer ends it.
    out.write_all(&[0; 1024])?;
    out.flush()?;
    let (diff_id, size) = out.finish();
    Ok(Rewritten {
        diff_id,
        size,
        entries,
    })
}

/// One entry as forge writes it.
struct Canonical {
    path: Vec<u8>,
    link: Option<Vec<u8>>,
    kind: EntryType,
    mode: u32,
    uid: u64,
    gid: u64,
    mtime: u64,
    size: u64,
    device: Option<(u32, u32)>,
    /// The PAX records kept from the layer, by key.
    kept: BTreeMap<String, Vec<u8>>,
}

impl Canonical {
    /// The canonical form of `entry`, with `epoch` as its mtime.
    fn of<R: Read>(entry: &mut tar::Entry<'_, R>, epoch: u64) -> io::Result<Self> {
        let mut kept = BTreeMap::new();
        let (mut uid, mut gid) = (entry.header().uid()?, entry.header().gid()?);
        if let Some(extensions) = entry.pax_extensions()? {
            for extension in extensions {
                let extension = extension?;
                let key = extension
                    .key()
                    .map_err(|_| invalid("a PAX key is not UTF-8"))?;
                let number = || {
                    extension
                        .value()
                        .ok()
                        .and_then(|value| value.parse::<u64>().ok())
                        .ok_or_else(|| invalid("a PAX uid or gid is not a number"))
                };
                match key {
                    "uid" => uid = number()?,
                    "gid" => gid = number()?,
                    key if key.starts_with("GNU.sparse") => {
                        return Err(invalid(
                            "a sparse file entry (GNU.sparse), which image layers never hold",
                        ));
                    }
                    key if REWRITTEN_KEYS.contains(&key) => {}
                    key => {
                        kept.insert(key.to_owned(), extension.value_bytes().to_vec());
                    }
                }
            }
        }
        let header = entry.header();
        // An old-style regular file (type NUL) is a regular file: one type, one byte.
        let kind = match header.entry_type() {
            kind if kind.is_file() => EntryType::Regular,
            kind => kind,
        };
        let device = match kind {
            EntryType::Char | EntryType::Block => Some((
                header.device_major()?.unwrap_or(0),
                header.device_minor()?.unwrap_or(0),
            )),
            _ => None,
        };
        Ok(Self {
            path: entry.path_bytes().into_owned(),
            link: entry.link_name_bytes().map(|link| link.into_owned()),
            kind,
            mode: header.mode()? & 0o7777,
            uid,
            gid,
            mtime: epoch,
            size: if kind.is_file() || kind == EntryType::Continuous {
                entry.size()
            } else {
                0
            },
            device,
            kept,
        })
    }

    /// What the entry is, for the index.
    fn held(&self) -> Held {
        if self.kind == EntryType::Directory {
            Held::Directory(Directory {
                mode: self.mode,
                owner: (self.uid, self.gid),
                attributes: self.kept.clone(),
            })
        } else {
            Held::Other
        }
    }

    /// Writes the entry, its PAX record first when one is needed, then its bytes from `data`.
    fn write<W: Write>(&self, out: &mut W, data: &mut impl Read) -> io::Result<()> {
        let mut records = self.kept.clone();
        let mut header = Header::new_ustar();
        header.set_entry_type(self.kind);
        header.set_mode(self.mode);
        header.set_mtime(self.mtime);
        header.set_size(self.size);
        set_id(&mut records, "uid", self.uid, |id| header.set_uid(id));
        set_id(&mut records, "gid", self.gid, |id| header.set_gid(id));
        if let Some((major, minor)) = self.device {
            header.set_device_major(major)?;
            header.set_device_minor(minor)?;
        }
        let ustar = header.as_ustar_mut().expect("a ustar header");
        put_name(&mut records, "path", &self.path, &mut ustar.name);
        if let Some(link) = &self.link {
            put_name(&mut records, "linkpath", link, &mut ustar.linkname);
        }
        header.set_cksum();
        if !records.is_empty() {
            write_pax(out, &records)?;
        }
        out.write_all(header.as_bytes())?;
        let copied = io::copy(&mut data.take(self.size), out)?;
        if copied != self.size {
            return Err(invalid("an entry ends before its size"));
        }
        pad(out, self.size)
    }
}

/// Sets an owner id in the header, or as a PAX record (and 0 in the header) when it is too wide.
fn set_id(records: &mut BTreeMap<String, Vec<u8>>, key: &str, id: u64, set: impl FnOnce(u64)) {
    if id <= USTAR_ID {
        set(id);
    } else {
        set(0);
        records.insert(key.to_owned(), id.to_string().into_bytes());
    }
}

/// Puts `name` in a ustar name field, or as a PAX record (and its first bytes in the field)
/// when it is too long or holds a NUL.
fn put_name(records: &mut BTreeMap<String, Vec<u8>>, key: &str, name: &[u8], field: &mut [u8]) {
    let fits = name.len() <= USTAR_NAME.min(field.len()) && !name.contains(&0);
    let shown = name.len().min(field.len());
    field[..shown].copy_from_slice(&name[..shown]);
    if !fits {
        records.insert(key.to_owned(), name.to_vec());
    }
}

/// Writes a PAX extended header holding `records` (`LENGTH KEY=VALUE\n` each, in key order).
fn write_pax<W: Write>(out: &mut W, records: &BTreeMap<String, Vec<u8>>) -> io::Result<()> {
    let mut data = Vec::new();
    for (key, value) in records {
        // The length counts itself: grow it until it does.
        let rest = key.len() + value.len() + 3;
        let mut length = rest + 1;
        while length.to_string().len() + rest != length {
            length = length.to_string().len() + rest;
        }
        data.extend_from_slice(format!("{length} {key}=").as_bytes());
        data.extend_from_slice(value);
        data.push(b'\n');
    }
    let mut header = Header::new_ustar();
    header.set_entry_type(EntryType::XHeader);
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    let name = b"././@PaxHeader";
    header.as_ustar_mut().expect("a ustar header").name[..name.len()].copy_from_slice(name);
    header.set_cksum();
    out.write_all(header.as_bytes())?;
    out.write_all(&data)?;
    pad(out, data.len() as u64)
}

/// Pads an entry's data of `size` bytes to the next 512-byte block.
pub(super) fn pad<W: Write>(out: &mut W, size: u64) -> io::Result<()> {
    let rest = (512 - size % 512) % 512;
    out.write_all(&[0; 512][..rest as usize])
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// A reader that hashes what passes through it.
pub(super) struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R> HashingReader<R> {
    pub(super) fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// The digest of everything read.
    pub(super) fn finish(self) -> Digest {
        Digest::from_sha256(&self.hasher.finalize())
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.hasher.update(&buffer[..read]);
        Ok(read)
    }
}

/// A writer that hashes and counts what passes through it.
pub(super) struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W> Hashing<W> {
    pub(super) fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    /// The digest of everything written, and how many bytes that was.
    pub(super) fn finish(self) -> (Digest, u64) {
        (Digest::from_sha256(&self.hasher.finalize()), self.written)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..written]);
        self.written += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-07-08T00:00:00Z.
    const EPOCH: u64 = 1_783_468_800;

    /// One entry of a test layer: path, type, mode, mtime, data; written by a GNU-format or a
    /// PAX-format writer, with or without user names.
    struct Made<'a> {
        path: &'a str,
        kind: EntryType,
        mtime: u64,
        data: &'a [u8],
        link: Option<&'a str>,
    }

    const ENTRIES: &[Made<'static>] = &[
        Made {
            path: "opt/",
            kind: EntryType::Directory,
            mtime: 1_796_228_517,
            data: b"",
            link: None,
        },
        Made {
            path: "opt/app/greet.sh",
            kind: EntryType::Regular,
            mtime: 1_783_500_000,
            data: b"echo hi\n",
            link: None,
        },
        Made {
            path: "opt/app/old.txt",
            kind: EntryType::Regular,
            mtime: 1_000,
            data: b"old\n",
            link: None,
        },
        Made {
            path: "opt/app/link",
            kind: EntryType::Symlink,
            mtime: 1_796_228_517,
            data: b"",
            link: Some("greet.sh"),
        },
        Made {
            path: "opt/zzz/.wh.gone",
            kind: EntryType::Regular,
            mtime: 1_796_228_517,
            data: b"",
            link: None,
        },
    ];

    /// A layer holding `ENTRIES` and a file under a 132-byte path, as a writer of `gnu` or
    /// ustar+PAX headers writes it, with user names `names`.
    fn layer(gnu: bool, names: Option<(&str, &str)>, shift: u64) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let long = format!("opt/{}/file.py", "d".repeat(120));
        let long = Made {
            path: &long,
            kind: EntryType::Regular,
            mtime: 1_796_228_517,
            data: b"x = 1\n",
            link: None,
        };
        for made in ENTRIES.iter().chain([&long]) {
            let Made {
                path,
                kind,
                mtime,
                data,
                link,
            } = *made;
            let mut header = if gnu {
                Header::new_gnu()
            } else {
                Header::new_ustar()
            };
            header.set_entry_type(kind);
            header.set_mode(if kind == EntryType::Directory {
                0o755
            } else {
                0o644
            });
            header.set_uid(0);
            header.set_gid(0);
            // Times after the epoch are the clock of the build: they differ run to run.
            header.set_mtime(if mtime > EPOCH { mtime + shift } else { mtime });
            header.set_size(data.len() as u64);
            if let Some((user, group)) = names {
                header.set_username(user).unwrap();
                header.set_groupname(group).unwrap();
            }
            if let Some(link) = link {
                header.set_link_name(link).unwrap();
            }
            if !gnu {
                let mut records: BTreeMap<String, Vec<u8>> = BTreeMap::new();
                records.insert(
                    "atime".to_owned(),
                    format!("{}.5", mtime + shift).into_bytes(),
                );
                if path.len() > 100 {
                    records.insert("path".to_owned(), path.as_bytes().to_vec());
                }
                write_pax(builder.get_mut(), &records).unwrap();
                let name = &path.as_bytes()[..path.len().min(100)];
                header.as_ustar_mut().unwrap().name[..name.len()].copy_from_slice(name);
                header.set_cksum();
                builder.append(&header, data).unwrap();
            } else {
                builder.append_data(&mut header, path, data).unwrap();
            }
        }
        builder.into_inner().unwrap()
    }

    fn rewritten(input: &[u8]) -> (Vec<u8>, Rewritten) {
        let mut out = Vec::new();
        let rewritten = rewrite(input, &mut out, EPOCH, &HashSet::new()).unwrap();
        (out, rewritten)
    }

    #[test]
    fn the_same_entries_from_two_writers_and_two_clocks_give_the_same_bytes() {
        let gnu = layer(true, Some(("root", "root")), 0);
        let pax = layer(false, None, 3_600);
        assert_ne!(gnu, pax);
        let (first, one) = rewritten(&gnu);
        let (second, two) = rewritten(&pax);
        assert_eq!(first, second);
        assert_eq!(one, two);
        assert_eq!(one.entries, 6);
        assert_eq!(one.size, first.len() as u64);
        assert_eq!(
            one.diff_id,
            Digest::from_sha256(&Sha256::digest(&first)),
            "the diff id is the sha256 of the bytes written"
        );
        // Rewriting a rewritten layer changes nothing.
        assert_eq!(rewritten(&first).0, first);
    }

    #[test]
    fn every_time_is_the_epoch_and_everything_else_is_kept_in_order() {
        let (out, _) = rewritten(&layer(true, Some(("builder", "staff")), 0));
        let mut archive = tar::Archive::new(out.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let header = entry.header().clone();
            let path = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            assert_eq!(header.username_bytes(), Some(&b""[..]), "{path}");
            assert_eq!(header.groupname_bytes(), Some(&b""[..]), "{path}");
            seen.push((
                path,
                header.mtime().unwrap(),
                data,
                entry.link_name_bytes().map(|l| l.into_owned()),
            ));
        }
        let names: Vec<&str> = seen.iter().map(|(path, ..)| path.as_str()).collect();
        assert_eq!(
            names[..5],
            [
                "opt/",
                "opt/app/greet.sh",
                "opt/app/old.txt",
                "opt/app/link",
                "opt/zzz/.wh.gone"
            ]
        );
        assert_eq!(
            names[5].len(),
            132,
            "a long path survives through a PAX record"
        );
        let mtimes: Vec<u64> = seen.iter().map(|(_, mtime, ..)| *mtime).collect();
        assert_eq!(
            mtimes, [EPOCH; 6],
            "an earlier time too: a cached step keeps another build's"
        );
        assert_eq!(seen[1].2, b"echo hi\n");
        assert_eq!(seen[3].3.as_deref(), Some(&b"greet.sh"[..]));
    }

    #[test]
    fn extended_attributes_and_wide_owners_are_kept() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut records = BTreeMap::new();
        records.insert(
            "SCHILY.xattr.security.capability".to_owned(),
            vec![1, 0, 0, 2, 0x20, 0, 0, 0],
        );
        records.insert("uid".to_owned(), b"4000000".to_vec());
        records.insert("uname".to_owned(), b"someone".to_vec());
        write_pax(builder.get_mut(), &records).unwrap();
        let mut header = Header::new_ustar();
        header.set_mode(0o755);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(2);
        header.set_mtime(5);
        builder
            .append_data(&mut header, "usr/bin/ping", &b"ok"[..])
            .unwrap();
        let input = builder.into_inner().unwrap();
        let (out, _) = rewritten(&input);
        let mut archive = tar::Archive::new(out.as_slice());
        let mut entry = archive.entries().unwrap().next().unwrap().unwrap();
        let kept: Vec<(String, Vec<u8>)> = entry
            .pax_extensions()
            .unwrap()
            .unwrap()
            .map(|record| {
                let record = record.unwrap();
                (
                    record.key().unwrap().to_owned(),
                    record.value_bytes().to_vec(),
                )
            })
            .collect();
        assert_eq!(
            kept,
            [
                (
                    "SCHILY.xattr.security.capability".to_owned(),
                    vec![1, 0, 0, 2, 0x20, 0, 0, 0]
                ),
                ("uid".to_owned(), b"4000000".to_vec()),
            ]
        );
    }

    /// A directory entry as Docker 20.10 writes it (the file-type bits in the mode) and as 28.5
    /// does (permission bits only).
    fn directory(mode: u32) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = Header::new_ustar();
        header.set_entry_type(EntryType::Directory);
        header.set_mode(mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(0);
        header.set_mtime(1_796_609_288);
        builder.append_data(&mut header, "opt/", &b""[..]).unwrap();
        builder.into_inner().unwrap()
    }

    #[test]
    fn file_type_bits_in_the_mode_are_dropped() {
        assert_eq!(
            rewritten(&directory(0o40755)).0,
            rewritten(&directory(0o755)).0
        );
        assert_ne!(
            rewritten(&directory(0o40755)).0,
            rewritten(&directory(0o700)).0
        );
    }

    #[test]
    fn a_directory_entry_named_to_drop_is_left_out_and_its_files_kept() {
        let input = layer(true, None, 0);
        let drop: HashSet<Vec<u8>> = [b"opt".to_vec()].into_iter().collect();
        let mut out = Vec::new();
        let written = rewrite(input.as_slice(), &mut out, EPOCH, &drop).unwrap();
        assert_eq!(written.entries, 5);
        let mut archive = tar::Archive::new(out.as_slice());
        let paths: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|entry| String::from_utf8(entry.unwrap().path_bytes().into_owned()).unwrap())
            .collect();
        assert_eq!(paths[0], "opt/app/greet.sh");
    }

    #[test]
    fn the_index_names_entries_deletions_and_opaque_folders_by_clean_paths() {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind) in [
            ("./etc/", EntryType::Directory),
            ("etc/.wh.hosts", EntryType::Regular),
            ("var/cache/.wh..wh..opq", EntryType::Regular),
            ("usr/bin/tool", EntryType::Regular),
        ] {
            let mut header = Header::new_ustar();
            header.set_entry_type(kind);
            header.set_mode(0o755);
            header.set_uid(0);
            header.set_gid(0);
            header.set_size(0);
            builder.append_data(&mut header, path, &b""[..]).unwrap();
        }
        let bytes = builder.into_inner().unwrap();
        let found = index(bytes.as_slice()).unwrap();
        assert!(matches!(
            found.entries.get(&b"etc"[..]),
            Some(Held::Directory(_))
        ));
        assert_eq!(found.entries.get(&b"usr/bin/tool"[..]), Some(&Held::Other));
        assert!(found.deleted.contains(&b"etc/hosts"[..]));
        assert!(found.opaque.contains(&b"var/cache"[..]));
        assert_eq!(
            found.diff_id,
            Some(Digest::from_sha256(&Sha256::digest(&bytes))),
            "the index reads the diff id of every byte"
        );
    }

    #[test]
    fn a_pax_record_counts_its_own_length() {
        let mut out = Vec::new();
        let mut records = BTreeMap::new();
        // 1 + 1 + 4 + 1 + 0 + 1 = 8 with a one-digit length; 94 bytes of value cross to three digits.
        records.insert("path".to_owned(), vec![b'a'; 94]);
        write_pax(&mut out, &records).unwrap();
        let data = &out[512..];
        let text = std::str::from_utf8(&data[..data.iter().position(|b| *b == b'\n').unwrap() + 1])
            .unwrap();
        let (length, _) = text.split_once(' ').unwrap();
        assert_eq!(length.parse::<usize>().unwrap(), text.len());
    }
}
