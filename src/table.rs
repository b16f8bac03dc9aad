//! Plain-text tables for the terminal: left-aligned columns separated by two spaces.

/// `header` and `rows` as aligned columns, one line each; the last column is not padded.
pub fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; N]| {
        for (index, cell) in cells.iter().enumerate() {
            if index + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(widths[index] - cell.chars().count() + 2));
            }
        }
        out.push('\n');
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn pads_every_column_but_the_last() {
        let rows = [
            ["flashinfer".to_owned(), "0.6.14".to_owned()],
            ["nccl".to_owned(), "2.28.9".to_owned()],
        ];
        assert_eq!(
            super::table(["NAME", "VERSION"], &rows),
            "NAME        VERSION\nflashinfer  0.6.14\nnccl        2.28.9\n"
        );
    }
}
