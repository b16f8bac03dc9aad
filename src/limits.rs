//! The bounds forge puts on work an input can make it do, in one place: a template that loops
//! or a server that never stops sending ends in an error naming the bound, not in a hang.

/// How much work a template may do (minijinja's fuel): far more than a recipe's templates
/// need, far less than a loop that would hold every command up.
pub const TEMPLATE_FUEL: u64 = 1_000_000;

/// The largest file forge downloads to hash it (a wheel of a set downloaded by URL):
/// `FORGE_DOWNLOAD_LIMIT` bytes, else 8 GiB, several times the largest CUDA wheels.
pub fn download_limit() -> u64 {
    std::env::var("FORGE_DOWNLOAD_LIMIT")
        .ok()
        .and_then(|bytes| bytes.trim().parse::<u64>().ok())
        .filter(|bytes| *bytes > 0)
        .unwrap_or(8 * 1024 * 1024 * 1024)
}

/// The largest file a patch may change: the patch stage holds the file it changes in memory, as
/// `git apply` does, while every file a series leaves alone streams. 128 MiB is far past any
/// source file, and keeps a patch's copies of it within a small address space.
pub const PATCH_TARGET_LIMIT: u64 = 128 * 1024 * 1024;

/// The largest key file forge reads (`--sign-key`, `--key`): 64 KiB, a hundred times a PEM key
/// pair.
pub const KEY_FILE_LIMIT: u64 = 64 * 1024;
