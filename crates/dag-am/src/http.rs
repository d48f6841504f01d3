//! The tiny HTTP/1.1 a worker uses to serve task outputs to other workers,
//! and to fetch them.
//!
//! A worker keeps the output of every task it ran in
//! `<root>/<dag>/<vertex>/<task>/` and answers
//!
//! - `GET /outputs/<dag>/<vertex>/<task>`: the names of the regular files
//!   there, one per line;
//! - `GET /outputs/<dag>/<vertex>/<task>/<name>`: one file.
//!
//! Every request must carry the session secret in the
//! [`SECRET_HEADER`](crate::protocol::SECRET_HEADER) header. One request per
//! connection (`Connection: close`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, warn};

use crate::protocol::{secret_matches, SECRET_HEADER};

/// Longest request or response head.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most file names in one output listing.
const MAX_LISTED_FILES: usize = 10_000;
/// How long one fetch (connect, head, body) may stall.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves `root` until the listener fails.
pub async fn serve_outputs(listener: TcpListener, root: PathBuf, secret: Arc<String>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let root = root.clone();
                let secret = secret.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_one(stream, &root, &secret).await {
                        debug!(%peer, error = %e, "output request failed");
                    }
                });
            }
            Err(e) => {
                warn!(error = %e, "accepting an output connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Reads a head (request or status line plus headers) up to the blank line.
async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut total = 0usize;
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection closed before the end of the head",
            ));
        }
        total += n;
        if total > MAX_HEAD_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the head is too long",
            ));
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            return Ok(lines);
        }
        lines.push(line);
    }
}

fn header<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines.iter().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

async fn respond<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes()).await?;
    w.write_all(body).await?;
    w.flush().await
}

/// A path segment that names a file in a directory and nothing else.
fn plain_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

/// Maps a request path onto `root`: the task's directory and, for a file
/// request, the file name.
fn resolve(root: &Path, path: &str) -> Option<(PathBuf, Option<String>)> {
    let rest = path.strip_prefix("/outputs/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    if !(3..=4).contains(&parts.len()) {
        return None;
    }
    for p in &parts[..3] {
        p.parse::<u64>().ok()?;
    }
    let dir = root.join(parts[0]).join(parts[1]).join(parts[2]);
    match parts.get(3) {
        None => Some((dir, None)),
        Some(name) if plain_name(name) => Some((dir, Some((*name).to_string()))),
        Some(_) => None,
    }
}

async fn serve_one(stream: TcpStream, root: &Path, secret: &str) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let head = tokio::time::timeout(IO_TIMEOUT, read_head(&mut reader))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "slow request"))??;
    let Some(request_line) = head.first() else {
        return respond(&mut write, "400 Bad Request", b"empty request\n").await;
    };
    let mut words = request_line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if method != "GET" {
        return respond(&mut write, "405 Method Not Allowed", b"only GET\n").await;
    }
    if !header(&head, SECRET_HEADER).is_some_and(|s| secret_matches(secret, s)) {
        return respond(&mut write, "403 Forbidden", b"wrong or missing secret\n").await;
    }
    let Some((dir, file)) = resolve(root, path) else {
        return respond(&mut write, "404 Not Found", b"no such output\n").await;
    };
    match file {
        None => {
            let mut names = Vec::new();
            let mut entries = match tokio::fs::read_dir(&dir).await {
                Ok(e) => e,
                Err(_) => return respond(&mut write, "404 Not Found", b"no such output\n").await,
            };
            while let Some(entry) = entries.next_entry().await? {
                if entry.file_type().await?.is_file() {
                    if let Some(name) = entry.file_name().to_str() {
                        names.push(name.to_string());
                    }
                }
            }
            names.sort();
            let mut body = names.join("\n");
            if !body.is_empty() {
                body.push('\n');
            }
            respond(&mut write, "200 OK", body.as_bytes()).await
        }
        Some(name) => {
            let path = dir.join(name);
            let mut f = match tokio::fs::File::open(&path).await {
                Ok(f) => f,
                Err(_) => return respond(&mut write, "404 Not Found", b"no such file\n").await,
            };
            let len = f.metadata().await?.len();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
            );
            write.write_all(head.as_bytes()).await?;
            tokio::io::copy(&mut f, &mut write).await?;
            write.flush().await
        }
    }
}

/// Splits `http://host:port/path` into address and path.
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url} is not an http:// URL (its producer's worker is gone)"))?;
    let (addr, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if addr.is_empty() {
        return Err(format!("{url} names no host"));
    }
    Ok((addr.to_string(), path.to_string()))
}

