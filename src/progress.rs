//! The engine's progress events in, drawn on stderr out: an indicatif display of the running
//! steps on a terminal, plain timestamped lines in a log, nothing when quiet.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::steps::{Event, StepState};
use crate::printer::Printer;
use crate::redact::text as redact;

/// The status a daemon reports of a layer while it downloads it.
const DOWNLOADING: &str = "Downloading";

/// The progress display the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live display on a terminal, plain lines otherwise.
    Auto,
    /// Plain timestamped lines.
    Plain,
    /// Nothing but the result.
    Quiet,
}

/// Draws build and push progress on stderr.
#[derive(Debug)]
pub enum Display {
    /// Live bars for the running steps, a line for each finished one.
    Terminal(Terminal),
    /// One timestamped line per event.
    Plain(Plain),
    /// Nothing.
    Silent,
}

/// The live terminal display.
#[derive(Debug)]
pub struct Terminal {
    multi: MultiProgress,
    bars: HashMap<String, ProgressBar>,
    /// A pull's layers on their way, by reference and layer.
    layers: HashMap<(String, String), LayerBar>,
    verbose: bool,
    /// Whether to paint, as `--color` and the environment say.
    color: bool,
}

/// One layer of a pull drawn live: its bar, when its bytes began to move, how many it
/// downloaded.
#[derive(Debug)]
struct LayerBar {
    bar: ProgressBar,
    status: String,
    /// Whether the daemon said how many bytes the state moves in all.
    sized: bool,
    started: Instant,
    downloaded: u64,
}

/// How a layer's bar reads: its state and bytes, of how many when known, and their rate.
fn layer_style(sized: bool) -> ProgressStyle {
    let template = if sized {
        "{prefix} {msg:11} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}"
    } else {
        "{prefix} {msg:11} {binary_bytes} {binary_bytes_per_sec}"
    };
    ProgressStyle::with_template(template).expect("a valid template")
}

/// The plain log display.
#[derive(Debug)]
pub struct Plain {
    printer: Printer,
    started: Instant,
    verbose: bool,
}

impl Display {
    /// The display for `mode`: `Auto` draws live only when stderr is a terminal.
    pub fn new(mode: ProgressMode, printer: &Printer, verbose: bool) -> Self {
        match mode {
            ProgressMode::Quiet => Display::Silent,
            ProgressMode::Auto if printer.is_terminal() => Display::Terminal(Terminal {
                multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                bars: HashMap::new(),
                layers: HashMap::new(),
                verbose,
                color: printer.paints(),
            }),
            ProgressMode::Auto | ProgressMode::Plain => Display::Plain(Plain {
                printer: printer.clone(),
                started: Instant::now(),
                verbose,
            }),
        }
    }

    /// Draws one event of a build or a push.
    pub fn event(&mut self, event: Event<'_>) {
        match self {
            Display::Terminal(terminal) => terminal.event(event),
            Display::Plain(plain) => plain.event(event),
            Display::Silent => {}
        }
    }

    /// Clears whatever is still drawn.
    pub fn finish(&mut self) {
        if let Display::Terminal(terminal) = self {
            for (_, bar) in terminal.bars.drain() {
                bar.finish_and_clear();
            }
            for (_, layer) in terminal.layers.drain() {
                layer.bar.finish_and_clear();
            }
        }
    }
}

