//! Generated cases: one patch onto a target that is A, B, or A changed so that the patch moves,
//! breaks or is blocked, some mails damaged on the way.

use super::*;

/// The target a case's patch meets: A itself, B (already applied), or A changed so that the
/// patch moves, breaks or is blocked.
pub(super) fn mutated_target(rng: &mut Rng, before: &State, after: &State) -> State {
    let target = mutation(rng, before, after);
    if is_valid(&target) {
        target
    } else {
        before.clone()
    }
}

pub(super) fn mutation(rng: &mut Rng, before: &State, after: &State) -> State {
    let touched: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect();
    let mut target = before.clone();
    let Some(path) = (!touched.is_empty()).then(|| rng.pick(&touched).clone()) else {
        return target;
    };
    match rng.below(12) {
        0 | 1 => {}
        2 => return after.clone(),
        3 | 4 => add_a_line(rng, &mut target, &path),
        5 => {
            if let Some(entry) = target.get_mut(&path)
                && entry.is_text()
            {
                entry.data = edit_text(rng, &entry.data);
            }
        }
        6 => {
            target.remove(&path);
        }
        7 => occupy(rng, &mut target, before, after, path),
        8 => {
            // A folder where the patch writes a file.
            target.remove(&path);
            target.insert(format!("{path}/blocker"), Entry::text(b"in the way\n"));
        }
        9 => change_the_mode(rng, &mut target, &path),
        10 => link_on_the_way(&mut target, &path),
        _ => {
            if let Some(entry) = target.get_mut(&path)
                && matches!(entry.mode, REGULAR | EXECUTABLE)
            {
                entry.data.clear();
            }
        }
    }
    target
}

/// A line added at the start or the end of the text file at `path`.
fn add_a_line(rng: &mut Rng, target: &mut State, path: &str) {
    if let Some(entry) = target.get_mut(path)
        && entry.is_text()
    {
        let extra = format!("extra {}\n", rng.below(9));
        if rng.chance(50) {
            entry.data.extend_from_slice(extra.as_bytes());
        } else {
            let mut data = extra.into_bytes();
            data.extend_from_slice(&entry.data);
            entry.data = data;
        }
    }
}

/// Something already where the patch writes.
fn occupy(rng: &mut Rng, target: &mut State, before: &State, after: &State, path: String) {
    if let Some(entry) = after.get(&path)
        && !before.contains_key(&path)
        && can_add(target, &path)
    {
        let mut entry = entry.clone();
        if rng.chance(50) && entry.is_text() {
            entry.data.extend_from_slice(b"different\n");
        }
        target.insert(path, entry);
    }
}

/// The mode of `path` changed: regular to executable to symbolic link to regular.
fn change_the_mode(rng: &mut Rng, target: &mut State, path: &str) {
    if let Some(entry) = target.get_mut(path)
        && entry.mode != GITLINK
    {
        entry.mode = match entry.mode {
            REGULAR => EXECUTABLE,
            EXECUTABLE => SYMLINK,
            _ => REGULAR,
        };
        if entry.mode == SYMLINK {
            entry.data = link_target(rng);
        }
    }
}

/// A symbolic link on the way to the file.
fn link_on_the_way(target: &mut State, path: &str) {
    if let Some((folder, _)) = path.rsplit_once('/') {
        let prefix = format!("{folder}/");
        target.retain(|key, _| !key.starts_with(&prefix));
        if can_add(target, folder) {
            target.insert(
                folder.to_owned(),
                Entry {
                    mode: SYMLINK,
                    data: b"elsewhere".to_vec(),
                },
            );
        }
    }
}

