//! Plain-text tables and notes for the terminal: left-aligned columns separated by two spaces,
//! fitted to the terminal's width (at most [`MAX_WIDTH`]) by wrapping the widest cells within
//! their columns, so that nothing is cut and nothing runs past the edge.

/// The widest forge's tables, notes and progress lines get, as its help: wider lines are hard
/// to read even on a wide terminal.
pub const MAX_WIDTH: usize = 100;

/// The fewest columns a wrapped cell keeps, so that a narrow terminal still shows words.
const MIN_COLUMN: usize = 8;

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
/// than its column wraps onto further lines of its row (at a space, else after `/:,;@-_.`,
/// else anywhere). Header cells never wrap.
pub fn fit<const N: usize>(header: [&str; N], rows: &[[String; N]], width: usize) -> String {
    let mut widths = header.map(|cell| cell.chars().count());
    for row in rows {
        for (column, cell) in widths.iter_mut().zip(row) {
            *column = (*column).max(cell.chars().count());
        }
    }
    let floors = header.map(|cell| cell.chars().count().max(MIN_COLUMN));
    let total = |widths: &[usize; N]| widths.iter().sum::<usize>() + 2 * N.saturating_sub(1);
    while total(&widths) > width {
        let Some(widest) = (0..N)
            .filter(|&column| widths[column] > floors[column])
            .max_by_key(|&column| (widths[column], std::cmp::Reverse(column)))
        else {
            break;
        };
        widths[widest] -= 1;
    }
    let mut out = String::new();
    let mut line = |cells: [&str; N]| {
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
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
    out
}

/// `text` in lines of at most `width` characters, broken as [`fit`] breaks a cell; an empty
/// text is one empty line.
fn wrap_cell(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while rest.len() > width {
        let window = &rest[..=width];
        let cut = match window.iter().rposition(|c| *c == ' ') {
            Some(space) if space > 0 => Cut::Space(space),
            _ => match window[..width]
                .iter()
                .rposition(|c| "/:,;@-_.".contains(*c))
            {
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

#[cfg(test)]
mod tests {
    use super::{cut, fit, wrap};

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
                 {under}deepseek-ai/DeepGEMM.\n\
                 {under}git nv_dev\n\
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
