//! Finding a job's map outputs on the NodeManager's local dirs, as `ShuffleHandler` does
//! (`getBaseLocation` + `LocalDirAllocator.getLocalPathForRead`), with two guards of ours:
//! a map id must name an attempt of the job the request was authenticated for, and the file
//! found must lie inside the application's own `output` directory (no link leads out) and
//! belong to the owner of its attempt directory, i.e. to whoever ran the map task (Hadoop
//! checks that the owner is the application's user with `SecureIOUtils`, in secure mode
//! only).
//!
//! Blocking `std::fs` code: the server calls it on tokio's blocking pool.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::index::{self, IndexRecord};
use crate::request::Refusal;
use crate::wire::ShuffleHeader;

/// `ShuffleHandler.DATA_FILE_NAME` / `INDEX_FILE_NAME`.
pub const DATA_FILE_NAME: &str = "file.out";
pub const INDEX_FILE_NAME: &str = "file.out.index";

/// One registered job: whose it is and where its outputs live.
#[derive(Debug, Clone)]
pub struct JobOutputs {
    pub job_id: String,
    /// The application id string (`application_<ts>_<id>`).
    pub app_id: String,
    pub user: String,
}

/// One map output to send: its header and the byte range of `file.out`.
#[derive(Debug, Clone)]
pub struct MapOutput {
    pub map_id: String,
    pub header: Vec<u8>,
    pub data_path: PathBuf,
    pub record: IndexRecord,
    /// The uid the data file must still have when it is opened for sending.
    pub owner_uid: u32,
}

/// Is `map_id` an attempt of `job_id` (`attempt_<ts>_<jobNumber>_…`) with nothing in it that
/// could leave a directory?
pub fn is_attempt_of(map_id: &str, job_id: &str) -> bool {
    let Some(job_part) = job_id.strip_prefix("job_") else {
        return false;
    };
    let Some(rest) = map_id
        .strip_prefix("attempt_")
        .and_then(|r| r.strip_prefix(job_part))
        .and_then(|r| r.strip_prefix('_'))
    else {
        return false;
    };
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Finds and checks every map output of a request, in order, before anything is sent
/// (Hadoop's `populateHeaders`): any failure refuses the whole request with 500 and
/// Hadoop's message where it has one.
pub fn locate_all(
    local_dirs: &[PathBuf],
    cache: &IndexCache,
    job: &JobOutputs,
    maps: &[String],
    reduce: i32,
) -> Result<Vec<MapOutput>, Refusal> {
    let mut out = Vec::with_capacity(maps.len());
    for map_id in maps {
        if !is_attempt_of(map_id, &job.job_id) {
            return Err(Refusal::new(
                500,
                format!("{map_id} is not a map attempt of {}", job.job_id),
            ));
        }
        out.push(locate(local_dirs, cache, job, map_id, reduce).map_err(|m| Refusal::new(500, m))?);
    }
    Ok(out)
}

fn locate(
    local_dirs: &[PathBuf],
    cache: &IndexCache,
    job: &JobOutputs,
    map_id: &str,
    reduce: i32,
) -> Result<MapOutput, String> {
    let app_rel = format!("usercache/{}/appcache/{}", job.user, job.app_id);
    let attempt_rel = format!("{app_rel}/output/{map_id}");
    let index = find(
        local_dirs,
        &app_rel,
        &format!("{attempt_rel}/{INDEX_FILE_NAME}"),
    )?;
    let data = find(
        local_dirs,
        &app_rel,
        &format!("{attempt_rel}/{DATA_FILE_NAME}"),
    )?;
    let record = cache.record(&index.path, &index.meta, reduce)?;
    let end = record
        .start_offset
        .checked_add(record.part_length)
        .and_then(|e| u64::try_from(e).ok());
    if end.is_none_or(|end| end > data.meta.len()) {
        return Err(format!(
            "{}: partition {reduce} ({} bytes at {}) lies beyond the file's {} bytes",
            data.path.display(),
            record.part_length,
            record.start_offset,
            data.meta.len()
        ));
    }
    let header = ShuffleHeader {
        map_id: map_id.to_string(),
        compressed_length: record.part_length,
        uncompressed_length: record.raw_length,
        for_reduce: reduce,
    }
    .encode();
    Ok(MapOutput {
        map_id: map_id.to_string(),
        header,
        data_path: data.path,
        record,
        owner_uid: data.meta.uid(),
    })
}

struct Found {
    path: PathBuf,
    meta: Metadata,
}

/// `LocalDirAllocator.getLocalPathForRead`: the first local dir holding `rel`; then our
/// guards against links out of the application's output and files of another owner.
fn find(local_dirs: &[PathBuf], app_rel: &str, rel: &str) -> Result<Found, String> {
    for dir in local_dirs {
        let candidate = dir.join(rel);
        if !candidate.exists() {
            continue;
        }
        return check(dir, app_rel, &candidate)
            .map_err(|e| format!("{}: {e}", candidate.display()));
    }
    Err(format!(
        "Could not find {rel} in any of the configured local directories"
    ))
}

fn check(dir: &Path, app_rel: &str, candidate: &Path) -> io::Result<Found> {
    let output_dir = fs::canonicalize(dir.join(app_rel))?.join("output");
    let path = fs::canonicalize(candidate)?;
    if !path.starts_with(&output_dir) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file lies outside the application's output directory",
        ));
    }
    let meta = fs::metadata(&path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    // The attempt's directory was made by whoever ran the map task (the application's user
    // under the LinuxContainerExecutor, the NodeManager's under the default one); its files
    // must be theirs too: a hard link to someone else's file is refused.
    let attempt_dir = path.parent().unwrap_or(&output_dir);
    let dir_uid = fs::metadata(attempt_dir)?.uid();
    if meta.uid() != dir_uid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "owner uid {} does not match the owner uid {dir_uid} of its attempt directory",
                meta.uid()
            ),
        ));
    }
    Ok(Found { path, meta })
}

