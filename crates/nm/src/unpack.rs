//! Unpacking ARCHIVE resources: zip and jar, tar, and gzip-compressed tar.
//!
//! Archives come from applications, so every entry name is checked before
//! anything is written: an entry that is absolute, contains `..`, or would
//! be written through a symbolic link makes the whole archive fail.
//! Symbolic links inside an archive are kept only when they point to a
//! place inside the unpacked tree. Set-id bits are dropped; the owner can
//! always read and write what was unpacked (so the node can delete it).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

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
    let mut u = Unpacker {
        archive: archive.display().to_string(),
        dest: dest.to_path_buf(),
        stats: UnpackStats::default(),
        keep: keep.cloned(),
    };
    fs::create_dir_all(dest).map_err(|e| u.io(e))?;
    let file = File::open(archive).map_err(|e| u.io(e))?;
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

/// Whether a symbolic link at `link` (relative to the root) pointing to
/// `target` stays inside the root.
fn link_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: usize = link.components().count().saturating_sub(1);
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

struct Unpacker {
    archive: String,
    dest: PathBuf,
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

    /// Creates the directories of `rel` below the root, refusing to pass
    /// through anything that is not a real directory.
    fn make_dirs(&mut self, rel: &Path, name: &str) -> Result<PathBuf, UnpackError> {
        let mut cur = self.dest.clone();
        for c in rel.components() {
            cur.push(c);
            match fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(self.unsafe_entry(name, "would be written through a symbolic link"))
                }
                Ok(_) => {
                    return Err(self.unsafe_entry(
                        name,
                        format!(
                            "needs directory '{}' where a file is",
                            c.as_os_str().to_string_lossy()
                        ),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&cur).map_err(|e| self.io(e))?;
                    self.stats.dirs += 1;
                }
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(cur)
    }

    /// Prepares the place of a non-directory entry: parents exist, and an
    /// earlier entry of the same name (not a directory) is replaced.
    fn prepare_leaf(&mut self, rel: &Path, name: &str) -> Result<PathBuf, UnpackError> {
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = self.make_dirs(parent, name)?;
        let file_name = rel
            .file_name()
            .ok_or_else(|| self.unsafe_entry(name, "has no file name"))?;
        let path = dir.join(file_name);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_dir() => Err(self.unsafe_entry(
                name,
                "would replace a directory unpacked from the same archive",
            )),
            Ok(_) => {
                fs::remove_file(&path).map_err(|e| self.io(e))?;
                Ok(path)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(path),
            Err(e) => Err(self.io(e)),
        }
    }

    fn write_file(
        &mut self,
        rel: &Path,
        name: &str,
        mode: u32,
        data: &mut dyn Read,
    ) -> Result<(), UnpackError> {
        let path = self.prepare_leaf(rel, name)?;
        let mode = (mode & 0o777) | 0o600;
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .map_err(|e| self.io(e))?;
        let n = io::copy(data, &mut out).map_err(|e| self.io(e))?;
        // The umask may have masked bits away at creation.
        out.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| self.io(e))?;
        self.stats.files += 1;
        self.stats.bytes += n;
        Ok(())
    }

    fn write_dir(&mut self, rel: &Path, name: &str, mode: Option<u32>) -> Result<(), UnpackError> {
        let path = self.make_dirs(rel, name)?;
        if let Some(mode) = mode {
            fs::set_permissions(&path, fs::Permissions::from_mode((mode & 0o777) | 0o700))
                .map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    fn write_symlink(&mut self, rel: &Path, name: &str, target: &Path) -> Result<(), UnpackError> {
        if !link_stays_inside(rel, target) {
            return Err(self.unsafe_entry(
                name,
                format!(
                    "is a symbolic link to '{}', outside the unpacked tree",
                    target.display()
                ),
            ));
        }
        let path = self.prepare_leaf(rel, name)?;
        std::os::unix::fs::symlink(target, &path).map_err(|e| self.io(e))?;
        self.stats.links += 1;
        Ok(())
    }

    fn zip(&mut self, reader: impl Read + io::Seek) -> Result<(), UnpackError> {
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
            if entry.is_dir() {
                self.write_dir(&rel, &name, entry.unix_mode())?;
            } else if entry.is_symlink() {
                let mut target = String::new();
                entry
                    .read_to_string(&mut target)
                    .map_err(|e| self.corrupt("zip", e))?;
                self.write_symlink(&rel, &name, Path::new(&target))?;
            } else {
                let mode = entry.unix_mode().unwrap_or(0o644);
                self.write_file(&rel, &name, mode, &mut entry)?;
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
            let Some(rel) = self.checked(&name)? else {
                continue;
            };
            let kind = entry.header().entry_type();
            let mode = entry.header().mode().unwrap_or(0o644);
            match kind {
                tar::EntryType::Directory => self.write_dir(&rel, &name, Some(mode))?,
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    self.write_file(&rel, &name, mode, &mut entry)?
                }
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
                    let target_rel = safe_entry_path(&target)
                        .map_err(|p| {
                            self.unsafe_entry(&name, format!("links to '{target}', which {p}"))
                        })?
                        .ok_or_else(|| self.unsafe_entry(&name, "links to the archive root"))?;
                    let source = self.dest.join(&target_rel);
                    match fs::symlink_metadata(&source) {
                        Ok(m) if m.file_type().is_file() => {}
                        _ => {
                            return Err(self.unsafe_entry(
                                &name,
                                format!("is a hard link to '{target}', which is not a file unpacked before it"),
                            ))
                        }
                    }
                    let path = self.prepare_leaf(&rel, &name)?;
                    fs::hard_link(&source, &path).map_err(|e| self.io(e))?;
                    self.stats.links += 1;
                }
                // Global and per-file extension headers are consumed by the
                // reader; devices and FIFOs have no place in a resource.
                other => {
                    tracing::debug!(
                        archive = %self.archive,
                        entry = %name,
                        kind = ?other,
                        "skipping an archive entry that is not a file, directory or link"
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

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
        assert!(link_stays_inside(Path::new("a/b"), Path::new("../c")));
        assert!(!link_stays_inside(Path::new("a/b"), Path::new("../../c")));
        assert!(!link_stays_inside(Path::new("a"), Path::new("/etc")));
    }
}
