//! A container's local log files: which names may be asked for, where they
//! are, which bytes a request wants (Hadoop's `size` and `start`/`end`
//! rules), and the streaming of those bytes.
//!
//! The checks and the arithmetic are pure; the file work is at the bottom.
//! A file name is one path segment (no `/`, no `..`), looked up only in the
//! container's log dirs `<log-dir>/<app>/<container>`, opened without
//! following a symbolic link and only if it is a regular file: nothing
//! outside those dirs can be read through the web server.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use axum::body::{Body, Bytes};
use spindle_common::time::epoch_ms;
use spindle_common::{markup, ContainerId};
use tokio::io::AsyncReadExt;

use super::dao::LogFile;

/// Whether `name` may name a log file: one plain path segment.
pub fn check_file_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(format!("Invalid log file name: {name}"));
    }
    Ok(())
}

/// The log dirs of a container on every log dir of the node, in order
/// (Hadoop's `ContainerLogsUtils.getContainerLogDirs`).
pub fn container_log_dirs(log_dirs: &[PathBuf], id: &ContainerId) -> Vec<PathBuf> {
    log_dirs
        .iter()
        .map(|d| d.join(id.app().to_string()).join(id.to_string()))
        .collect()
}

/// A run of bytes of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub len: u64,
}

/// The bytes `size` selects of a file of `file_len` bytes, as Hadoop's
/// `LogToolUtils` reads them: a negative size is that many bytes from the
/// end, a positive one that many from the start, no size the whole file.
pub fn size_span(file_len: u64, size: Option<i64>) -> Span {
    match size {
        None => Span {
            start: 0,
            len: file_len,
        },
        Some(s) if s < 0 => {
            let want = s.unsigned_abs();
            if want < file_len {
                Span {
                    start: file_len - want,
                    len: want,
                }
            } else {
                Span {
                    start: 0,
                    len: file_len,
                }
            }
        }
        Some(s) => Span {
            start: 0,
            len: s.unsigned_abs().min(file_len),
        },
    }
}

/// The log page's byte range (Hadoop's `ContainerLogsPage`): `start`
/// (default -4096) and `end` (default the length), negatives counted from
/// the end. `Err((start, end))` when start is after end.
pub fn page_span(file_len: u64, start: Option<i64>, end: Option<i64>) -> Result<Span, (i64, i64)> {
    let len = i64::try_from(file_len).unwrap_or(i64::MAX);
    let mut s = start.unwrap_or(-4096);
    if s < 0 {
        s = len.saturating_add(s);
    }
    let s = s.max(0);
    let mut e = end.unwrap_or(len);
    if e < 0 {
        e = len.saturating_add(e);
    }
    let e = if e < 0 { len } else { e };
    if s > e {
        return Err((s, e));
    }
    // What is beyond the end of the file cannot be shown.
    let e = e.min(len);
    let s = s.min(e);
    Ok(Span {
        start: s.unsigned_abs(),
        len: (e - s).unsigned_abs(),
    })
}

/// Parses an optional integer parameter; `Err` names it.
pub fn int_param(name: &str, value: Option<&String>) -> Result<Option<i64>, String> {
    match value.map(|v| v.trim()) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .map(Some)
            .map_err(|_| format!("Invalid value for the parameter {name}: {v}")),
    }
}

/// The content type the `format` parameter asks for (Hadoop's
/// `WebAppUtils.getSupportedLogContentType`), or the message listing the
/// valid ones.
pub fn content_type(format: Option<&String>) -> Result<&'static str, String> {
    match format.map(|f| f.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("text") => Ok("text/plain"),
        Some("octet-stream") => Ok("application/octet-stream"),
        Some(_) => {
            Err("The valid values for the parameter : format are [text, octet-stream]".to_string())
        }
    }
}

// ------------------------------------------------------------------ files

