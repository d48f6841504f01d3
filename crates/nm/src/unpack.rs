//! Unpacking ARCHIVE resources: zip and jar, tar, and gzip-compressed tar.
//!
//! Archives come from applications, and the node unpacks them with its own
//! rights. The rule: nothing an archive contains may make the node create,
//! change or link to anything outside the directory it is unpacked into, nor
//! leave a link there that leads out of it, however the links the archive
//! created are later followed (by the node, or by a container). Every entry
//! is checked against the tree as it really is on disk, not by its name
//! alone; the first entry that breaks the rule fails the whole archive
//! (the caller removes what was unpacked so far):
//!
//! 1. **Names** are relative, without `..` or NUL; `.` parts are dropped.
//! 2. **No writing through links.** Each entry is placed by walking its
//!    parent directories one at a time from an open handle on the root,
//!    never following a symbolic link (`openat` with `O_NOFOLLOW`): an entry
//!    whose parent path passes through a symbolic link, or through a file, is
//!    refused. Files are created new (`O_CREAT | O_EXCL | O_NOFOLLOW`); an
//!    earlier entry of the same name that is not a directory is removed
//!    first (never opened), and a directory is never replaced.
//! 3. **Symbolic links** must have a relative target made of some `..`
//!    followed only by names (`../../lib/libz.so.1`, `python3.11`), with no
//!    more `..` than the link has parent directories inside the tree. A `..`
//!    after a name is refused, because that name may itself be a link: with
//!    `l1 -> a/b/..` and `l2 -> l1/..`, each target looks inside the tree by
//!    its name, yet `l2` is the tree's parent. Under this rule every
//!    resolution stays inside: the leading `..` climb real directories (rule
//!    2 makes a link's parents real directories), and the names that follow
//!    only descend, into real directories or into links that obey the same
//!    rule.
//! 4. **Hard links** (tar) name a regular file unpacked before them, reached
//!    by the same no-follow walk from the root: never a symbolic link, a
//!    directory, or anything outside.
//! 5. **Devices, FIFOs, sockets** and unknown entry kinds are refused.
//!
//! Set-id and sticky bits are dropped; the owner can always read and write
//! what was unpacked, and enter its directories (so the node can delete it).
//! This is stricter than Hadoop's `FileUtil.unTar`/`unZip`, which compare
//! each entry's canonical path (following the links unpacked so far) with
//! the target directory's.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fchmod, fstatat, mkdirat, Mode, SFlag};
use nix::unistd::{fchown, linkat, symlinkat, unlinkat, Gid, UnlinkatFlags};

/// Archive formats recognised by file name, as Hadoop does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// `.zip` and `.jar`.
    Zip,
    /// `.tar`.
    Tar,
    /// `.tar.gz` and `.tgz`.
    TarGz,
}

impl ArchiveFormat {
    /// The format of a file named `name` (case-insensitive), if it is one.
    pub fn of(name: &str) -> Option<ArchiveFormat> {
        let n = name.to_ascii_lowercase();
        if n.ends_with(".zip") || n.ends_with(".jar") {
            Some(ArchiveFormat::Zip)
        } else if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
            Some(ArchiveFormat::TarGz)
        } else if n.ends_with(".tar") {
            Some(ArchiveFormat::Tar)
        } else {
            None
        }
    }
}

/// Why an archive could not be unpacked.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("{archive}: entry '{entry}' {problem}; the archive is refused")]
    UnsafeEntry {
        archive: String,
        entry: String,
        problem: String,
    },
    #[error("{archive} is not a valid {format} archive: {detail}")]
    Corrupt {
        archive: String,
        format: &'static str,
        detail: String,
    },
    #[error("cannot unpack {archive} into {dest}: {source}")]
    Io {
        archive: String,
        dest: String,
        #[source]
        source: io::Error,
    },
}

/// What was unpacked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    pub files: u64,
    pub dirs: u64,
    pub links: u64,
    pub bytes: u64,
}

/// Unpacks `archive` into `dest`, which is created if missing.
pub fn unpack(
    archive: &Path,
    format: ArchiveFormat,
    dest: &Path,
) -> Result<UnpackStats, UnpackError> {
    unpack_matching(archive, format, dest, None)
}

