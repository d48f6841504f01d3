//! YARN's aggregated log format (`org.apache.hadoop.yarn.logaggregation.AggregatedLogFormat`,
//! the "TFile" log aggregation file controller): one TFile per node and application, what a
//! NodeManager uploads to the remote application log directory and `yarn logs` reads.
//!
//! Records, in Hadoop's order (every key is Java's `writeUTF` of a string; values are
//! streamed, so chunked):
//!
//! 1. `VERSION`: a big endian i32, 1.
//! 2. `APPLICATION_ACL`: pairs of `writeUTF` strings, access type (`VIEW_APP`, `MODIFY_APP`)
//!    and ACL, until the value ends.
//! 3. `APPLICATION_OWNER`: `writeUTF` of the user.
//! 4. One record per container, keyed by the container id: per log file, sorted by local path
//!    as Java's `File.compareTo` sorts, `writeUTF(file name)`, `writeUTF(length in decimal)`,
//!    then exactly that many bytes.
//!
//! The data blocks close at 256 KiB, the minimum block size YARN passes to `TFile.Writer`.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::encoding::{invalid, java_utf, read_java_utf, read_java_utf_required, JavaUtf};
use crate::tfile::{TFileReader, TFileScanner, TFileWriter, ValueWriter};

/// The minimum data block size YARN's `LogWriter` gives the TFile writer.
pub const MIN_BLOCK_SIZE: u64 = 256 * 1024;

/// The format version YARN writes.
pub const VERSION: i32 = 1;

/// The key of the version record.
pub const VERSION_KEY: &str = "VERSION";
/// The key of the ACL record.
pub const APPLICATION_ACL_KEY: &str = "APPLICATION_ACL";
/// The key of the owner record.
pub const APPLICATION_OWNER_KEY: &str = "APPLICATION_OWNER";

/// The access types of `org.apache.hadoop.yarn.api.records.ApplicationAccessType`; Hadoop's
/// reader fails on any other name.
pub const ACCESS_TYPES: [&str; 2] = ["VIEW_APP", "MODIFY_APP"];

/// The buffer Hadoop's `LogValue.write` copies a file with; each read is one write to the
/// value, which decides where the value's chunks end.
const COPY_BUFFER: usize = 65535;

fn is_reserved(key: &str) -> bool {
    [VERSION_KEY, APPLICATION_ACL_KEY, APPLICATION_OWNER_KEY].contains(&key)
}

/// Orders paths as Java's `File.compareTo` on Unix: their strings, by UTF-16 code units
/// (non-UTF-8 paths by bytes).
fn java_path_order(a: &Path, b: &Path) -> Ordering {
    match (a.to_str(), b.to_str()) {
        (Some(a), Some(b)) => a.encode_utf16().cmp(b.encode_utf16()),
        _ => a.as_os_str().cmp(b.as_os_str()),
    }
}

/// Writes an aggregated log file, as Hadoop's `AggregatedLogFormat.LogWriter` with the
/// default compression "none". Blocking I/O: call it from a blocking thread.
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// use spindle_tfile::aggregated::LogWriter;
/// let out = std::fs::File::create("/tmp/node_8041.tmp")?;
/// let acls = [("VIEW_APP".to_string(), "alice".to_string())];
/// let mut writer = LogWriter::new(out, "alice", &acls)?;
/// writer.append_container(
///     "container_1700000000000_0001_01_000001",
///     &[("stdout".to_string(), "/logs/app/c1/stdout".into())],
/// )?;
/// writer.finish()?.sync_all()?;
/// # Ok(()) }
/// ```
pub struct LogWriter<W: Write> {
    tfile: TFileWriter<W>,
}

impl<W: Write> std::fmt::Debug for LogWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("tfile", &self.tfile)
            .finish()
    }
}