/// Damages a mail the way transfer and hand edits do: truncated, a hunk count off by one, a
/// context line changed, a header rewritten.
pub(super) fn mutated_mail(rng: &mut Rng, mail: &[u8]) -> Vec<u8> {
    let text = mail.to_vec();
    let lines = lines(&text);
    match rng.below(9) {
        0 => lines[..rng.below(lines.len()).max(1)].concat(),
        1 => {
            let mut lines = lines;
            if let Some(at) = lines.iter().position(|line| line.starts_with(b"@@ -")) {
                let header = String::from_utf8_lossy(&lines[at]).into_owned();
                let bumped = header.replacen(",", &format!(",{}", rng.below(3)), 1);
                lines[at] = bumped.into_bytes();
            }
            lines.concat()
        }
        2 => {
            let mut lines = lines;
            let context: Vec<usize> = (0..lines.len())
                .filter(|&at| lines[at].starts_with(b" ") && lines[at].len() > 2)
                .collect();
            if !context.is_empty() {
                let at = *rng.pick(&context);
                lines[at] = b" context changed in transit\n".to_vec();
            }
            lines.concat()
        }
        3 => {
            let date = *rng.pick(&[
                "Mon, 6 Jul 2026 14:12:09 PDT",
                "yesterday",
                "2026-07-06T14:12:09+02:00",
                "6 Jul 2026 14:12:09 -0330 (NST)",
                "Mon, 6 Jul 2026 14:12:09",
                "Jul 6 2026 2:12pm +0100",
            ]);
            replace_header(&text, "Date", date)
        }
        4 => {
            let from = *rng.pick(&[
                "ada@example.org (Ada Lovelace)",
                "\"Lovelace, Ada\" <ada@example.org>",
                "=?ISO-8859-1?Q?J=F6rg_M=FCller?= <joerg@example.org>",
                "<nobody@example.org>",
                "Ada Lovelace",
                "Ada (the first) Lovelace <ada@example.org> (programmer)",
            ]);
            replace_header(&text, "From", from)
        }
        5 => recoded(&text, *rng.pick(&Recoding::ALL)),
        _ => text,
    }
}

#[test]
pub(super) fn generated_cases_get_git_ams_verdict() {
    let seed = env_number("FORGE_DIFFERENTIAL_SEED", 11);
    let count = env_number("FORGE_DIFFERENTIAL_CASES", 1000) as usize;
    let mut rng = Rng(seed ^ 0x5eed);
    let mut cases = Vec::with_capacity(count);
    for index in 0..count {
        let before = random_state(&mut rng);
        let after = changed(&mut rng, &before);
        let author = random_author(&mut rng);
        let message = *rng.pick(&MESSAGES);
        let mut mail = mail_for(&before, &after, &author, message);
        if rng.chance(25) {
            mail = mutated_mail(&mut rng, &mail);
        }
        let target = mutated_target(&mut rng, &before, &after);
        cases.push(case(&format!("seed {seed} case {index}"), mail, &target));
    }
    let next = Mutex::new(0usize);
    let found = Mutex::new(Vec::new());
    let counts = Mutex::new([0usize; 2]);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().unwrap();
                        *next += 1;
                        *next - 1
                    };
                    let Some(case) = cases.get(index) else { break };
                    let work = scratch();
                    match compare(case, work.path()) {
                        Ok(verdict) => {
                            let applied = matches!(verdict, Verdict::Applied(_));
                            counts.lock().unwrap()[usize::from(applied)] += 1;
                        }
                        Err(report) => found.lock().unwrap().push(report),
                    }
                }
            });
        }
    });
    let found = found.into_inner().unwrap();
    let [refused, applied] = counts.into_inner().unwrap();
    assert!(
        found.is_empty(),
        "{} of {count} cases disagree with git am; the first:\n{}",
        found.len(),
        found[0]
    );
    // The generator must exercise both verdicts in earnest.
    assert!(
        applied > count / 5 && refused > count / 5,
        "applied {applied}, refused {refused}"
    );
}

/// How `recoded` writes a mail's message: which charset it declares, and in which its bytes are.
#[derive(Debug, Clone, Copy)]
pub(super) enum Recoding {
    /// No charset declared, the text in Latin-1.
    UndeclaredLatin1,
    /// No charset declared, the text in UTF-8.
    UndeclaredUtf8,
    /// UTF-8 declared, the text in Latin-1.
    Utf8DeclaredLatin1,
    /// ISO-8859-1 declared and used.
    Latin1,
    /// ISO-8859-1 declared, the text in UTF-8.
    Latin1DeclaredUtf8,
    /// windows-1252 declared, the text in Latin-1 with a euro sign (0x80) in every part.
    Windows1252,
}