/// Unpacks the entries of `archive` whose whole name matches `keep` (all of them
/// when `keep` is `None`), as Hadoop does for PATTERN resources.
pub fn unpack_matching(
    archive: &Path,
    format: ArchiveFormat,
    dest: &Path,
    keep: Option<&regex::Regex>,
) -> Result<UnpackStats, UnpackError> {
    let shown = archive.display().to_string();
    let file = File::open(archive).map_err(|source| UnpackError::Io {
        archive: shown.clone(),
        dest: dest.display().to_string(),
        source,
    })?;
    unpack_file(file, &shown, format, dest, keep)
}

/// Unpacks the already opened archive `file` (named `shown` in errors); see
/// [`unpack_matching`].
pub fn unpack_file(
    file: File,
    shown: &str,
    format: ArchiveFormat,
    dest: &Path,
    keep: Option<&regex::Regex>,
) -> Result<UnpackStats, UnpackError> {
    let io_err = |source| UnpackError::Io {
        archive: shown.to_string(),
        dest: dest.display().to_string(),
        source,
    };
    fs::create_dir_all(dest).map_err(io_err)?;
    let root = Dir::open(dest).map_err(io_err)?;
    let mut u = Unpacker {
        archive: shown.to_string(),
        dest: dest.to_path_buf(),
        root,
        stats: UnpackStats::default(),
        keep: keep.cloned(),
    };
    let reader = BufReader::with_capacity(256 * 1024, file);
    match format {
        ArchiveFormat::Zip => u.zip(reader)?,
        ArchiveFormat::Tar => u.tar(reader)?,
        ArchiveFormat::TarGz => u.tar(flate2::read::GzDecoder::new(reader))?,
    }
    Ok(u.stats)
}

/// Checks an archive entry name and returns it as a relative path. `None`
/// means the entry names the root itself (e.g. `./`) and is skipped.
pub fn safe_entry_path(name: &str) -> Result<Option<PathBuf>, String> {
    if name.contains('\0') {
        return Err("contains a NUL byte".to_string());
    }
    if name.starts_with('/') {
        return Err("is an absolute path".to_string());
    }
    let mut out = PathBuf::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err("refers to a parent directory ('..')".to_string()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("is an absolute path".to_string())
            }
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Checks the target of a symbolic link at `link` (relative to the root)
/// against rule 3 of the module documentation.
pub fn check_link_target(link: &Path, target: &Path) -> Result<(), String> {
    let shown = target.display();
    if target.as_os_str().is_empty() {
        return Err("is a symbolic link with an empty target".to_string());
    }
    if target.as_os_str().as_bytes().contains(&0) {
        return Err("is a symbolic link whose target contains a NUL byte".to_string());
    }
    if target.has_root() {
        return Err(format!(
            "is a symbolic link to the absolute path '{shown}', outside the unpacked tree"
        ));
    }
    let parents = link.components().count().saturating_sub(1);
    let mut ups = 0usize;
    let mut named = false;
    for c in target.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if named => {
                return Err(format!(
                    "is a symbolic link to '{shown}', which has '..' after a name; such a \
                     target is refused because that name may be a link leading out of the \
                     unpacked tree"
                ))
            }
            Component::ParentDir => {
                ups += 1;
                if ups > parents {
                    return Err(format!(
                        "is a symbolic link to '{shown}', outside the unpacked tree"
                    ));
                }
            }
            Component::Normal(_) => named = true,
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "is a symbolic link to the absolute path '{shown}', outside the unpacked tree"
                ))
            }
        }
    }
    Ok(())
}

/// An open directory, walked without following symbolic links.
pub(crate) struct Dir {
    fd: OwnedFd,
}

/// Flags for opening a directory that must not be a link.
fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// What a name in a directory is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    Dir,
    File,
    Symlink,
    Other,
}

