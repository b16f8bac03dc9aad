use clap::Parser;

fn main() -> std::process::ExitCode {
    restore_interrupt();
    forge::completion::answer_if_asked();
    let cli = forge::cli::Cli::parse();
    forge::commands::run(cli).into()
}

/// Ctrl-C stops forge even when it was started from a script that ignores SIGINT (as a
/// non-interactive shell does for `command &`): forge's own writes are atomic or hold signals
/// back until they are done, so stopping at once is always safe, and a build in progress
/// catches the signal itself to put back what it moved.
fn restore_interrupt() {
    // SAFETY: setting a signal's disposition to its default has no preconditions, and no
    // other thread exists yet.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}