impl<W: Write> LogWriter<W> {
    /// Starts the file: the `VERSION`, `APPLICATION_ACL` (the pairs in the order given; the
    /// access type must be one of [`ACCESS_TYPES`]) and `APPLICATION_OWNER` records.
    pub fn new(out: W, owner: &str, acls: &[(String, String)]) -> io::Result<Self> {
        for (access, _) in acls {
            if !ACCESS_TYPES.contains(&access.as_str()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("unknown application access type {access:?} (expected VIEW_APP or MODIFY_APP)"),
                ));
            }
        }
        let mut tfile = TFileWriter::new(out, MIN_BLOCK_SIZE)?;

        let mut value = tfile.append_streamed(&java_utf(VERSION_KEY)?)?;
        value.write_piece(&VERSION.to_be_bytes())?;
        value.finish()?;

        let mut value = tfile.append_streamed(&java_utf(APPLICATION_ACL_KEY)?)?;
        for (access, acl) in acls {
            value.write_piece(&java_utf(access)?)?;
            value.write_piece(&java_utf(acl)?)?;
        }
        value.finish()?;

        let mut value = tfile.append_streamed(&java_utf(APPLICATION_OWNER_KEY)?)?;
        value.write_piece(&java_utf(owner)?)?;
        value.finish()?;
        Ok(Self { tfile })
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.tfile.position()
    }

    /// Appends one container's logs: `files` are (name recorded, local path). As Hadoop:
    /// nothing is written when `files` is empty; the files are taken in the order of their
    /// paths; a directory or a file that cannot be opened is left out; each file's length is
    /// taken when it is opened and exactly that many bytes are copied, streamed (a file that
    /// grew meanwhile is cut at that length).
    ///
    /// Differs from Hadoop where Hadoop would corrupt the record: when a file shrinks while
    /// being copied, or a read fails, Hadoop writes fewer bytes than the length it announced
    /// (and, on a read error, an error message), so readers lose the framing of every later
    /// file of the container; here the missing bytes are written as zeros instead.
    ///
    /// Returns the bytes the record added to the file. An `Err` leaves the writer unusable
    /// (the output is incomplete).
    pub fn append_container(
        &mut self,
        container_id: &str,
        files: &[(String, PathBuf)],
    ) -> io::Result<u64> {
        if is_reserved(container_id) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{container_id:?} is a reserved key, not a container id"),
            ));
        }
        if files.is_empty() {
            return Ok(0);
        }
        let mut ordered: Vec<&(String, PathBuf)> = files.iter().collect();
        ordered.sort_by(|a, b| java_path_order(&a.1, &b.1));
        // The encodings first, so that a bad name fails before the record starts.
        let key = java_utf(container_id)?;
        let names = ordered
            .iter()
            .map(|(name, _)| java_utf(name))
            .collect::<io::Result<Vec<_>>>()?;

        let start = self.tfile.position();
        let mut value = self.tfile.append_streamed(&key)?;
        let mut buf = vec![0u8; COPY_BUFFER];
        for ((_, path), name) in ordered.iter().zip(&names) {
            if path.is_dir() {
                continue;
            }
            let Ok(mut file) = File::open(path) else {
                continue;
            };
            let length = match file.metadata() {
                Ok(meta) => meta.len(),
                Err(_) => continue,
            };
            value.write_piece(name)?;
            value.write_piece(&java_utf(&length.to_string())?)?;
            copy_exactly(&mut file, length, &mut buf, &mut value)?;
        }
        value.finish()?;
        Ok(self.tfile.position() - start)
    }

    /// Writes the indexes and the trailer and returns the output (flushed, not synced).
    pub fn finish(self) -> io::Result<W> {
        self.tfile.finish()
    }
}

/// Copies `length` bytes of `file` as Hadoop's `LogValue.write` does (reads of up to 65535
/// bytes, each written as one piece, stopping at `length`), then pads with zeros whatever the
/// file no longer had.
fn copy_exactly<W: Write>(
    file: &mut File,
    length: u64,
    buf: &mut [u8],
    value: &mut ValueWriter<'_, W>,
) -> io::Result<()> {
    let mut left = length;
    loop {
        let n = match file.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if (n as u64) < left {
            value.write_piece(&buf[..n])?;
            left -= n as u64;
        } else {
            value.write_piece(&buf[..left as usize])?;
            left = 0;
            break;
        }
    }
    if left > 0 {
        buf.fill(0);
        while left > 0 {
            let n = (buf.len() as u64).min(left) as usize;
            value.write_piece(&buf[..n])?;
            left -= n as u64;
        }
    }
    Ok(())
}

/// One log file of a container, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    /// The file name (e.g. `stdout`).
    pub name: String,
    /// Its content (its length is the recorded length).
    pub content: Vec<u8>,
}

/// One container's logs, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerLogs {
    /// The container id (the record's key).
    pub container_id: String,
    /// The files in the order written.
    pub files: Vec<LogFile>,
}

/// The header of a log file inside a container's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFileHeader {
    /// The file name.
    pub name: String,
    /// The recorded length in bytes.
    pub length: u64,
}