/// Hadoop's `IndexCache`: whole index files, each checked once, kept within
/// `mapreduce.tasktracker.indexcache.mb`, the oldest dropped first. An entry is used only
/// while the file is the same (device, inode, length, modification time); an index larger
/// than the whole cache is read for the one record each time.
pub struct IndexCache {
    limit: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    entries: HashMap<PathBuf, Cached>,
    order: VecDeque<PathBuf>,
    bytes: usize,
}

struct Cached {
    identity: (u64, u64, u64, i64, i64),
    records: Arc<[IndexRecord]>,
    bytes: usize,
}

fn identity(meta: &Metadata) -> (u64, u64, u64, i64, i64) {
    (
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
    )
}

impl IndexCache {
    pub fn new(limit_bytes: usize) -> IndexCache {
        IndexCache {
            limit: limit_bytes,
            inner: Mutex::new(CacheInner::default()),
        }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Partition `reduce`'s record of the index at `path` (whose metadata is `meta`).
    pub fn record(&self, path: &Path, meta: &Metadata, reduce: i32) -> Result<IndexRecord, String> {
        let name = path.display().to_string();
        let err = |e: io::Error| format!("{name}: {e}");
        let cached = {
            let inner = self.lock();
            inner
                .entries
                .get(path)
                .filter(|c| c.identity == identity(meta))
                .map(|c| c.records.clone())
        };
        if let Some(records) = cached {
            return index::pick(&records, reduce, &name).map_err(|e| e.to_string());
        }
        let file = File::open(path).map_err(err)?;
        let cost = usize::try_from(meta.len())
            .unwrap_or(usize::MAX)
            .saturating_add(path.as_os_str().len());
        if cost > self.limit {
            return index::read_record(file, meta.len(), reduce, &name).map_err(|e| e.to_string());
        }
        let records: Arc<[IndexRecord]> = index::read_all(file, meta.len(), &name)
            .map_err(|e| e.to_string())?
            .into();
        let record = index::pick(&records, reduce, &name).map_err(|e| e.to_string());
        let mut inner = self.lock();
        if let Some(old) = inner.entries.remove(path) {
            inner.bytes -= old.bytes;
            inner.order.retain(|p| p != path);
        }
        while inner.bytes + cost > self.limit {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(old) = inner.entries.remove(&oldest) {
                inner.bytes -= old.bytes;
            }
        }
        inner.bytes += cost;
        inner.order.push_back(path.to_path_buf());
        inner.entries.insert(
            path.to_path_buf(),
            Cached {
                identity: identity(meta),
                records,
                bytes: cost,
            },
        );
        record
    }
}

/// Opens a located data file for sending: no link followed at the last step, and still a
/// regular file of the same owner.
pub fn open_data(output: &MapOutput) -> io::Result<File> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&output.data_path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != output.owner_uid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} changed since it was located",
                output.data_path.display()
            ),
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::encode_index;

    fn cache() -> IndexCache {
        IndexCache::new(10 << 20)
    }

    #[test]
    fn attempt_ids_must_be_of_the_job() {
        let job = "job_1700000000000_0007";
        assert!(is_attempt_of("attempt_1700000000000_0007_m_000000_0", job));
        assert!(is_attempt_of("attempt_1700000000000_0007_r_000003_1", job));
        assert!(!is_attempt_of("attempt_1700000000000_0008_m_000000_0", job));
        assert!(!is_attempt_of(
            "attempt_1700000000000_00070_m_000000_0",
            job
        ));
        assert!(!is_attempt_of("attempt_1700000000000_0007_", job));
        assert!(!is_attempt_of("attempt_1700000000000_0007_m/../../x", job));
        assert!(!is_attempt_of("attempt_1700000000000_0007_..", job));
        assert!(!is_attempt_of("", job));
        assert!(!is_attempt_of("attempt_1_1_m_0_0", "nojob"));
    }

    fn job() -> JobOutputs {
        JobOutputs {
            job_id: "job_1_0001".into(),
            app_id: "application_1_0001".into(),
            user: "alice".into(),
        }
    }

    fn write_output(dir: &Path, map: &str, parts: &[&[u8]]) {
        let d = dir.join(format!(
            "usercache/alice/appcache/application_1_0001/output/{map}"
        ));
        fs::create_dir_all(&d).expect("mkdir");
        let mut data = Vec::new();
        let mut records = Vec::new();
        for p in parts {
            records.push(IndexRecord {
                start_offset: data.len() as i64,
                raw_length: p.len() as i64 + 1,
                part_length: p.len() as i64,
            });
            data.extend_from_slice(p);
        }
        fs::write(d.join(DATA_FILE_NAME), data).expect("data");
        fs::write(d.join(INDEX_FILE_NAME), encode_index(&records)).expect("index");
    }

    #[test]
    fn finds_outputs_across_local_dirs() {
        let a = tempfile::tempdir().expect("tmp");
        let b = tempfile::tempdir().expect("tmp");
        write_output(b.path(), "attempt_1_0001_m_000001_0", &[b"xx", b"hello"]);
        write_output(a.path(), "attempt_1_0001_m_000000_0", &[b"abc", b""]);
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        let maps = vec![
            "attempt_1_0001_m_000000_0".to_string(),
            "attempt_1_0001_m_000001_0".to_string(),
        ];
        let found = locate_all(&dirs, &cache(), &job(), &maps, 1).expect("found");
        assert_eq!(found[0].record.part_length, 0);
        assert_eq!(found[1].record.start_offset, 2);
        assert_eq!(found[1].record.part_length, 5);
        assert_eq!(found[1].record.raw_length, 6);
        assert!(found[1]
            .data_path
            .starts_with(fs::canonicalize(b.path()).expect("c")));
        let (h, _) = ShuffleHeader::decode(&found[1].header).expect("header");
        assert_eq!(h.map_id, "attempt_1_0001_m_000001_0");
        assert_eq!(h.for_reduce, 1);
        assert!(open_data(&found[1]).is_ok());
    }

    #[test]
    fn refuses_missing_foreign_and_escaping_outputs() {
        let a = tempfile::tempdir().expect("tmp");
        write_output(a.path(), "attempt_1_0001_m_000000_0", &[b"abc"]);
        let dirs = vec![a.path().to_path_buf()];
        let e = locate_all(
            &dirs,
            &cache(),
            &job(),
            &["attempt_1_0001_m_000009_0".into()],
            0,
        )
        .expect_err("missing");
        assert_eq!(e.status, 500);
        assert!(e.message.starts_with("Could not find usercache/alice/appcache/application_1_0001/output/attempt_1_0001_m_000009_0/file.out.index"), "{}", e.message);
        let e = locate_all(
            &dirs,
            &cache(),
            &job(),
            &["attempt_1_0002_m_000000_0".into()],
            0,
        )
        .expect_err("foreign");
        assert_eq!(e.status, 500);
        // A partition the index does not have.
        let e = locate_all(
            &dirs,
            &cache(),
            &job(),
            &["attempt_1_0001_m_000000_0".into()],
            1,
        )
        .expect_err("no partition");
        assert_eq!(e.status, 500);
        // A link out of the application's output directory.
        let outside = a.path().join("secret");
        fs::create_dir_all(&outside).expect("mkdir");
        fs::write(outside.join(DATA_FILE_NAME), b"secret").expect("w");
        fs::write(
            outside.join(INDEX_FILE_NAME),
            encode_index(&[IndexRecord {
                start_offset: 0,
                raw_length: 6,
                part_length: 6,
            }]),
        )
        .expect("w");
        let link = a
            .path()
            .join("usercache/alice/appcache/application_1_0001/output/attempt_1_0001_m_000001_0");
        std::os::unix::fs::symlink(&outside, &link).expect("link");
        let e = locate_all(
            &dirs,
            &cache(),
            &job(),
            &["attempt_1_0001_m_000001_0".into()],
            0,
        )
        .expect_err("escape");
        assert!(e.message.contains("outside"), "{}", e.message);
    }

    #[test]
    fn the_index_cache_serves_repeats_and_notices_new_files() {
        let a = tempfile::tempdir().expect("tmp");
        write_output(a.path(), "attempt_1_0001_m_000000_0", &[b"abc", b"de"]);
        let dirs = [a.path().to_path_buf()];
        let maps = ["attempt_1_0001_m_000000_0".to_string()];
        let c = cache();
        let first = locate_all(&dirs, &c, &job(), &maps, 1).expect("first");
        assert_eq!(first[0].record.part_length, 2);
        let held = c.bytes();
        assert!(held >= 2 * 24 + 8, "{held}");
        let again = locate_all(&dirs, &c, &job(), &maps, 0).expect("again");
        assert_eq!(again[0].record.part_length, 3);
        assert_eq!(c.bytes(), held);
        // A rewritten output (other sizes) is read afresh.
        write_output(
            a.path(),
            "attempt_1_0001_m_000000_0",
            &[b"abcdefg", b"h", b"ij"],
        );
        let fresh = locate_all(&dirs, &c, &job(), &maps, 2).expect("fresh");
        assert_eq!(fresh[0].record.part_length, 2);
        assert_eq!(fresh[0].record.start_offset, 8);
        // A cache too small for any index still answers, from the file.
        let tiny = IndexCache::new(10);
        let r = locate_all(&dirs, &tiny, &job(), &maps, 0).expect("uncached");
        assert_eq!(r[0].record.part_length, 7);
        assert_eq!(tiny.bytes(), 0);
    }

    #[test]
    fn the_index_cache_stays_within_its_limit() {
        let a = tempfile::tempdir().expect("tmp");
        let dirs = [a.path().to_path_buf()];
        let c = IndexCache::new(1000);
        for m in 0..20 {
            let map = format!("attempt_1_0001_m_{m:06}_0");
            write_output(a.path(), &map, &[b"x", b"y", b"z"]);
            let found = locate_all(&dirs, &c, &job(), &[map], 2).expect("found");
            assert_eq!(found[0].record.start_offset, 2);
            assert!(c.bytes() <= 1000, "{}", c.bytes());
        }
        assert!(c.bytes() > 0);
    }

    #[test]
    fn refuses_files_of_another_owner() {
        // Changing a file's owner needs root; elsewhere there is nothing to test.
        if !running_as_root() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root; this test must run there"
            );
            eprintln!("SKIP: changing a file's owner needs root");
            return;
        }
        let a = tempfile::tempdir().expect("tmp");
        write_output(a.path(), "attempt_1_0001_m_000000_0", &[b"abc"]);
        let d = a
            .path()
            .join("usercache/alice/appcache/application_1_0001/output/attempt_1_0001_m_000000_0");
        let dirs = [a.path().to_path_buf()];
        let maps = ["attempt_1_0001_m_000000_0".to_string()];
        assert!(locate_all(&dirs, &cache(), &job(), &maps, 0).is_ok());
        std::os::unix::fs::chown(d.join(DATA_FILE_NAME), Some(54321), None).expect("chown");
        let e = locate_all(&dirs, &cache(), &job(), &maps, 0).expect_err("another owner");
        assert!(e.message.contains("owner uid 54321"), "{}", e.message);
    }

    fn running_as_root() -> bool {
        fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false)
    }

    #[test]
    fn refuses_an_index_longer_than_its_data() {
        let a = tempfile::tempdir().expect("tmp");
        write_output(a.path(), "attempt_1_0001_m_000000_0", &[b"abc"]);
        let d = a
            .path()
            .join("usercache/alice/appcache/application_1_0001/output/attempt_1_0001_m_000000_0");
        fs::write(d.join(DATA_FILE_NAME), b"a").expect("truncate");
        let e = locate_all(
            &[a.path().to_path_buf()],
            &cache(),
            &job(),
            &["attempt_1_0001_m_000000_0".into()],
            0,
        )
        .expect_err("short");
        assert!(e.message.contains("beyond"), "{}", e.message);
    }
}
