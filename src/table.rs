//! Plain-text tables and notes for the terminal: left-aligned columns separated by two spaces,
//! fitted to the terminal's width (at most [`MAX_WIDTH`]) by wrapping the widest cells within
//! their columns, so that nothing is cut and nothing runs past the edge.

/// The widest forge's tables, notes and progress lines get, as its help: wider lines are hard
/// to read even on a wide terminal.
pub const MAX_WIDTH: usize = 100;

/// The fewest columns a wrapped cell keeps, so that a narrow terminal still shows words.
const MIN_COLUMN: usize = 8;

/// A column up to this wide (a check's name, a version) keeps its cells whole until every
/// wider column has been narrowed to its longest word.
const SHORT_COLUMN: usize = 16;

/// The width to fit: `COLUMNS` when set to a number, else the terminal's (stdout's, then
/// stderr's), else [`MAX_WIDTH`]; never more than [`MAX_WIDTH`] nor less than 40.
pub fn width() -> usize {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok());
    let terminal = || {
        terminal_size::terminal_size_of(std::io::stdout())
            .or_else(|| terminal_size::terminal_size_of(std::io::stderr()))
            .map(|(terminal_size::Width(width), _)| usize::from(width))
    };
    columns
        .or_else(terminal)
        .unwrap_or(MAX_WIDTH)
        .clamp(40, MAX_WIDTH)
}

/// `header` and `rows` as aligned columns fitted to [`width`]; the last column is not padded.
pub fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    fit(header, rows, width())
}

/// `header` and `rows` as aligned columns, each line at most `width` characters where the
/// headers allow: while the table is too wide, the widest column is narrowed, and a cell wider
/// than its column wraps onto further lines of its row (at a space, else after the last of
/// `/:,;@`, else after the last of `-_.`, else anywhere). Header cells never wrap.
pub fn fit<const N: usize>(header: [&str; N], rows: &[[String; N]], width: usize) -> String {
    fit_sections(
        header,
        &[Section {
            heading: None,
            rows: rows.to_vec(),
        }],
        width,
    )
}

/// Labelled values, one `(label, head, tail)` an entry, the values aligned after the widest
/// label: `head tail` on the label's line when that fits [`width`], else the tail on a line of
/// its own under the head (a digest and its size, a patch and its author), wrapped if need be.
pub fn labelled(entries: &[(&str, String, String)]) -> String {
    labelled_in(entries, width())
}

fn labelled_in(entries: &[(&str, String, String)], width: usize) -> String {
    let label = entries
        .iter()
        .map(|(label, _, _)| label.chars().count())
        .max()
        .unwrap_or(0);
    let room = width.saturating_sub(label + 2).max(MIN_COLUMN);
    let mut out = String::new();
    for (name, head, tail) in entries {
        let whole = format!("{head} {tail}");
        let values = if whole.trim_end().chars().count() <= room {
            vec![whole.trim_end().to_owned()]
        } else {
            let mut values = wrap_cell(head, room);
            if !tail.is_empty() {
                values.extend(wrap_cell(tail, room));
            }
            values
        };
        for (at, value) in values.iter().enumerate() {
            let name = if at == 0 { *name } else { "" };
            push_line(&mut out, format!("{name:<label$}  {value}").trim_end(), 0);
        }
    }
    out
}

/// Rows of a table that share what a heading line before them says (a node, a registry).
pub struct Section<const N: usize> {
    /// The line before the rows, flush left; none continues the section before.
    pub heading: Option<String>,
    /// The rows.
    pub rows: Vec<[String; N]>,
}

/// Sections of one table under one header, their columns aligned across all of them and
/// fitted as [`fit`] fits; each heading is a line of its own, cut to `width`.
pub fn fit_sections<const N: usize>(
    header: [&str; N],
    sections: &[Section<N>],
    width: usize,
) -> String {
    let rows = sections.iter().flat_map(|section| &section.rows);
    let widths = column_widths(header, rows, width);
    let mut out = String::new();
    push_row(&mut out, header, &widths);
    for section in sections {
        if let Some(heading) = &section.heading {
            out.push_str(&cut(heading, width));
            out.push('\n');
        }
        for row in &section.rows {
            push_row(&mut out, row.each_ref().map(String::as_str), &widths);
        }
    }
    out
}

