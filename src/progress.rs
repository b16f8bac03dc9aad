//! The engine's progress events in, drawn on stderr out: an indicatif display of the running
//! steps on a terminal, plain timestamped lines in a log, nothing when quiet.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::steps::{Event, StepState};
use crate::printer::Printer;
use crate::redact::text as redact;

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
    verbose: bool,
    /// Whether to paint, as `--color` and the environment say.
    color: bool,
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