/// The regular files in the container's log dirs, sorted by name within
/// each dir (symbolic links and directories are left out).
pub async fn list(dirs: Vec<PathBuf>) -> Vec<LogFile> {
    tokio::task::spawn_blocking(move || {
        let mut files = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut here: Vec<LogFile> = entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let meta = std::fs::symlink_metadata(e.path()).ok()?;
                    meta.is_file().then(|| LogFile {
                        name: e.file_name().to_string_lossy().into_owned(),
                        size: meta.len(),
                        modified_ms: meta.modified().map_or(0, epoch_ms),
                    })
                })
                .collect();
            here.sort_by(|a, b| a.name.cmp(&b.name));
            files.extend(here);
        }
        files
    })
    .await
    .unwrap_or_default()
}

/// An open log file.
pub struct OpenLog {
    pub file: File,
    pub len: u64,
    pub modified_ms: i64,
}

fn open_in(dir: &Path, name: &str) -> io::Result<OpenLog> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(name))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(OpenLog {
        file,
        len: meta.len(),
        modified_ms: meta.modified().map_or(0, epoch_ms),
    })
}

/// Opens `name` (checked by [`check_file_name`]) in the first of `dirs`
/// that has it as a regular file (Hadoop's `getLogPathToRead`).
pub async fn open(dirs: Vec<PathBuf>, name: String) -> Option<OpenLog> {
    tokio::task::spawn_blocking(move || dirs.iter().find_map(|d| open_in(d, &name).ok()))
        .await
        .ok()
        .flatten()
}

const CHUNK: usize = 64 * 1024;