/// Each column's width: its widest cell, then, while the table is wider than `width`, the
/// widest column narrowed one at a time: first no narrower than its longest word nor a short
/// column at all (so a column of prose wraps between words before a reference or a digest is
/// broken, and a label stays on one line), then down to its header (and [`MIN_COLUMN`]).
fn column_widths<'a, const N: usize>(
    header: [&str; N],
    rows: impl Iterator<Item = &'a [String; N]>,
    width: usize,
) -> [usize; N] {
    let mut widths = header.map(|cell| cell.chars().count());
    let mut words = [0; N];
    for row in rows {
        for (column, cell) in row.iter().enumerate() {
            widths[column] = widths[column].max(cell.chars().count());
            let longest = cell.split(' ').map(|word| word.chars().count()).max();
            words[column] = words[column].max(longest.unwrap_or(0));
        }
    }
    let headers = header.map(|cell| cell.chars().count().max(MIN_COLUMN));
    // A column as narrow as a label keeps its cells whole until the wide ones have given way.
    let words = std::array::from_fn::<_, N, _>(|column| {
        words[column]
            .max(headers[column])
            .max(widths[column].min(SHORT_COLUMN))
    });
    let total = |widths: &[usize; N]| widths.iter().sum::<usize>() + 2 * N.saturating_sub(1);
    for floors in [words, headers] {
        while total(&widths) > width {
            let Some(widest) = (0..N)
                .filter(|&column| widths[column] > floors[column])
                .max_by_key(|&column| (widths[column], std::cmp::Reverse(column)))
            else {
                break;
            };
            widths[widest] -= 1;
        }
    }
    widths
}

