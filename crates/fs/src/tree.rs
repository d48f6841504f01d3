//! Directory trees: listing one whole (bounded, every name checked) and
//! copying it to the local file system, as Hadoop's `FSDownload` copies a
//! directory resource.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::{FileSystem, Status};

/// How big a tree [`list_tree`] accepts: deeper or larger trees are
/// refused (never cut short).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// Levels below the top (its entries are at depth 1).
    pub max_depth: usize,
    /// Files and directories in all, the top not counted.
    pub max_entries: usize,
}

/// One file or directory of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Its path below the top, `/`-separated (`lib/a.jar`).
    pub relative: String,
    pub status: Status,
}

/// Whether `name` may be a component of a local path: not empty, not `.`
/// or `..`, without `/` or NUL.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Every file and directory below the directory `dir`, parents before
/// their children. A name that is not a plain path component (`..`, one
/// with `/`), an entry that is not below the directory listed, or a tree
/// beyond `limits` is refused with `InvalidData`.
pub async fn list_tree(
    fs: &dyn FileSystem,
    dir: &str,
    limits: TreeLimits,
) -> io::Result<Vec<TreeEntry>> {
    let refuse = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}{dir}: {why}", fs.uri()),
        )
    };
    let mut entries: Vec<TreeEntry> = Vec::new();
    // (path on the file system, path below the top, depth of its entries)
    let mut pending = vec![(dir.trim_end_matches('/').to_string(), String::new(), 1usize)];
    while let Some((path, relative, depth)) = pending.pop() {
        let mut listed = fs.list(if path.is_empty() { "/" } else { &path }).await?;
        listed.sort_by(|a, b| a.path.cmp(&b.path));
        for status in listed {
            let name = status
                .path
                .strip_prefix(&path)
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or_else(|| {
                    refuse(format!(
                        "the listing of {path} named {:?}, which is not in it",
                        status.path
                    ))
                })?
                .to_string();
            if !valid_name(&name) {
                return Err(refuse(format!("{path} holds an entry named {name:?}")));
            }
            if depth > limits.max_depth {
                return Err(refuse(format!(
                    "the tree is deeper than {} levels",
                    limits.max_depth
                )));
            }
            if entries.len() >= limits.max_entries {
                return Err(refuse(format!(
                    "the tree has more than {} entries",
                    limits.max_entries
                )));
            }
            let rel = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            if status.is_dir {
                pending.push((format!("{path}/{name}"), rel.clone(), depth + 1));
            }
            entries.push(TreeEntry {
                relative: rel,
                status,
            });
        }
    }
    Ok(entries)
}

/// Copies the tree `entries` ([`list_tree`] of a directory of `fs`) into
/// the new local directory `dest` (directories 0700, files 0600); the
/// bytes copied. Each file is copied to the length it was listed with (a
/// file shortened since fails the copy).
pub async fn download_tree(
    fs: &dyn FileSystem,
    entries: &[TreeEntry],
    dest: &Path,
) -> io::Result<u64> {
    let local = |e: io::Error, p: &Path| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dest)
        .map_err(|e| local(e, dest))?;
    let mut bytes = 0u64;
    for entry in entries {
        let mut target = PathBuf::from(dest);
        for part in entry.relative.split('/') {
            if !valid_name(part) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{:?} is not a path below the tree", entry.relative),
                ));
            }
            target.push(part);
        }
        if entry.status.is_dir {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&target)
                .map_err(|e| local(e, &target))?;
        } else {
            fs.download(&entry.status.path, entry.status.len, &target)
                .await?;
            bytes += entry.status.len;
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalFs;

    const ROOMY: TreeLimits = TreeLimits {
        max_depth: 8,
        max_entries: 100,
    };

    #[tokio::test]
    async fn a_tree_is_listed_parents_first_and_copied_whole() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("conf");
        std::fs::create_dir_all(src.join("a/b")).expect("mkdir");
        std::fs::create_dir_all(src.join("empty")).expect("mkdir");
        std::fs::write(src.join("top.xml"), b"<top/>").expect("write");
        std::fs::write(src.join("a/b/deep.txt"), b"deep\n").expect("write");
        let dir = src.to_str().expect("utf-8");
        let entries = list_tree(&LocalFs, dir, ROOMY).await.expect("listed");
        let names: Vec<&str> = entries.iter().map(|e| e.relative.as_str()).collect();
        for (parent, child) in [("a", "a/b"), ("a/b", "a/b/deep.txt")] {
            let at = |n: &str| names.iter().position(|x| *x == n).expect(n);
            assert!(at(parent) < at(child), "{names:?}");
        }
        assert_eq!(names.len(), 5, "{names:?}");

        let dest = tmp.path().join("copy");
        let bytes = download_tree(&LocalFs, &entries, &dest)
            .await
            .expect("copied");
        assert_eq!(bytes, 11);
        assert_eq!(
            std::fs::read(dest.join("a/b/deep.txt")).expect("read"),
            b"deep\n"
        );
        assert_eq!(
            std::fs::read(dest.join("top.xml")).expect("read"),
            b"<top/>"
        );
        assert!(dest.join("empty").is_dir());
        // The destination must be new.
        let again = download_tree(&LocalFs, &entries, &dest).await;
        assert_eq!(
            again.expect_err("exists").kind(),
            io::ErrorKind::AlreadyExists
        );
    }

    #[tokio::test]
    async fn trees_beyond_the_limits_and_bad_names_are_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("t");
        std::fs::create_dir_all(src.join("1/2/3")).expect("mkdir");
        for i in 0..5 {
            std::fs::write(src.join(format!("f{i}")), b"x").expect("write");
        }
        let dir = src.to_str().expect("utf-8");
        let shallow = TreeLimits {
            max_depth: 2,
            max_entries: 100,
        };
        let e = list_tree(&LocalFs, dir, shallow).await.expect_err("deep");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("deeper than 2 levels"), "{e}");
        let small = TreeLimits {
            max_depth: 8,
            max_entries: 6,
        };
        let e = list_tree(&LocalFs, dir, small).await.expect_err("large");
        assert!(e.to_string().contains("more than 6 entries"), "{e}");
        assert_eq!(list_tree(&LocalFs, dir, ROOMY).await.expect("ok").len(), 8);

        // A listing whose names would leave the destination.
        let mut entries = list_tree(&LocalFs, dir, ROOMY).await.expect("ok");
        entries[0].relative = "../escaped".into();
        let dest = tmp.path().join("copy");
        let e = download_tree(&LocalFs, &entries, &dest)
            .await
            .expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(!tmp.path().join("escaped").exists());
        assert!(!valid_name("..") && !valid_name("a/b") && !valid_name(""));
        assert!(valid_name("..a") && valid_name("a b"));
    }
}