/// Reads an aggregated log file (ours or Hadoop's, compression "none").
pub struct LogReader<R: Read + Seek> {
    tfile: TFileReader<R>,
    version: Option<i32>,
    owner: Option<String>,
    acls: Vec<(String, String)>,
}

impl<R: Read + Seek> std::fmt::Debug for LogReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader")
            .field("version", &self.version)
            .field("owner", &self.owner)
            .field("acls", &self.acls)
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> LogReader<R> {
    /// Opens the file and reads its version, ACL and owner records (wherever they are; other
    /// records are skipped without being read).
    pub fn new(input: R) -> io::Result<Self> {
        let mut tfile = TFileReader::new(input)?;
        let mut version = None;
        let mut owner = None;
        let mut acls = Vec::new();
        {
            let mut scanner = tfile.scanner();
            while let Some(key) = scanner.next_key()? {
                let Some(key) = decode_key(&key)? else {
                    continue;
                };
                match key.as_str() {
                    VERSION_KEY => {
                        let mut v = [0u8; 4];
                        scanner
                            .read_exact(&mut v)
                            .map_err(|_| invalid("VERSION record too short"))?;
                        version = Some(i32::from_be_bytes(v));
                    }
                    APPLICATION_OWNER_KEY => {
                        owner = Some(read_java_utf_required(&mut scanner, "APPLICATION_OWNER")?);
                    }
                    APPLICATION_ACL_KEY => {
                        while let JavaUtf::Value(access) = read_java_utf(&mut scanner)? {
                            let acl = read_java_utf_required(&mut scanner, "APPLICATION_ACL")?;
                            acls.push((access, acl));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(Self {
            tfile,
            version,
            owner,
            acls,
        })
    }

    /// The format version record, when present.
    pub fn version(&self) -> Option<i32> {
        self.version
    }

    /// The application owner, when recorded.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The application ACLs (access type, ACL) in the order recorded.
    pub fn acls(&self) -> &[(String, String)] {
        &self.acls
    }

    /// A scanner over the containers' records, from the first.
    pub fn containers(&mut self) -> ContainerScanner<'_, R> {
        ContainerScanner {
            scanner: self.tfile.scanner(),
            in_container: false,
            file_left: 0,
        }
    }

    /// Every container's logs, read whole into memory (for small files and tests; large
    /// files are better streamed with [`LogReader::containers`]).
    pub fn read_all(&mut self) -> io::Result<Vec<ContainerLogs>> {
        let mut scanner = self.containers();
        let mut out = Vec::new();
        while let Some(logs) = scanner.read_container()? {
            out.push(logs);
        }
        Ok(out)
    }
}

/// A record key: Java's `writeUTF` of a string, nothing after it. `None` for a key that is
/// not one (Hadoop's reader would fail on it; skipping keeps the other records readable).
fn decode_key(key: &[u8]) -> io::Result<Option<String>> {
    let mut input = key;
    match read_java_utf(&mut input) {
        Ok(JavaUtf::Value(s)) if input.is_empty() => Ok(Some(s)),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(None),
        Err(e) => Err(e),
    }
}

/// Walks the container records of a [`LogReader`]: [`ContainerScanner::next_container`] moves
/// to the next container, [`ContainerScanner::next_file`] to its next file, whose content the
/// scanner then reads ([`Read`], ending at the file's recorded length).
pub struct ContainerScanner<'a, R: Read + Seek> {
    scanner: TFileScanner<'a, R>,
    in_container: bool,
    file_left: u64,
}

impl<R: Read + Seek> std::fmt::Debug for ContainerScanner<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerScanner")
            .field("in_container", &self.in_container)
            .field("file_left", &self.file_left)
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> ContainerScanner<'_, R> {
    /// Moves to the next container record (skipping what is left of the current one) and
    /// returns its container id; `None` after the last.
    pub fn next_container(&mut self) -> io::Result<Option<String>> {
        self.file_left = 0;
        self.in_container = false;
        while let Some(key) = self.scanner.next_key()? {
            match decode_key(&key)? {
                Some(key) if !is_reserved(&key) => {
                    self.in_container = true;
                    return Ok(Some(key));
                }
                _ => continue,
            }
        }
        Ok(None)
    }

    /// Moves to the next file of the current container (skipping what is left of the
    /// current file) and returns its header; `None` after the last.
    pub fn next_file(&mut self) -> io::Result<Option<LogFileHeader>> {
        if !self.in_container {
            return Ok(None);
        }
        if self.file_left > 0 {
            let left = self.file_left;
            let skipped = self.scanner.skip_in_value(left)?;
            if skipped != left {
                return Err(invalid("log file content ends before its length"));
            }
            self.file_left = 0;
        }
        let name = match read_java_utf(&mut self.scanner)? {
            JavaUtf::Value(name) => name,
            JavaUtf::Eof => {
                self.in_container = false;
                return Ok(None);
            }
        };
        let length = read_java_utf_required(&mut self.scanner, "log file length")?;
        let length: u64 = length
            .parse()
            .map_err(|_| invalid(format!("log file {name:?}: bad length {length:?}")))?;
        self.file_left = length;
        Ok(Some(LogFileHeader { name, length }))
    }

    /// Reads the next container whole: its id and every file's content.
    pub fn read_container(&mut self) -> io::Result<Option<ContainerLogs>> {
        let Some(container_id) = self.next_container()? else {
            return Ok(None);
        };
        let mut files = Vec::new();
        while let Some(header) = self.next_file()? {
            let mut content = Vec::new();
            self.read_to_end(&mut content)?;
            if content.len() as u64 != header.length {
                return Err(invalid(format!(
                    "container {container_id}: log file {:?} has {} of its {} bytes",
                    header.name,
                    content.len(),
                    header.length
                )));
            }
            files.push(LogFile {
                name: header.name,
                content,
            });
        }
        Ok(Some(ContainerLogs {
            container_id,
            files,
        }))
    }
}

/// Reads the current file's content; 0 at its end.
impl<R: Read + Seek> Read for ContainerScanner<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.file_left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(self.file_left) as usize;
        let got = self.scanner.read(&mut buf[..n])?;
        if got == 0 {
            return Err(invalid("container record ends inside a log file"));
        }
        self.file_left -= got as u64;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn write_files(dir: &Path, files: &[(&str, Vec<u8>)]) -> Vec<(String, PathBuf)> {
        std::fs::create_dir_all(dir).expect("create dir all");
        files
            .iter()
            .map(|(name, content)| {
                let path = dir.join(name);
                std::fs::write(&path, content).expect("write");
                (name.to_string(), path)
            })
            .collect()
    }

    #[test]
    fn round_trip_with_hadoops_order_and_records() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let big: Vec<u8> = (0..1_500_000u32).map(|i| (i % 253) as u8).collect();
        let c1 = write_files(
            &tmp.path().join("c1"),
            &[
                ("stdout", b"hello\n".to_vec()),
                ("stderr", Vec::new()),
                ("syslog", "héllo wörld ✓\n".as_bytes().to_vec()),
            ],
        );
        let c2 = write_files(&tmp.path().join("c2"), &[("big.log", big.clone())]);
        let acls = vec![
            ("VIEW_APP".to_string(), "alice,bob admins".to_string()),
            ("MODIFY_APP".to_string(), " ".to_string()),
        ];
        let mut w = LogWriter::new(Vec::new(), "alice", &acls).expect("new");
        let n1 = w
            .append_container("container_1_0001_01_000001", &c1)
            .expect("append container");
        assert!(n1 > 6 + 15, "{n1}");
        assert_eq!(
            w.append_container("container_1_0001_01_000003", &[])
                .expect("append container"),
            0
        );
        w.append_container("container_1_0001_01_000002", &c2)
            .expect("append container");
        let bytes = w.finish().expect("finish");

        let mut r = LogReader::new(Cursor::new(&bytes)).expect("new");
        assert_eq!(r.version(), Some(1));
        assert_eq!(r.owner(), Some("alice"));
        assert_eq!(r.acls(), &acls[..]);
        let all = r.read_all().expect("read all");
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].container_id, "container_1_0001_01_000001");
        let names: Vec<_> = all[0].files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["stderr", "stdout", "syslog"]); // sorted by path
        assert_eq!(all[0].files[1].content, b"hello\n");
        assert_eq!(all[0].files[2].content, "héllo wörld ✓\n".as_bytes());
        assert_eq!(all[1].files[0].content, big);

        // Streaming: skip files and containers without reading them.
        let mut scanner = r.containers();
        assert_eq!(
            scanner.next_container().expect("next container").as_deref(),
            Some("container_1_0001_01_000001")
        );
        let header = scanner.next_file().expect("next file").expect("expect");
        assert_eq!((header.name.as_str(), header.length), ("stderr", 0));
        let header = scanner.next_file().expect("next file").expect("expect");
        assert_eq!((header.name.as_str(), header.length), ("stdout", 6));
        let mut two = [0u8; 2];
        scanner.read_exact(&mut two).expect("read exact");
        assert_eq!(&two, b"he");
        assert_eq!(
            scanner
                .next_file()
                .expect("next file")
                .expect("expect")
                .name,
            "syslog"
        );
        assert_eq!(
            scanner.next_container().expect("next container").as_deref(),
            Some("container_1_0001_01_000002")
        );
        assert_eq!(scanner.next_container().expect("next container"), None);
    }

    #[test]
    fn missing_files_and_directories_are_left_out() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut files = write_files(tmp.path(), &[("stdout", b"out".to_vec())]);
        files.push(("gone".to_string(), tmp.path().join("gone")));
        files.push(("sub".to_string(), tmp.path().to_path_buf()));
        let mut w = LogWriter::new(Vec::new(), "u", &[]).expect("new");
        w.append_container("container_x", &files)
            .expect("append container");
        let bytes = w.finish().expect("finish");
        let all = LogReader::new(Cursor::new(bytes))
            .expect("new")
            .read_all()
            .expect("read all");
        assert_eq!(
            all,
            vec![ContainerLogs {
                container_id: "container_x".to_string(),
                files: vec![LogFile {
                    name: "stdout".to_string(),
                    content: b"out".to_vec()
                }],
            }]
        );
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(LogWriter::new(Vec::new(), "u", &[("READ".into(), "*".into())]).is_err());
        let mut w = LogWriter::new(Vec::new(), "u", &[]).expect("new");
        assert!(w.append_container("VERSION", &[]).is_err());
    }

    #[test]
    fn a_file_longer_than_recorded_is_cut_and_a_shorter_one_padded() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("stdout");
        std::fs::write(&path, b"0123456789").expect("write");
        let mut file = File::open(&path).expect("open");
        let mut w = TFileWriter::new(Vec::new(), MIN_BLOCK_SIZE).expect("new");
        let mut value = w.append_streamed(b"k").expect("append streamed");
        let mut buf = vec![0u8; COPY_BUFFER];
        copy_exactly(&mut file, 4, &mut buf, &mut value).expect("copy exactly");
        let mut file = File::open(&path).expect("open");
        copy_exactly(&mut file, 12, &mut buf, &mut value).expect("copy exactly");
        value.finish().expect("finish");
        let bytes = w.finish().expect("finish");
        let mut r = TFileReader::new(Cursor::new(bytes)).expect("new");
        let mut s = r.scanner();
        s.next_key().expect("next key");
        let mut v = Vec::new();
        s.read_to_end(&mut v).expect("read to end");
        assert_eq!(v, b"01230123456789\0\0");
    }

    #[test]
    fn java_path_order_is_utf16() {
        // In UTF-8 (and code point) order U+1F600 comes after U+FF61; in UTF-16 its high
        // surrogate 0xD83D comes first, as in Java.
        let a = Path::new("/l/\u{1F600}");
        let b = Path::new("/l/\u{FF61}");
        assert_eq!(java_path_order(a, b), Ordering::Less);
        assert_eq!(a.cmp(b), Ordering::Greater);
    }

    #[test]
    fn corrupted_log_files_are_errors_never_panics() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let files = write_files(
            tmp.path(),
            &[("stdout", b"out\n".repeat(40)), ("stderr", b"err".to_vec())],
        );
        let acls = [("VIEW_APP".to_string(), "u".to_string())];
        let mut w = LogWriter::new(Vec::new(), "u", &acls).expect("new");
        w.append_container("container_x", &files)
            .expect("append container");
        w.append_container("container_y", &files)
            .expect("append container");
        let bytes = w.finish().expect("finish");
        for pos in 0..bytes.len() {
            for flip in [0x01u8, 0x40, 0xff] {
                let mut bad = bytes.clone();
                bad[pos] ^= flip;
                // An error or some (possibly different) logs; never a panic.
                let _ = LogReader::new(Cursor::new(&bad)).and_then(|mut r| r.read_all());
            }
        }
    }

    #[test]
    fn truncated_log_files_are_errors() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let files = write_files(tmp.path(), &[("stdout", b"x".repeat(5000))]);
        let mut w = LogWriter::new(Vec::new(), "u", &[]).expect("new");
        w.append_container("container_x", &files)
            .expect("append container");
        let bytes = w.finish().expect("finish");
        for len in (0..bytes.len()).step_by(7) {
            let result = LogReader::new(Cursor::new(&bytes[..len])).and_then(|mut r| r.read_all());
            assert!(result.is_err(), "prefix {len}");
        }
    }
}
