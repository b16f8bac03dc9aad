//! Random edits: texts, binaries, paths, entries and states, edited the ways histories are.

use super::*;

pub(super) const WORDS: [&str; 12] = [
    "same",
    "same",
    "",
    "{",
    "}",
    "return 0;",
    "  indented",
    "x = 1",
    "tab\there",
    "trailing ",
    "ünïcödé",
    "line",
];

pub(super) fn random_text(rng: &mut Rng) -> Vec<u8> {
    let lines = rng.below(24);
    let crlf = rng.chance(15);
    let mut text = Vec::new();
    for index in 0..lines {
        let word = *rng.pick(&WORDS);
        if word == "line" {
            text.extend_from_slice(format!("line {}", rng.below(50)).as_bytes());
        } else {
            text.extend_from_slice(word.as_bytes());
        }
        let last = index + 1 == lines;
        if last && rng.chance(15) {
            break;
        }
        text.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    }
    text
}

pub(super) fn random_binary(rng: &mut Rng) -> Vec<u8> {
    let length = if rng.chance(30) {
        2000 + rng.below(6000)
    } else {
        1 + rng.below(200)
    };
    let mut data: Vec<u8> = (0..length).map(|_| rng.next() as u8).collect();
    data[rng.below(length)] = 0;
    data
}

pub(super) fn random_path(rng: &mut Rng) -> String {
    let folders = ["dir", "sub", "with space", "é", "deep/er"];
    let names = ["a", "b.txt", "c d", "e.bin", "f", "g.sh", "h~", "README"];
    let depth = rng.below(3);
    let mut path = String::new();
    for _ in 0..depth {
        path.push_str(rng.pick::<&str>(&folders));
        path.push('/');
    }
    path.push_str(rng.pick::<&str>(&names));
    if rng.chance(30) {
        path.push_str(&rng.below(100).to_string());
    }
    path
}

/// Where a generated symbolic link points: never at a path of the tree, so that no link loops
/// (git's checks read the worktree, where a loop is an error of its own).
pub(super) fn link_target(rng: &mut Rng) -> Vec<u8> {
    match rng.below(3) {
        0 => format!("target-{}", rng.below(100)).into_bytes(),
        1 => b"../outside/the/tree".to_vec(),
        _ => b"/usr/share/doc".to_vec(),
    }
}

pub(super) fn random_entry(rng: &mut Rng) -> Entry {
    match rng.below(10) {
        0 => Entry {
            mode: SYMLINK,
            data: link_target(rng),
        },
        1 => Entry {
            mode: GITLINK,
            data: format!("{:040x}", rng.next() as u128 * 0x1_0000_0001 + 1).into_bytes(),
        },
        2 => Entry {
            mode: REGULAR,
            data: random_binary(rng),
        },
        3 => Entry {
            mode: EXECUTABLE,
            data: random_text(rng),
        },
        4 => Entry::text(b""),
        _ => Entry::text(&random_text(rng)),
    }
}

pub(super) fn random_state(rng: &mut Rng) -> State {
    let mut state = State::new();
    for _ in 0..3 + rng.below(8) {
        let path = random_path(rng);
        if can_add(&state, &path) {
            state.insert(path, random_entry(rng));
        }
    }
    if state.is_empty() {
        state.insert("a".to_owned(), Entry::text(b"a\n"));
    }
    state
}

