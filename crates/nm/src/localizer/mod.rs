//! Localization: bringing a container's resources onto this node.
//!
//! `file:` URLs (the node and the submitter share a file system, or the
//! file was staged on this machine) and `hdfs://` URLs are served; HDFS is
//! read natively (through `spindle_fs`), as the application's user for
//! PRIVATE and APPLICATION resources and as the node's for PUBLIC ones.
//! Any other scheme is refused with the scheme named. Each resource is
//! checked against its source (size and modification time in ms, as the
//! launch context states them) and placed in a cache:
//!
//! | visibility  | cache                                                      |
//! |-------------|------------------------------------------------------------|
//! | PUBLIC      | `<local-dir>/filecache/<n>/<name>`                         |
//! | PRIVATE     | `<local-dir>/usercache/<user>/filecache/<n>/<name>`        |
//! | APPLICATION | `<local-dir>/usercache/<user>/appcache/<app>/filecache/<n>/<name>` |
//!
//! The cache key is the scope plus (source path, size, timestamp, type), so
//! the containers of an application share one copy, and concurrent requests
//! for the same resource wait for the first one instead of copying again.
//! A FILE is copied (a directory recursively, its links kept as links; a
//! directory on HDFS up to 32 levels and 100,000 entries, every name checked); an
//! ARCHIVE is unpacked into a directory named like the resource (with the
//! checks of [`crate::unpack`]); a PATTERN jar has only the entries matching
//! its pattern unpacked and the jar itself kept in that directory too (other
//! PATTERN archives are unpacked whole, as Hadoop does).
//!
//! # Rules that keep localization safe
//!
//! - **Only regular files and directories** are localized: the source is
//!   opened once (without blocking, so a FIFO cannot hang the node), checked
//!   through that open handle, and copied or unpacked from it, so it cannot
//!   be swapped between the check and the copy. Devices, FIFOs and sockets
//!   are refused.
//! - **PUBLIC means readable by everyone**, as Hadoop's
//!   `FSDownload.isPublic` decides: the file must be readable by others (a
//!   directory readable and searchable by others, and so everything in it,
//!   recursively), and every directory above it searchable by others. The
//!   directories checked are those above the file's real location (links
//!   resolved), so a link in a public directory cannot publish a file kept
//!   in a private one. Otherwise the localization fails with Hadoop's
//!   message: "Resource … is not publicly accessible and as such cannot be
//!   part of the public cache."
//! - **Copies, never hard links.** A container's writes to its resource
//!   can never reach the source file, nor the copies of other scopes.
//! - **Read-only copies**, with Hadoop's modes: PUBLIC files `r-xr-xr-x`
//!   and directories `rwxr-xr-x`; PRIVATE and APPLICATION files `r-x------`
//!   and directories `rwx------` (modes are set without following links).
//!   A container that does not own the copy (containers run as their user,
//!   the cache belongs to the node) cannot change it; one that runs as the
//!   node's user or as root can, so:
//! - **A shared copy that changed is not handed out again**: a cached copy
//!   is reused only while its inode, size, modification and change times
//!   and mode are what they were right after it was made (the change time
//!   moves with every write and `chmod`); a changed one is localized anew
//!   for the next container. For a directory (an unpacked archive) only the
//!   directory itself is compared; the files in it rely on their modes.
//!
//! With `yarn.nodemanager.recovery.enabled`, every copy made is recorded in
//! the node's recovery records ([`crate::recovery`]) and unrecorded when
//! forgotten, and a restarted node takes back the recorded copies that
//! pass the same check ([`Localizer::restore`]).
//!
//! The files, by concern:
//! - `resource`: a resource as a launch context names it, and Hadoop's
//!   check of a source against it;
//! - `cache`: the [`Localizer`], its caches and their keys (`key`);
//! - `fetch`: a `file:` source, opened once and checked through the handle;
//! - `remote`: an `hdfs:` source, checked where it is and downloaded;
//! - `access`: who may read a source (PUBLIC: everyone; a container run as
//!   its own user: that user);
//! - `copy`: making a read-only copy with Hadoop's modes, its fingerprint,
//!   removing it;
//! - `retention`: the leases containers hold and the cache cleanup;
//! - `leftovers`: what a previous run left, moved aside and deleted at a
//!   start without recovery.

mod access;
mod cache;
mod copy;
mod fetch;
mod key;
mod leftovers;
mod remote;
mod resource;
mod retention;
#[cfg(test)]
mod test_support;

pub use crate::cache_entry::{CachedResource, Fingerprint, ResourceType, Scope};
pub use cache::{Localized, Localizer};
pub use leftovers::{
    clean_up_previous_run, delete_moved_aside, move_aside_app_logs, move_aside_local_dirs,
    moved_aside_app_logs, moved_aside_leftovers, CLEANED_AT_START,
};
pub use resource::{LocalResource, Visibility};
pub use retention::{Cleanup, Lease};