impl Recoding {
    pub(super) const ALL: [Recoding; 6] = [
        Recoding::UndeclaredLatin1,
        Recoding::UndeclaredUtf8,
        Recoding::Utf8DeclaredLatin1,
        Recoding::Latin1,
        Recoding::Latin1DeclaredUtf8,
        Recoding::Windows1252,
    ];
}

/// `mail` with 8-bit text in its author's name, its subject and its body, that text in the
/// charset `recoding` says and the mail declaring the one it says (or none): git am recodes a
/// declared charset, and git commits every byte that is not UTF-8 as Latin-1. The diff is left
/// as it is.
pub(super) fn recoded(mail: &[u8], recoding: Recoding) -> Vec<u8> {
    let find = |haystack: &[u8], needle: &[u8]| {
        (haystack.windows(needle.len())).position(|window| window == needle)
    };
    let (Some(headers_end), Some(patch_break)) = (find(mail, b"\n\n"), find(mail, b"\n---\n"))
    else {
        return mail.to_vec();
    };
    if patch_break < headers_end {
        return mail.to_vec();
    }
    let (declared, latin1, euro) = match recoding {
        Recoding::UndeclaredLatin1 => (None, true, false),
        Recoding::UndeclaredUtf8 => (None, false, false),
        Recoding::Utf8DeclaredLatin1 => (Some("UTF-8"), true, false),
        Recoding::Latin1 => (Some("ISO-8859-1"), true, false),
        Recoding::Latin1DeclaredUtf8 => (Some("ISO-8859-1"), false, false),
        Recoding::Windows1252 => (Some("windows-1252"), true, true),
    };
    let mut headers = Vec::new();
    for line in lines(&mail[..=headers_end]) {
        let mime = [
            "MIME-Version:",
            "Content-Type:",
            "Content-Transfer-Encoding:",
        ]
        .iter()
        .any(|name| line.starts_with(name.as_bytes()));
        if mime {
            continue;
        }
        let line = if let Some(rest) = line.strip_prefix(b"From: ") {
            [b"From: Jos\xc3\xa9 ".as_slice(), rest].concat()
        } else if let Some(rest) = line.strip_prefix(b"Subject: [PATCH] ") {
            [b"Subject: [PATCH] Caf\xc3\xa9 ".as_slice(), rest].concat()
        } else {
            line
        };
        let date = line.starts_with(b"Date: ");
        headers.extend_from_slice(&line);
        if let (true, Some(charset)) = (date, declared) {
            headers.extend_from_slice(
                format!(
                    "MIME-Version: 1.0\nContent-Type: text/plain; charset={charset}\n\
                     Content-Transfer-Encoding: 8bit\n"
                )
                .as_bytes(),
            );
        }
    }
    let mut message = b"\nCr\xc3\xa8me br\xc3\xbbl\xc3\xa9e, d\xc3\xa9j\xc3\xa0 vu.\n".to_vec();
    message.extend_from_slice(&mail[headers_end + 1..=patch_break]);
    let mut text = [headers, message].concat();
    if latin1 {
        // Every character up to U+00FF as its one Latin-1 byte; any other stays UTF-8.
        text = String::from_utf8_lossy(&text)
            .chars()
            .flat_map(|c| match u8::try_from(u32::from(c)) {
                Ok(byte) => vec![byte],
                Err(_) => c.to_string().into_bytes(),
            })
            .collect();
    }
    if euro {
        for part in [b"Jos\xe9 ".as_slice(), b"Caf\xe9 ", b"vu."] {
            if let Some(at) = find(&text, part) {
                text.insert(at + part.len() - 1, 0x80);
            }
        }
    }
    [text, mail[patch_break + 1..].to_vec()].concat()
}