impl Terminal {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Step {
                id,
                name,
                state: StepState::Running,
            } => {
                let bar = self.multi.add(ProgressBar::new_spinner());
                let template = if self.color {
                    "{spinner:.cyan} {prefix} {wide_msg:.dim}"
                } else {
                    "{spinner} {prefix} {wide_msg}"
                };
                bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
                bar.set_prefix(redact(name).into_owned());
                bar.enable_steady_tick(Duration::from_millis(120));
                self.bars.insert(id.to_owned(), bar);
            }
            Event::Step { id, name, state } => {
                if let Some(bar) = self.bars.remove(id) {
                    bar.finish_and_clear();
                }
                let (verb, code) = match state {
                    StepState::Cached => ("Cached", "1;36"),
                    StepState::Done => ("Done", "1;32"),
                    _ => ("Failed", "1;31"),
                };
                let verb = if self.color {
                    format!("\x1b[{code}m{verb:>12}\x1b[0m")
                } else {
                    format!("{verb:>12}")
                };
                let _ = self.multi.println(format!("{verb} {}", redact(name)));
            }
            Event::Output { id, line, .. } => {
                let line = redact(line);
                if let Some(bar) = self.bars.get(id) {
                    bar.set_message(line.clone().into_owned());
                }
                if self.verbose {
                    let _ = self.multi.println(format!("             | {line}"));
                }
            }
            // A free-standing line under the status verbs' column.
            Event::Push { reference, status } | Event::Pull { reference, status } => {
                let line = crate::table::short_ids(&format!("{reference}: {status}"));
                let line = crate::table::cut(&line, crate::table::width() - 13);
                let _ = self.multi.println(redact(&format!("             {line}")));
            }
            Event::Layer {
                reference,
                layer,
                status,
                current,
                total,
            } => self.layer(reference, layer, status, (current, total)),
        }
    }

    /// Draws a pull's layer: a bar with its bytes and their rate while they move (as docker's
    /// and buildx's displays show them), then one line of what it moved once it is complete.
    fn layer(&mut self, reference: &str, layer: &str, status: &str, bytes: (u64, Option<u64>)) {
        let key = (reference.to_owned(), layer.to_owned());
        if ["Pull complete", "Already exists"].contains(&status) {
            let Some(done) = self.layers.remove(&key) else {
                return;
            };
            done.bar.finish_and_clear();
            if done.downloaded > 0 {
                let seconds = done.started.elapsed().as_secs_f64().max(0.001);
                let rate = crate::pipeline::human_size((done.downloaded as f64 / seconds) as u64);
                let line = crate::table::short_ids(&format!(
                    "{reference}: {layer} {status}: {} in {seconds:.1} s, {rate}/s",
                    crate::pipeline::human_size(done.downloaded)
                ));
                let line = crate::table::cut(&line, crate::table::width() - 13);
                let _ = self.multi.println(redact(&format!("             {line}")));
            }
            return;
        }
        let (current, total) = bytes;
        let width = crate::table::width();
        // 13 columns of indent, `: `, the layer's 12, the state's 11, `1023.9 MiB/1023.9 MiB`
        // and `1023.9 MiB/s` with their spaces: 77 columns, and the reference in what is left.
        let entry = self.layers.entry(key).or_insert_with(|| {
            let name = crate::table::short_ids(reference);
            let name = crate::table::cut(&name, width.saturating_sub(77).max(12));
            let bar = ProgressBar::new(0)
                .with_style(layer_style(total.is_some()))
                .with_prefix(format!("             {name}: {layer}"))
                .with_message(status.to_owned());
            LayerBar {
                bar: self.multi.add(bar),
                status: status.to_owned(),
                sized: total.is_some(),
                started: Instant::now(),
                downloaded: 0,
            }
        });
        if entry.status != status || entry.sized != total.is_some() {
            if entry.status != status {
                // Extracting starts its bytes again: the rate is of the new state's.
                entry.bar.reset();
            }
            entry.bar.set_style(layer_style(total.is_some()));
            entry.bar.set_message(status.to_owned());
            entry.status = status.to_owned();
            entry.sized = total.is_some();
        }
        if let Some(total) = total {
            entry.bar.set_length(total);
        }
        entry.bar.set_position(current);
        if status == DOWNLOADING {
            entry.downloaded = entry.downloaded.max(total.unwrap_or(current).max(current));
        }
    }
}

impl Plain {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Step { name, state, .. } => {
                let word = match state {
                    StepState::Running => "running",
                    StepState::Cached => "cached",
                    StepState::Done => "done",
                    StepState::Failed => "FAILED",
                };
                self.print(&format!("{name} {word}"));
            }
            Event::Output { line, .. } if self.verbose || !line.is_empty() => {
                self.print(&format!("  | {line}"));
            }
            Event::Output { .. } => {}
            Event::Push { reference, status } | Event::Pull { reference, status } => {
                self.print(&crate::table::short_ids(&format!("{reference}: {status}")))
            }
            // A log keeps to the states: byte counts would flood it.
            Event::Layer { .. } => {}
        }
    }

    /// One timestamped line; what does not fit the terminal goes on further lines under its
    /// text.
    fn print(&self, text: &str) {
        let now = chrono::Utc::now().format("%H:%M:%S%.3f");
        let elapsed = self.started.elapsed().as_secs_f64();
        let stamp = format!("[{now} {elapsed:>7.1}s] ");
        let indent = stamp.chars().count();
        let width = crate::table::width().saturating_sub(indent).max(20);
        let mut out = String::new();
        for (at, line) in crate::table::wrap_cell(text, width).into_iter().enumerate() {
            if at == 0 {
                out.push_str(&stamp);
            } else {
                out.push_str(&" ".repeat(indent));
            }
            out.push_str(&line);
            out.push('\n');
        }
        self.printer.stderr(out);
    }
}