/// A body of `prefix`, then `span` of `log` (HTML-escaped if `html`), then
/// `suffix`, read as it is sent.
pub fn stream(log: OpenLog, span: Span, prefix: String, suffix: String, html: bool) -> Body {
    use futures_util::stream::{self, StreamExt};

    enum Step {
        Prefix,
        Seek,
        Read(u64),
        Suffix,
        Done,
    }
    let file = tokio::fs::File::from_std(log.file);
    let body = stream::unfold(
        (Step::Prefix, file, prefix, suffix),
        move |(step, mut file, prefix, suffix)| async move {
            let mut step = step;
            loop {
                match step {
                    Step::Prefix => {
                        let text = Bytes::from(prefix.clone().into_bytes());
                        return Some((
                            Ok::<_, io::Error>(text),
                            (Step::Seek, file, prefix, suffix),
                        ));
                    }
                    Step::Seek => {
                        use tokio::io::AsyncSeekExt;
                        if let Err(e) = file.seek(io::SeekFrom::Start(span.start)).await {
                            return Some((Err(e), (Step::Done, file, prefix, suffix)));
                        }
                        step = Step::Read(span.len);
                    }
                    Step::Read(0) => step = Step::Suffix,
                    Step::Read(left) => {
                        let want = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
                        let mut buf = vec![0u8; want];
                        match file.read(&mut buf).await {
                            // The file shrank: what is left is not there.
                            Ok(0) => step = Step::Suffix,
                            Ok(n) => {
                                buf.truncate(n);
                                let chunk = if html {
                                    markup::escape_bytes(&buf)
                                } else {
                                    buf
                                };
                                let next = Step::Read(left - n as u64);
                                return Some((
                                    Ok(Bytes::from(chunk)),
                                    (next, file, prefix, suffix),
                                ));
                            }
                            Err(e) => return Some((Err(e), (Step::Done, file, prefix, suffix))),
                        }
                    }
                    Step::Suffix => {
                        let text = Bytes::from(suffix.clone().into_bytes());
                        return Some((Ok(text), (Step::Done, file, prefix, suffix)));
                    }
                    Step::Done => return None,
                }
            }
        },
    )
    .boxed();
    Body::from_stream(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_one_segment() {
        for ok in ["stderr", "stdout", "syslog.1", "a..b", "prelaunch.err"] {
            assert!(check_file_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b", "x\0y"] {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn log_dirs_are_per_app_and_container() {
        let id: ContainerId = "container_1700000000000_0001_01_000002"
            .parse()
            .expect("id");
        let dirs = container_log_dirs(&[PathBuf::from("/l1"), PathBuf::from("/l2")], &id);
        assert_eq!(
            dirs,
            vec![
                PathBuf::from(
                    "/l1/application_1700000000000_0001/container_1700000000000_0001_01_000002"
                ),
                PathBuf::from(
                    "/l2/application_1700000000000_0001/container_1700000000000_0001_01_000002"
                ),
            ]
        );
    }

    #[test]
    fn size_selects_as_hadoop() {
        assert_eq!(size_span(100, None), Span { start: 0, len: 100 });
        assert_eq!(size_span(100, Some(-10)), Span { start: 90, len: 10 });
        assert_eq!(size_span(100, Some(-100)), Span { start: 0, len: 100 });
        assert_eq!(size_span(100, Some(-1000)), Span { start: 0, len: 100 });
        assert_eq!(size_span(100, Some(10)), Span { start: 0, len: 10 });
        assert_eq!(size_span(100, Some(1000)), Span { start: 0, len: 100 });
        assert_eq!(size_span(100, Some(0)), Span { start: 0, len: 0 });
        assert_eq!(size_span(100, Some(i64::MIN)), Span { start: 0, len: 100 });
    }

    #[test]
    fn page_range_as_hadoop() {
        // Spark's executor log links: the last 4096 bytes.
        assert_eq!(
            page_span(10_000, Some(-4096), None),
            Ok(Span {
                start: 5904,
                len: 4096
            })
        );
        assert_eq!(page_span(100, None, None), Ok(Span { start: 0, len: 100 }));
        assert_eq!(
            page_span(100, Some(0), None),
            Ok(Span { start: 0, len: 100 })
        );
        assert_eq!(
            page_span(100, Some(10), Some(20)),
            Ok(Span { start: 10, len: 10 })
        );
        assert_eq!(
            page_span(100, Some(10), Some(-10)),
            Ok(Span { start: 10, len: 80 })
        );
        // A negative end beyond the start of the file means the whole file.
        assert_eq!(
            page_span(100, Some(0), Some(-1000)),
            Ok(Span { start: 0, len: 100 })
        );
        assert_eq!(page_span(100, Some(50), Some(10)), Err((50, 10)));
        assert_eq!(
            page_span(100, Some(500), Some(1000)),
            Ok(Span { start: 100, len: 0 })
        );
        assert_eq!(page_span(0, None, None), Ok(Span { start: 0, len: 0 }));
    }

    #[test]
    fn parameters_are_checked() {
        assert_eq!(int_param("size", None), Ok(None));
        assert_eq!(int_param("size", Some(&"-5".to_string())), Ok(Some(-5)));
        assert!(int_param("size", Some(&"x".to_string())).is_err());
        assert_eq!(content_type(None), Ok("text/plain"));
        assert_eq!(
            content_type(Some(&"octet-stream".to_string())),
            Ok("application/octet-stream")
        );
        assert!(content_type(Some(&"pdf".to_string())).is_err());
    }

    #[tokio::test]
    async fn opens_only_regular_files_in_the_dirs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("c");
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("stderr"), b"hello <world>").expect("write");
        std::fs::write(tmp.path().join("secret"), b"no").expect("write");
        std::os::unix::fs::symlink(tmp.path().join("secret"), dir.join("link")).expect("link");
        std::fs::create_dir(dir.join("sub")).expect("sub");
        let dirs = vec![tmp.path().join("missing"), dir.clone()];
        let listed: Vec<String> = list(dirs.clone())
            .await
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(listed, vec!["stderr".to_string()]);
        assert!(open(dirs.clone(), "link".into()).await.is_none());
        assert!(open(dirs.clone(), "sub".into()).await.is_none());
        let log = open(dirs, "stderr".into()).await.expect("opened");
        assert_eq!(log.len, 13);
        let body = stream(log, Span { start: 6, len: 7 }, "[".into(), "]".into(), true);
        let bytes = axum::body::to_bytes(body, 1 << 20).await.expect("body");
        assert_eq!(&bytes[..], b"[&lt;world&gt;]");
    }
}
