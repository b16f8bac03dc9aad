//! The operations layer: what each command does, in terms of the pipeline stages.

mod attached;
mod attaching;
pub mod build;
mod build_request;
pub mod family;
pub mod lock;
mod normalizing;
pub mod patch;
pub mod pin_bump;
pub mod pin_list;
pub mod pin_outdated;
mod platforms;
pub mod pull;
mod rebuild;
pub mod recover;
pub mod render;
pub mod report;
pub mod sign_blob;
pub mod verify_digest;

pub use build::build;
pub use lock::lock;
pub use patch::patch;
pub use pin_bump::pin_bump;
pub use pin_list::pin_list;
pub use pin_outdated::pin_outdated;
pub use pull::pull;
pub use recover::recover;
pub use render::render;
pub use report::report;
pub use verify_digest::verify_digest;