/// One row's lines: each cell wrapped within its column, the last column unpadded.
fn push_row<const N: usize>(out: &mut String, cells: [&str; N], widths: &[usize; N]) {
    let mut pieces =
        std::array::from_fn::<_, N, _>(|column| wrap_cell(cells[column], widths[column]));
    let height = pieces.iter().map(Vec::len).max().unwrap_or(1);
    for piece in &mut pieces {
        piece.resize(height, String::new());
    }
    for row in 0..height {
        let mut text = String::new();
        for (column, piece) in pieces.iter().enumerate() {
            let cell = &piece[row];
            text.push_str(cell);
            if column + 1 < N {
                text.push_str(&" ".repeat(widths[column] - cell.chars().count() + 2));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
}

/// `text` in lines of at most `width` characters, broken as [`fit`] breaks a cell; an empty
/// text is one empty line.
pub fn wrap_cell(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while rest.len() > width {
        let window = &rest[..=width];
        let cut = match window.iter().rposition(|c| *c == ' ') {
            Some(space) if space > 0 => Cut::Space(space),
            _ => match mark(&window[..width], "/:,;@").or_else(|| mark(&window[..width], "-_.")) {
                Some(mark) => Cut::After(mark + 1),
                None => Cut::After(width),
            },
        };
        let (line, next) = match cut {
            Cut::Space(space) => (&rest[..space], space + 1),
            Cut::After(end) => (&rest[..end], end),
        };
        lines.push(line.iter().collect::<String>().trim_end().to_owned());
        rest.drain(..next);
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
    }
    lines.push(rest.into_iter().collect());
    lines
}

/// Where in `line` the last of `marks` is, if not at its start.
fn mark(line: &[char], marks: &str) -> Option<usize> {
    line.iter()
        .rposition(|c| marks.contains(*c))
        .filter(|&at| at > 0)
}

enum Cut {
    /// Break at the space at this index, which is dropped.
    Space(usize),
    /// Break before this index.
    After(usize),
}

/// `text` as prose wrapped to `width` at spaces, every line after the first indented by
/// `indent` spaces; a word longer than a line stays whole.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|word| !word.is_empty()) {
        let start = if out.is_empty() { 0 } else { indent };
        if !line.is_empty() && start + line.chars().count() + 1 + word.chars().count() > width {
            push_line(&mut out, &line, start);
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    let start = if out.is_empty() { 0 } else { indent };
    push_line(&mut out, &line, start);
    out
}

fn push_line(out: &mut String, line: &str, indent: usize) {
    out.push_str(&" ".repeat(indent));
    out.push_str(line);
    out.push('\n');
}

/// `text` on one line of at most `width` characters, cut with `…` when longer.
pub fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(width.saturating_sub(1)).collect();
        format!("{kept}…")
    }
}

/// `text` with every `sha256:` digest and every 40-hex-digit git commit cut to its first 12
/// hex digits.
pub fn short_ids(text: &str) -> String {
    const PREFIX: &str = "sha256:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(PREFIX) {
        let after = &rest[start + PREFIX.len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        out.push_str(&short_commits(&rest[..start]));
        out.push_str(PREFIX);
        if hex == 64 {
            out.push_str(&after[..12]);
        } else {
            out.push_str(&after[..hex]);
        }
        rest = &after[hex..];
    }
    out.push_str(&short_commits(rest));
    out
}

/// `text` with every word of exactly 40 hex digits (a git commit) cut to its first 12.
fn short_commits(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.len() == 40 && word.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            out.push_str(&word[..12]);
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::{cut, fit, labelled_in, wrap};

    fn rows<const N: usize>(rows: &[[&str; N]]) -> Vec<[String; N]> {
        rows.iter().map(|row| row.map(str::to_owned)).collect()
    }

    #[test]
    fn pads_every_column_but_the_last() {
        let rows = rows(&[["flashinfer", "0.6.14"], ["nccl", "2.28.9"]]);
        assert_eq!(
            fit(["NAME", "VERSION"], &rows, 100),
            "NAME        VERSION\nflashinfer  0.6.14\nnccl        2.28.9\n"
        );
    }

    #[test]
    fn a_table_wider_than_the_terminal_wraps_its_widest_cells_within_their_columns() {
        let rows = rows(&[
            [
                "deepgemm",
                "a6b593d",
                "https://github.com/deepseek-ai/DeepGEMM.git nv_dev",
            ],
            ["nccl", "2.28.9", "in base, asserted by the nccl probe"],
        ]);
        let table = fit(["NAME", "VERSION", "SOURCE"], &rows, 40);
        let under = " ".repeat(19);
        assert_eq!(
            table,
            format!(
                "NAME      VERSION  SOURCE\n\
                 deepgemm  a6b593d  https://github.com/\n\
                 {under}deepseek-ai/\n\
                 {under}DeepGEMM.git nv_dev\n\
                 nccl      2.28.9   in base, asserted by\n\
                 {under}the nccl probe\n"
            )
        );
        assert!(
            table.lines().all(|line| line.chars().count() <= 40),
            "{table}"
        );
    }

    #[test]
    fn the_widest_column_gives_way_first_and_headers_never_wrap() {
        let long = "x".repeat(60);
        let rows = rows(&[["a", long.as_str(), "short"]]);
        let table = fit(["CHECK", "SUBJECT", "EXPECTED"], &rows, 50);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            format!("CHECK  SUBJECT{}  EXPECTED", " ".repeat(26))
        );
        assert!(
            lines.iter().all(|line| line.chars().count() <= 50),
            "{table}"
        );
        assert_eq!(lines.len(), 3, "{table}");
    }

    #[test]
    fn a_column_of_prose_wraps_between_words_before_a_reference_is_broken() {
        let rows = rows(&[[
            "tag",
            "127.0.0.1:5000/forge-journey/tester-81234:2026-07-08-offline",
            "a moved tag names another image than the one recorded for it",
        ]]);
        let table = fit(["CHECK", "SUBJECT", "NOTE"], &rows, 100);
        assert_eq!(
            table,
            "CHECK  SUBJECT                                                       NOTE\n\
             tag    127.0.0.1:5000/forge-journey/tester-81234:2026-07-08-offline  a moved tag names another image\n\
             \x20                                                                    than the one recorded for it\n"
        );
        let narrow = fit(["CHECK", "SUBJECT", "NOTE"], &rows, 70);
        assert!(
            narrow
                .lines()
                .nth(1)
                .is_some_and(|line| line.contains("tester-81234: "))
                && narrow
                    .lines()
                    .nth(2)
                    .is_some_and(|line| line.trim_start().starts_with("2026-07-08-offline ")),
            "a reference breaks after its last `/` or `:` before a `-`:\n{narrow}"
        );
    }

    #[test]
    fn a_short_column_of_labels_stays_whole_while_a_wide_one_gives_way() {
        let subject = format!("127.0.0.1:5000/{}:2026-07-08-offline", "r".repeat(40));
        let rows = rows(&[
            ["tags agree", "latest, 2026-07-08-offline", "one image"],
            ["tag", subject.as_str(), "sha256:111111111111"],
        ]);
        let table = fit(["CHECK", "SUBJECT", "EXPECTED"], &rows, 90);
        assert!(
            table
                .lines()
                .nth(1)
                .is_some_and(|line| line.starts_with("tags agree  ")),
            "{table}"
        );
        assert!(
            table.lines().all(|line| line.chars().count() <= 90),
            "{table}"
        );
    }

    #[test]
    fn a_labelled_value_too_long_for_its_line_puts_its_tail_on_the_next() {
        let entries = [
            ("tag", "r:latest".to_owned(), "(moving)".to_owned()),
            (
                "patch",
                "patches/pr4/0001-sm12x-feature-detect.patch".to_owned(),
                "by Mira Castellanos <mira@example.org>".to_owned(),
            ),
        ];
        assert_eq!(
            labelled_in(&entries, 60),
            "tag    r:latest (moving)\n\
             patch  patches/pr4/0001-sm12x-feature-detect.patch\n\
             \x20      by Mira Castellanos <mira@example.org>\n"
        );
    }

    #[test]
    fn prose_wraps_at_spaces_with_a_hanging_indent() {
        assert_eq!(
            wrap(
                "tilelang: group tvm moves as one: apache-tvm-ffi stays",
                24,
                2
            ),
            "tilelang: group tvm\n  moves as one:\n  apache-tvm-ffi stays\n"
        );
        assert_eq!(wrap("short", 24, 2), "short\n");
    }

    #[test]
    fn a_cut_line_ends_in_an_ellipsis_within_the_width() {
        assert_eq!(cut("Pulling fs layer", 20), "Pulling fs layer");
        assert_eq!(cut("Downloading [=====>   ]", 12), "Downloading…");
        assert_eq!(cut("Downloading [=====>   ]", 12).chars().count(), 12);
    }
}