/// Lines of `text`, each with its line ending.
pub(super) fn lines(text: &[u8]) -> Vec<Vec<u8>> {
    text.split_inclusive(|&c| c == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Inserts, deletes or changes a few lines at the start, the middle or the end.
pub(super) fn edit_text(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let mut lines = lines(text);
    let crlf = text.windows(2).any(|pair| pair == b"\r\n");
    let ending: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    for _ in 0..1 + rng.below(3) {
        let at = match rng.below(3) {
            0 => 0,
            1 => lines.len() / 2,
            _ => lines.len(),
        }
        .min(lines.len());
        match rng.below(4) {
            0 => {
                for _ in 0..1 + rng.below(3) {
                    let mut line = rng.pick(&WORDS).as_bytes().to_vec();
                    line.extend_from_slice(ending);
                    lines.insert(at, line);
                }
            }
            1 if !lines.is_empty() => {
                let at = at.min(lines.len() - 1);
                let count = (1 + rng.below(3)).min(lines.len() - at);
                lines.drain(at..at + count);
            }
            2 if !lines.is_empty() => {
                let at = at.min(lines.len() - 1);
                let keep_end = lines[at].ends_with(b"\n");
                let mut line = format!("changed {}", rng.below(1000)).into_bytes();
                if keep_end {
                    line.extend_from_slice(ending);
                }
                lines[at] = line;
            }
            _ => {
                // Add or take away the final newline.
                if let Some(last) = lines.last_mut() {
                    if last.ends_with(b"\n") {
                        last.pop();
                        if last.ends_with(b"\r") {
                            last.pop();
                        }
                    } else {
                        last.extend_from_slice(ending);
                    }
                }
            }
        }
    }
    lines.concat()
}

/// One random change; `false` when none could be made.
pub(super) fn random_edit(rng: &mut Rng, state: &mut State) -> bool {
    let paths: Vec<String> = state.keys().cloned().collect();
    let Some(path) = (!paths.is_empty()).then(|| rng.pick(&paths).clone()) else {
        let path = random_path(rng);
        state.insert(path, random_entry(rng));
        return true;
    };
    let entry = state[&path].clone();
    match rng.below(14) {
        0..=3 if entry.is_text() => {
            let edited = edit_text(rng, &entry.data);
            state.get_mut(&path).unwrap().data = edited;
        }
        4 => {
            let new = random_path(rng);
            if !can_add(state, &new) {
                return false;
            }
            state.insert(new, random_entry(rng));
        }
        5 => {
            state.remove(&path);
        }
        6 if matches!(entry.mode, REGULAR | EXECUTABLE) => {
            state.get_mut(&path).unwrap().data.clear()
        }
        7 => return rename(rng, state, path, entry),
        8 => return copy(rng, state, entry),
        9 => {
            let file = state.get_mut(&path).unwrap();
            file.mode = match file.mode {
                REGULAR => EXECUTABLE,
                EXECUTABLE => REGULAR,
                SYMLINK => REGULAR,
                _ => SYMLINK,
            };
            if file.mode == SYMLINK || entry.mode == GITLINK {
                file.data = link_target(rng);
            }
        }
        10 => return swap_folder_and_file(rng, state, &path),
        11 if entry.mode == REGULAR && entry.data.contains(&0) => {
            let mut data = entry.data.clone();
            let at = rng.below(data.len());
            data[at] ^= 0x5a;
            if rng.chance(50) {
                data.extend_from_slice(&random_binary(rng));
            }
            state.get_mut(&path).unwrap().data = data;
        }
        12 if entry.mode == GITLINK => {
            state.get_mut(&path).unwrap().data =
                format!("{:040x}", rng.next() as u128 * 0x1_0000_0003 + 7).into_bytes();
        }
        _ => {
            let file = state.get_mut(&path).unwrap();
            *file = random_entry(rng);
        }
    }
    true
}

/// A rename of `path` (holding `entry`), sometimes with an edit; `false` when the new path
/// cannot hold a file.
fn rename(rng: &mut Rng, state: &mut State, path: String, entry: Entry) -> bool {
    let new = random_path(rng);
    state.remove(&path);
    if !can_add(state, &new) {
        state.insert(path, entry);
        return false;
    }
    let mut moved = entry;
    if moved.is_text() && rng.chance(50) {
        moved.data = edit_text(rng, &moved.data);
    }
    state.insert(new, moved);
    true
}

/// A copy of `entry` with an edit; `false` when the new path cannot hold a file.
fn copy(rng: &mut Rng, state: &mut State, entry: Entry) -> bool {
    let new = random_path(rng);
    if !can_add(state, &new) {
        return false;
    }
    let mut copy = entry;
    if copy.is_text() {
        copy.data = edit_text(rng, &copy.data);
    }
    state.insert(new, copy);
    true
}

/// A folder replaced by a file of the same name, or a file by a folder; `false` when the folder
/// cannot become a file.
fn swap_folder_and_file(rng: &mut Rng, state: &mut State, path: &str) -> bool {
    if let Some((folder, _)) = path.rsplit_once('/') {
        let folder = folder.to_owned();
        let prefix = format!("{folder}/");
        state.retain(|key, _| !key.starts_with(&prefix));
        if !can_add(state, &folder) {
            return false;
        }
        state.insert(folder, random_entry(rng));
    } else {
        state.remove(path);
        state.insert(format!("{path}/inside"), random_entry(rng));
    }
    true
}

/// A state with one to three random changes made, different from `state`.
pub(super) fn changed(rng: &mut Rng, state: &State) -> State {
    loop {
        let mut next = state.clone();
        for _ in 0..1 + rng.below(3) {
            random_edit(rng, &mut next);
        }
        if next != *state && !next.is_empty() && is_valid(&next) {
            return next;
        }
    }
}

pub(super) const NAMES: [(&str, &str); 6] = [
    ("Ada Lovelace", "ada@example.org"),
    ("Jörg Müller", "joerg@example.org"),
    ("O'Brien, Séan", "sean@example.org"),
    ("李小龍", "lee@example.org"),
    ("X", "x@example.org"),
    ("Ann-Marie Dash", "dash@example.org"),
];
pub(super) const OFFSETS: [i32; 8] = [-720, -420, -210, 0, 60, 330, 345, 780];
pub(super) const MESSAGES: [&str; 10] = [
    "fix the thing",
    "[docs] a bracketed subject",
    "Re: a reply subject\n\nwith a body",
    "subject\n\nbody line\n--- a line that ends the message\nafter it",
    "subject\n\nFrom: In Body <inbody@example.org>\n\nbody after an in-body header",
    "subject with trailing spaces   \n\n\n\nbody after blank lines  \t",
    "subject\n\nbody with a non-breaking space at the end\u{a0}",
    "a very long subject line that goes on and on and on so that format-patch folds it",
    "subject\n\nSigned-off-by: Ada Lovelace <ada@example.org>",
    "subject\n\n    indented code\n\ttabbed\n---not a break",
];

pub(super) fn random_author(rng: &mut Rng) -> Author {
    let (name, email) = *rng.pick(&NAMES);
    Author {
        name: name.to_owned(),
        email: email.to_owned(),
        seconds: 1_000_000_000 + (rng.next() % 800_000_000) as i64,
        offset_minutes: *rng.pick(&OFFSETS),
    }
}