/// One GET; the body is written to `sink`. Returns the byte count.
async fn get<W: AsyncWrite + Unpin>(
    addr: &str,
    path: &str,
    secret: &str,
    sink: &mut W,
) -> Result<u64, String> {
    let io = async {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let (read, mut write) = stream.into_split();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{SECRET_HEADER}: {secret}\r\nConnection: close\r\n\r\n"
        );
        write
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("cannot send to {addr}: {e}"))?;
        let mut reader = BufReader::new(read);
        let head = read_head(&mut reader)
            .await
            .map_err(|e| format!("bad answer from {addr}: {e}"))?;
        let status = head
            .first()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("");
        if status != "200" {
            return Err(format!(
                "GET http://{addr}{path} answered '{}'",
                head.first().map(String::as_str).unwrap_or("")
            ));
        }
        let copied = match header(&head, "content-length").map(str::parse::<u64>) {
            Some(Ok(len)) => {
                let n = tokio::io::copy(&mut (&mut reader).take(len), sink)
                    .await
                    .map_err(|e| format!("reading from {addr} failed: {e}"))?;
                if n != len {
                    return Err(format!(
                        "GET http://{addr}{path}: {n} of {len} bytes before the connection closed"
                    ));
                }
                n
            }
            Some(Err(_)) => return Err(format!("{addr} sent a bad Content-Length")),
            None => tokio::io::copy(&mut reader, sink)
                .await
                .map_err(|e| format!("reading from {addr} failed: {e}"))?,
        };
        sink.flush().await.map_err(|e| e.to_string())?;
        Ok(copied)
    };
    tokio::time::timeout(IO_TIMEOUT, io)
        .await
        .map_err(|_| format!("GET http://{addr}{path} timed out"))?
}

/// Fetches every file of the task output at `url` into `dest` (created).
/// Returns the bytes fetched.
pub async fn fetch_output(url: &str, dest: &Path, secret: &str) -> Result<u64, String> {
    let (addr, path) = split_url(url)?;
    let mut listing: Vec<u8> = Vec::new();
    get(&addr, &path, secret, &mut listing).await?;
    let listing = String::from_utf8(listing).map_err(|_| format!("{url}: listing is not UTF-8"))?;
    let names: Vec<&str> = listing.lines().filter(|l| !l.is_empty()).collect();
    if names.len() > MAX_LISTED_FILES {
        return Err(format!("{url} lists more than {MAX_LISTED_FILES} files"));
    }
    tokio::fs::create_dir_all(dest)
        .await
        .map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    let mut total = 0;
    for name in names {
        if !plain_name(name) {
            return Err(format!("{url} lists a bad file name '{name}'"));
        }
        let target = dest.join(name);
        let mut file = tokio::fs::File::create(&target)
            .await
            .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
        total += get(&addr, &format!("{path}/{name}"), secret, &mut file).await?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_paths_cannot_escape_the_root() {
        let root = Path::new("/w/outputs");
        assert_eq!(
            resolve(root, "/outputs/1/0/3"),
            Some((PathBuf::from("/w/outputs/1/0/3"), None))
        );
        assert_eq!(
            resolve(root, "/outputs/1/0/3/part-0"),
            Some((PathBuf::from("/w/outputs/1/0/3"), Some("part-0".into())))
        );
        assert_eq!(resolve(root, "/outputs/1/0/3/.."), None);
        assert_eq!(resolve(root, "/outputs/../0/3"), None);
        assert_eq!(resolve(root, "/outputs/1/0"), None);
        assert_eq!(resolve(root, "/outputs/1/0/3/a/b"), None);
        assert_eq!(resolve(root, "/etc/passwd"), None);
    }

    #[tokio::test]
    async fn outputs_are_served_and_fetched_with_the_secret_only() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("outputs");
        let task = root.join("7").join("0").join("2");
        std::fs::create_dir_all(&task).expect("mkdir");
        std::fs::write(task.join("part-0"), b"a 1\nb 2\n").expect("write");
        std::fs::write(task.join("part-1"), vec![b'x'; 100_000]).expect("write");
        std::fs::create_dir_all(task.join("subdir")).expect("mkdir");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(serve_outputs(
            listener,
            root.clone(),
            Arc::new("s3cret".to_string()),
        ));

        let dest = tmp.path().join("in");
        let url = format!("http://{addr}/outputs/7/0/2");
        let n = fetch_output(&url, &dest, "s3cret").await.expect("fetch");
        assert_eq!(n, 100_008);
        assert_eq!(
            std::fs::read(dest.join("part-0")).expect("read"),
            b"a 1\nb 2\n"
        );
        assert_eq!(
            std::fs::read(dest.join("part-1")).expect("read").len(),
            100_000
        );
        assert!(
            !dest.join("subdir").exists(),
            "only regular files are served"
        );

        let err = fetch_output(&url, &tmp.path().join("x"), "wrong")
            .await
            .expect_err("forbidden");
        assert!(err.contains("403"), "{err}");
        let err = fetch_output(
            &format!("http://{addr}/outputs/7/0/9"),
            &tmp.path().join("y"),
            "s3cret",
        )
        .await
        .expect_err("missing");
        assert!(err.contains("404"), "{err}");
        let err = fetch_output("unavailable://7/0/1", &tmp.path().join("z"), "s3cret")
            .await
            .expect_err("gone");
        assert!(err.contains("gone"), "{err}");
    }
}