impl Dir {
    /// Opens `path`, which must be a directory and not a symbolic link
    /// (its parents may be links).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let fd = nix::fcntl::open(path, dir_flags(), Mode::empty()).map_err(errno_io)?;
        Ok(Dir { fd })
    }

    fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
        })
    }

    /// The child directory `name`, if it is a real directory.
    fn child(&self, name: &OsStr) -> Result<Dir, Errno> {
        openat(self.fd.as_fd(), name, dir_flags(), Mode::empty()).map(|fd| Dir { fd })
    }

    /// What `name` is, not following a link.
    pub(crate) fn kind(&self, name: &OsStr) -> io::Result<Kind> {
        match fstatat(self.fd.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(
                match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
                    SFlag::S_IFDIR => Kind::Dir,
                    SFlag::S_IFREG => Kind::File,
                    SFlag::S_IFLNK => Kind::Symlink,
                    _ => Kind::Other,
                },
            ),
            Err(Errno::ENOENT) => Ok(Kind::Missing),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Sets the mode of this directory.
    pub(crate) fn set_mode(&self, mode: u32) -> io::Result<()> {
        self.set_access(mode, None)
    }

    /// Sets the group (when given) and then the mode of this directory
    /// (a change of owner clears set-id bits, so the mode comes last).
    pub(crate) fn set_access(&self, mode: u32, group: Option<u32>) -> io::Result<()> {
        if let Some(gid) = group {
            fchown(self.fd.as_fd(), None, Some(Gid::from_raw(gid))).map_err(errno_io)?;
        }
        fchmod(self.fd.as_fd(), Mode::from_bits_truncate(mode)).map_err(errno_io)
    }

    /// Opens the child directory `name` (`Ok(None)` when it is a link or
    /// not a directory).
    pub(crate) fn subdir(&self, name: &OsStr) -> io::Result<Option<Dir>> {
        match self.child(name) {
            Ok(d) => Ok(Some(d)),
            Err(Errno::ELOOP | Errno::ENOTDIR) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Sets the group (when given) and then the mode of the regular file
    /// `name`, never through a link.
    pub(crate) fn set_file_access(
        &self,
        name: &OsStr,
        mode: u32,
        group: Option<u32>,
    ) -> io::Result<()> {
        let fd = openat(
            self.fd.as_fd(),
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno_io)?;
        if let Some(gid) = group {
            fchown(fd.as_fd(), None, Some(Gid::from_raw(gid))).map_err(errno_io)?;
        }
        fchmod(fd.as_fd(), Mode::from_bits_truncate(mode)).map_err(errno_io)
    }

    /// Creates the regular file `name`, which must not exist (a link there
    /// is not followed).
    pub(crate) fn create_file(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let fd = openat(
            self.fd.as_fd(),
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )
        .map_err(errno_io)?;
        Ok(File::from(fd))
    }
}

/// Why a walk down the tree stopped.
enum WalkError {
    /// A part of the path does not exist (and was not to be created).
    Missing,
    /// A part of the path is a symbolic link (named: the path up to it).
    Link(PathBuf),
    /// A part of the path is a file or something else that is not a
    /// directory.
    NotDir(PathBuf),
    Io(io::Error),
}

struct Unpacker {
    archive: String,
    dest: PathBuf,
    root: Dir,
    stats: UnpackStats,
    /// Only entries whose whole name matches are unpacked.
    keep: Option<regex::Regex>,
}

impl Unpacker {
    fn io(&self, source: io::Error) -> UnpackError {
        UnpackError::Io {
            archive: self.archive.clone(),
            dest: self.dest.display().to_string(),
            source,
        }
    }

    fn unsafe_entry(&self, entry: &str, problem: impl Into<String>) -> UnpackError {
        UnpackError::UnsafeEntry {
            archive: self.archive.clone(),
            entry: entry.to_string(),
            problem: problem.into(),
        }
    }

    fn corrupt(&self, format: &'static str, detail: impl std::fmt::Display) -> UnpackError {
        UnpackError::Corrupt {
            archive: self.archive.clone(),
            format,
            detail: detail.to_string(),
        }
    }

    /// The entry's relative path, or `None` when it is skipped (the root itself, or a
    /// name the PATTERN does not match).
    fn checked(&self, name: &str) -> Result<Option<PathBuf>, UnpackError> {
        if let Some(keep) = &self.keep {
            let whole = keep
                .find(name)
                .is_some_and(|m| m.start() == 0 && m.end() == name.len());
            if !whole {
                return Ok(None);
            }
        }
        safe_entry_path(name).map_err(|p| self.unsafe_entry(name, p))
    }

    /// Walks from the root down `rel`, each part a real directory (created
    /// when missing and `create`), never following a link.
    fn walk(&mut self, rel: &Path, create: bool) -> Result<Dir, WalkError> {
        let mut cur = self.root.try_clone().map_err(WalkError::Io)?;
        let mut so_far = PathBuf::new();
        for c in rel.components() {
            let part = c.as_os_str();
            so_far.push(part);
            let next = match cur.child(part) {
                Ok(d) => d,
                Err(Errno::ENOENT) if create => {
                    match mkdirat(cur.fd.as_fd(), part, Mode::from_bits_truncate(0o755)) {
                        Ok(()) => self.stats.dirs += 1,
                        Err(Errno::EEXIST) => {}
                        Err(e) => return Err(WalkError::Io(errno_io(e))),
                    }
                    cur.child(part).map_err(|e| match e {
                        Errno::ELOOP => WalkError::Link(so_far.clone()),
                        Errno::ENOTDIR => WalkError::NotDir(so_far.clone()),
                        e => WalkError::Io(errno_io(e)),
                    })?
                }
                Err(Errno::ENOENT) => return Err(WalkError::Missing),
                Err(Errno::ELOOP | Errno::ENOTDIR) => {
                    return Err(match cur.kind(part) {
                        Ok(Kind::Symlink) => WalkError::Link(so_far),
                        Ok(_) => WalkError::NotDir(so_far),
                        Err(e) => WalkError::Io(e),
                    })
                }
                Err(e) => return Err(WalkError::Io(errno_io(e))),
            };
            cur = next;
        }
        Ok(cur)
    }

    /// The directory that holds the entry `rel` (created as needed).
    fn parent_of(&mut self, rel: &Path, name: &str) -> Result<Dir, UnpackError> {
        let parent = rel.parent().unwrap_or(Path::new(""));
        self.walk(parent, true)
            .map_err(|e| self.walk_error(e, name, "would be written"))
    }

    fn walk_error(&self, e: WalkError, name: &str, doing: &str) -> UnpackError {
        match e {
            WalkError::Link(at) => self.unsafe_entry(
                name,
                format!("{doing} through the symbolic link '{}'", at.display()),
            ),
            WalkError::NotDir(at) => self.unsafe_entry(
                name,
                format!("needs directory '{}' where a file is", at.display()),
            ),
            WalkError::Missing => self.unsafe_entry(name, "names a directory that does not exist"),
            WalkError::Io(e) => self.io(e),
        }
    }

    /// Makes room for a non-directory entry called `file_name` in `dir`: an
    /// earlier entry of that name (not a directory) is removed, unopened.
    fn clear_leaf(&self, dir: &Dir, file_name: &OsStr, name: &str) -> Result<(), UnpackError> {
        match dir.kind(file_name).map_err(|e| self.io(e))? {
            Kind::Missing => Ok(()),
            Kind::Dir => Err(self.unsafe_entry(
                name,
                "would replace a directory unpacked from the same archive",
            )),
            _ => unlinkat(dir.fd.as_fd(), file_name, UnlinkatFlags::NoRemoveDir)
                .map_err(|e| self.io(errno_io(e))),
        }
    }

    fn leaf_name<'a>(&self, rel: &'a Path, name: &str) -> Result<&'a OsStr, UnpackError> {
        rel.file_name()
            .ok_or_else(|| self.unsafe_entry(name, "has no file name"))
    }

    fn write_file(
        &mut self,
        rel: &Path,
        name: &str,
        mode: u32,
        data: &mut dyn Read,
    ) -> Result<(), UnpackError> {
        let dir = self.parent_of(rel, name)?;
        let file_name = self.leaf_name(rel, name)?;
        self.clear_leaf(&dir, file_name, name)?;
        let mode = (mode & 0o777) | 0o600;
        let mut out = dir.create_file(file_name, mode).map_err(|e| self.io(e))?;
        let n = io::copy(data, &mut out).map_err(|e| self.io(e))?;
        // The umask may have masked bits away at creation.
        fchmod(out.as_fd(), Mode::from_bits_truncate(mode)).map_err(|e| self.io(errno_io(e)))?;
        self.stats.files += 1;
        self.stats.bytes += n;
        Ok(())
    }

    fn write_dir(&mut self, rel: &Path, name: &str, mode: Option<u32>) -> Result<(), UnpackError> {
        let dir = self
            .walk(rel, true)
            .map_err(|e| self.walk_error(e, name, "would be created"))?;
        if let Some(mode) = mode {
            dir.set_mode((mode & 0o777) | 0o700)
                .map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    fn write_symlink(&mut self, rel: &Path, name: &str, target: &Path) -> Result<(), UnpackError> {
        check_link_target(rel, target).map_err(|p| self.unsafe_entry(name, p))?;
        let dir = self.parent_of(rel, name)?;
        let file_name = self.leaf_name(rel, name)?;
        self.clear_leaf(&dir, file_name, name)?;
        symlinkat(target, dir.fd.as_fd(), file_name).map_err(|e| self.io(errno_io(e)))?;
        self.stats.links += 1;
        Ok(())
    }

    fn not_before(&self, name: &str, target: &str) -> UnpackError {
        self.unsafe_entry(
            name,
            format!("is a hard link to '{target}', which is not a file unpacked before it"),
        )
    }

    fn write_hard_link(&mut self, rel: &Path, name: &str, target: &str) -> Result<(), UnpackError> {
        let target_rel = safe_entry_path(target)
            .map_err(|p| self.unsafe_entry(name, format!("links to '{target}', which {p}")))?
            .ok_or_else(|| self.unsafe_entry(name, "links to the archive root"))?;
        let source_parent = target_rel.parent().unwrap_or(Path::new(""));
        let source_dir = match self.walk(source_parent, false) {
            Ok(d) => d,
            Err(WalkError::Missing | WalkError::NotDir(_)) => {
                return Err(self.not_before(name, target))
            }
            Err(e) => return Err(self.walk_error(e, name, "would be linked")),
        };
        let source_name = self.leaf_name(&target_rel, name)?;
        match source_dir.kind(source_name).map_err(|e| self.io(e))? {
            Kind::File => {}
            Kind::Symlink => {
                return Err(self.unsafe_entry(
                    name,
                    format!("is a hard link to '{target}', which is a symbolic link"),
                ))
            }
            _ => return Err(self.not_before(name, target)),
        }
        if target_rel == rel {
            // A link to itself: the file is already there.
            return Ok(());
        }
        let dir = self.parent_of(rel, name)?;
        let file_name = self.leaf_name(rel, name)?;
        self.clear_leaf(&dir, file_name, name)?;
        // No AT_SYMLINK_FOLLOW: a link is never followed.
        linkat(
            source_dir.fd.as_fd(),
            source_name,
            dir.fd.as_fd(),
            file_name,
            AtFlags::empty(),
        )
        .map_err(|e| self.io(errno_io(e)))?;
        self.stats.links += 1;
        Ok(())
    }

    fn zip(&mut self, reader: impl Read + io::Seek) -> Result<(), UnpackError> {
        /// The longest symbolic-link target read from a zip (PATH_MAX).
        const MAX_TARGET: u64 = 4096;
        let mut zip = zip::ZipArchive::new(reader).map_err(|e| self.corrupt("zip", e))?;
        for i in 0..zip.len() {
            let mut entry = zip.by_index(i).map_err(|e| self.corrupt("zip", e))?;
            let name = entry
                .name()
                .map_err(|e| self.corrupt("zip", e))?
                .into_owned();
            let Some(rel) = self.checked(&name)? else {
                continue;
            };
            let mode = entry.unix_mode();
            let kind = mode.map(|m| m & 0o170_000).unwrap_or(0);
            if entry.is_dir() || kind == 0o040_000 {
                self.write_dir(&rel, &name, mode)?;
            } else if kind == 0o120_000 {
                let mut target = Vec::new();
                (&mut entry)
                    .take(MAX_TARGET + 1)
                    .read_to_end(&mut target)
                    .map_err(|e| self.corrupt("zip", e))?;
                if target.len() as u64 > MAX_TARGET {
                    return Err(
                        self.unsafe_entry(&name, "is a symbolic link with an overlong target")
                    );
                }
                self.write_symlink(&rel, &name, Path::new(OsStr::from_bytes(&target)))?;
            } else if kind == 0 || kind == 0o100_000 {
                self.write_file(&rel, &name, mode.unwrap_or(0o644), &mut entry)?;
            } else {
                return Err(self.unsafe_entry(
                    &name,
                    format!(
                        "is a {} (mode {:o}), not a file, directory or link",
                        special_kind(kind),
                        mode.unwrap_or(0)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn tar(&mut self, reader: impl Read) -> Result<(), UnpackError> {
        let mut archive = tar::Archive::new(reader);
        let entries = archive.entries().map_err(|e| self.corrupt("tar", e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| self.corrupt("tar", e))?;
            let name = entry
                .path()
                .map_err(|e| self.corrupt("tar", e))?
                .to_string_lossy()
                .into_owned();
            let kind = entry.header().entry_type();
            // Extension headers describe the next entry (the reader applies
            // them); they have no place of their own.
            if matches!(
                kind,
                tar::EntryType::XGlobalHeader
                    | tar::EntryType::XHeader
                    | tar::EntryType::GNULongName
                    | tar::EntryType::GNULongLink
            ) {
                continue;
            }
            let Some(rel) = self.checked(&name)? else {
                continue;
            };
            let mode = entry.header().mode().unwrap_or(0o644);
            match kind {
                tar::EntryType::Directory => self.write_dir(&rel, &name, Some(mode))?,
                // Old tar writers mark directories as regular files named with a '/'.
                tar::EntryType::Regular if name.ends_with('/') => {
                    self.write_dir(&rel, &name, Some(mode))?
                }
                tar::EntryType::Regular
                | tar::EntryType::Continuous
                | tar::EntryType::GNUSparse => self.write_file(&rel, &name, mode, &mut entry)?,
                tar::EntryType::Symlink => {
                    let target = entry
                        .link_name()
                        .map_err(|e| self.corrupt("tar", e))?
                        .ok_or_else(|| self.unsafe_entry(&name, "is a link without a target"))?
                        .into_owned();
                    self.write_symlink(&rel, &name, &target)?;
                }
                tar::EntryType::Link => {
                    let target = entry
                        .link_name()
                        .map_err(|e| self.corrupt("tar", e))?
                        .ok_or_else(|| self.unsafe_entry(&name, "is a link without a target"))?
                        .to_string_lossy()
                        .into_owned();
                    self.write_hard_link(&rel, &name, &target)?;
                }
                tar::EntryType::Char => {
                    return Err(self.unsafe_entry(&name, "is a character device; refused"))
                }
                tar::EntryType::Block => {
                    return Err(self.unsafe_entry(&name, "is a block device; refused"))
                }
                tar::EntryType::Fifo => {
                    return Err(self.unsafe_entry(&name, "is a FIFO (named pipe); refused"))
                }
                other => {
                    return Err(self.unsafe_entry(
                        &name,
                        format!(
                            "has the unknown entry type {:?}, not a file, directory or link",
                            other.as_byte() as char
                        ),
                    ))
                }
            }
        }
        Ok(())
    }
}

/// The name of a special file type (`st_mode & S_IFMT`).
fn special_kind(kind: u32) -> &'static str {
    match kind {
        0o010_000 => "FIFO (named pipe)",
        0o020_000 => "character device",
        0o060_000 => "block device",
        0o140_000 => "socket",
        _ => "special file",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    /// Writes a zip with `(name, contents)` files; a name ending in `/` is a dir.
    pub(crate) fn make_zip(path: &Path, entries: &[(&str, &[u8])]) {
        let file = File::create(path).expect("create zip");
        let mut w = zip::ZipWriter::new(file);
        for (name, data) in entries {
            if name.ends_with('/') {
                w.add_directory(*name, zip::write::SimpleFileOptions::default())
                    .expect("zip dir");
            } else {
                w.start_file(
                    *name,
                    zip::write::SimpleFileOptions::default()
                        .compression_method(zip::CompressionMethod::Deflated)
                        .unix_permissions(0o755),
                )
                .expect("zip file");
                w.write_all(data).expect("zip data");
            }
        }
        w.finish().expect("finish zip");
    }

    fn tar_header(name: &str, kind: tar::EntryType, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        // set_path refuses '..'; write the raw name to build hostile archives.
        let bytes = name.as_bytes();
        let gnu = h.as_gnu_mut().expect("gnu header");
        gnu.name[..bytes.len()].copy_from_slice(bytes);
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o644);
        h.set_cksum();
        h
    }

    pub(crate) fn make_tar(path: &Path, gz: bool, entries: &[(&str, &[u8])]) {
        let file = File::create(path).expect("create tar");
        let writer: Box<dyn Write> = if gz {
            Box::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(file)
        };
        let mut b = tar::Builder::new(writer);
        for (name, data) in entries {
            if name.ends_with('/') {
                let h = tar_header(name, tar::EntryType::Directory, 0);
                b.append(&h, io::empty()).expect("append dir");
            } else {
                let h = tar_header(name, tar::EntryType::Regular, data.len() as u64);
                b.append(&h, *data).expect("append file");
            }
        }
        b.into_inner()
            .expect("finish tar")
            .flush()
            .expect("flush tar");
    }

    fn symlink_tar(path: &Path, link: &str, target: &str, then_file: Option<&str>) {
        let file = File::create(path).expect("create tar");
        let mut b = tar::Builder::new(file);
        let mut h = tar_header(link, tar::EntryType::Symlink, 0);
        h.set_link_name(target).expect("link name");
        h.set_cksum();
        b.append(&h, io::empty()).expect("append link");
        if let Some(f) = then_file {
            let h = tar_header(f, tar::EntryType::Regular, 3);
            b.append(&h, &b"bad"[..]).expect("append file");
        }
        b.finish().expect("finish");
    }

    #[test]
    fn pattern_unpacks_only_whole_name_matches() {
        let dir = tempfile::tempdir().expect("tmp");
        let jar = dir.path().join("job.jar");
        make_zip(
            &jar,
            &[
                ("classes/A.class", b"a"),
                ("lib/dep.jar", b"d"),
                ("META-INF/MANIFEST.MF", b"m"),
                ("xclasses/B.class", b"b"),
            ],
        );
        let keep = regex::Regex::new("^(?:(?:classes/|lib/).*)$").expect("regex");
        let out = dir.path().join("out");
        let stats = unpack_matching(&jar, ArchiveFormat::Zip, &out, Some(&keep)).expect("unpack");
        assert_eq!(stats.files, 2);
        assert!(out.join("classes/A.class").exists());
        assert!(out.join("lib/dep.jar").exists());
        assert!(!out.join("META-INF").exists());
        assert!(
            !out.join("xclasses").exists(),
            "a match must cover the whole name"
        );
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(
            ArchiveFormat::of("__spark_libs__1.zip"),
            Some(ArchiveFormat::Zip)
        );
        assert_eq!(ArchiveFormat::of("job.JAR"), Some(ArchiveFormat::Zip));
        assert_eq!(ArchiveFormat::of("env.tar.gz"), Some(ArchiveFormat::TarGz));
        assert_eq!(ArchiveFormat::of("env.tgz"), Some(ArchiveFormat::TarGz));
        assert_eq!(ArchiveFormat::of("env.tar"), Some(ArchiveFormat::Tar));
        assert_eq!(ArchiveFormat::of("pi.py"), None);
    }

    #[test]
    fn zip_unpacks_with_dirs_and_modes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let zip = tmp.path().join("conf.zip");
        make_zip(
            &zip,
            &[
                ("__spark_conf__.properties", b"a=b\n"),
                ("__hadoop_conf__/", b""),
                ("__hadoop_conf__/core-site.xml", b"<configuration/>"),
                ("deep/er/file.txt", b"x"),
            ],
        );
        let dest = tmp.path().join("out/conf.zip");
        let stats = unpack(&zip, ArchiveFormat::Zip, &dest).expect("unpack");
        assert_eq!(stats.files, 3);
        assert_eq!(
            fs::read(dest.join("__hadoop_conf__/core-site.xml")).expect("read"),
            b"<configuration/>"
        );
        assert_eq!(fs::read(dest.join("deep/er/file.txt")).expect("read"), b"x");
        let mode = fs::metadata(dest.join("__spark_conf__.properties"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn tar_and_tgz_unpack() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for (name, gz, format) in [
            ("a.tar", false, ArchiveFormat::Tar),
            ("a.tgz", true, ArchiveFormat::TarGz),
        ] {
            let t = tmp.path().join(name);
            make_tar(
                &t,
                gz,
                &[("bin/", b""), ("bin/run.sh", b"echo hi\n"), ("./top", b"1")],
            );
            let dest = tmp.path().join(format!("out-{name}"));
            let stats = unpack(&t, format, &dest).expect("unpack");
            assert_eq!(stats.files, 2, "{name}");
            assert_eq!(
                fs::read(dest.join("bin/run.sh")).expect("read"),
                b"echo hi\n"
            );
            assert_eq!(fs::read(dest.join("top")).expect("read"), b"1");
        }
    }

    #[test]
    fn traversal_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let zip = tmp.path().join("evil.zip");
        make_zip(&zip, &[("ok.txt", b"fine"), ("../escaped.txt", b"evil")]);
        let err = unpack(&zip, ArchiveFormat::Zip, &tmp.path().join("z")).expect_err("refused");
        assert!(
            matches!(&err, UnpackError::UnsafeEntry { entry, .. } if entry == "../escaped.txt"),
            "{err}"
        );
        assert!(!tmp.path().join("escaped.txt").exists());

        let t = tmp.path().join("evil.tar");
        make_tar(&t, false, &[("a/../../escaped2.txt", b"evil")]);
        let err = unpack(&t, ArchiveFormat::Tar, &tmp.path().join("t")).expect_err("refused");
        assert!(err.to_string().contains("parent directory"), "{err}");
        assert!(!tmp.path().join("escaped2.txt").exists());

        let t = tmp.path().join("abs.tar");
        make_tar(&t, false, &[("/tmp/abs.txt", b"evil")]);
        let err = unpack(&t, ArchiveFormat::Tar, &tmp.path().join("t2")).expect_err("refused");
        assert!(err.to_string().contains("absolute"), "{err}");
    }

    #[test]
    fn symlinks_must_stay_inside() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).expect("mkdir");

        // A link out of the tree, then a file written through it.
        let t = tmp.path().join("link.tar");
        symlink_tar(&t, "dir", outside.to_str().expect("utf-8"), Some("dir/x"));
        let err = unpack(&t, ArchiveFormat::Tar, &tmp.path().join("o1")).expect_err("refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(!outside.join("x").exists());

        let t = tmp.path().join("rel.tar");
        symlink_tar(&t, "a/up", "../../outside", None);
        assert!(unpack(&t, ArchiveFormat::Tar, &tmp.path().join("o2")).is_err());

        // A link that stays inside is kept.
        let t = tmp.path().join("ok.tar");
        symlink_tar(&t, "a/b/link", "../c", None);
        unpack(&t, ArchiveFormat::Tar, &tmp.path().join("o3")).expect("inside");
        assert_eq!(
            fs::read_link(tmp.path().join("o3/a/b/link")).expect("link"),
            PathBuf::from("../c")
        );
    }

    #[test]
    fn directories_marked_only_by_mode_or_slash_are_directories() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // A zip directory entry without the trailing '/', marked by its mode.
        let zip = tmp.path().join("d.zip");
        {
            let mut w = zip::ZipWriter::new(File::create(&zip).expect("create"));
            w.start_file(
                "dir",
                zip::write::SimpleFileOptions::default().external_attributes(0o040_755 << 16),
            )
            .expect("dir entry");
            w.start_file("dir/f", zip::write::SimpleFileOptions::default())
                .expect("file entry");
            w.write_all(b"x").expect("data");
            w.finish().expect("finish");
        }
        unpack(&zip, ArchiveFormat::Zip, &tmp.path().join("z")).expect("unpacked");
        assert_eq!(fs::read(tmp.path().join("z/dir/f")).expect("read"), b"x");
        // An old-style tar directory: a regular entry named with a '/'.
        let t = tmp.path().join("old.tar");
        {
            let mut b = tar::Builder::new(File::create(&t).expect("create"));
            let h = tar_header("olddir/", tar::EntryType::Regular, 0);
            b.append(&h, io::empty()).expect("dir");
            let h = tar_header("olddir/f", tar::EntryType::Regular, 1);
            b.append(&h, &b"y"[..]).expect("file");
            b.finish().expect("finish");
        }
        unpack(&t, ArchiveFormat::Tar, &tmp.path().join("t")).expect("unpacked");
        assert_eq!(fs::read(tmp.path().join("t/olddir/f")).expect("read"), b"y");
    }

    #[test]
    fn corrupt_archives_are_reported() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bad = tmp.path().join("bad.zip");
        fs::write(&bad, b"this is not a zip").expect("write");
        let err = unpack(&bad, ArchiveFormat::Zip, &tmp.path().join("b")).expect_err("corrupt");
        assert!(matches!(err, UnpackError::Corrupt { .. }), "{err}");
        let bad = tmp.path().join("bad.tgz");
        fs::write(&bad, b"neither gzip").expect("write");
        assert!(unpack(&bad, ArchiveFormat::TarGz, &tmp.path().join("c")).is_err());
    }

    #[test]
    fn entry_names() {
        assert_eq!(
            safe_entry_path("a/b").expect("ok"),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(
            safe_entry_path("./a/./b/").expect("ok"),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(safe_entry_path("./").expect("ok"), None);
        assert!(safe_entry_path("a/../b").is_err());
        assert!(safe_entry_path("/a").is_err());
        assert!(safe_entry_path("a\0b").is_err());
        let ok = |l: &str, t: &str| check_link_target(Path::new(l), Path::new(t));
        assert!(ok("a/b", "../c").is_ok());
        assert!(ok("a/b", "c/d/e").is_ok());
        assert!(ok("a/b/c", "./../../x/./y").is_ok());
        assert!(ok("a/b", "..").is_ok());
        assert!(ok("a/b", "../../c").is_err());
        assert!(ok("a", "/etc").is_err());
        assert!(ok("a", "").is_err());
        // Inside by name, but the '..' after a name may climb out of a link.
        assert!(ok("l1", "a/b/..").is_err());
        assert!(ok("x/l", "../l1/..").is_err());
    }
}
