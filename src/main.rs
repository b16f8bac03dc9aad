use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = forge::cli::Cli::parse();
    forge::commands::run(cli).into()
}
