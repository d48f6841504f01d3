//! The job tokens kept across NodeManager restarts.
//!
//! The NodeManager hands a job's token to the shuffle when the job's first container starts
//! on it (`APPLICATION_INIT`), never again; a restarted NodeManager that recovers its running
//! containers would otherwise refuse every reducer of those jobs. Hadoop's `ShuffleHandler`
//! keeps the tokens in a LevelDB under its recovery path
//! (`<yarn.nodemanager.recovery.dir>/mapreduce_shuffle`); Spindle keeps one file per
//! application there: the application id and the user as Hadoop `Text`s, then the service
//! data exactly as received (`Token.write`). Files are written to a temporary name with
//! mode 0600 and renamed into place, so a crash leaves the old or the new record.

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use spindle_common::security::credentials::{read_vlong, write_text};

/// One recovered application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub app_id: String,
    pub user: String,
    pub service_data: Vec<u8>,
}

const SUFFIX: &str = ".shuffle";
/// Records are a token and two ids; anything larger is not ours.
const MAX_RECORD: u64 = 1 << 20;

fn path_of(dir: &Path, app_id: &str) -> PathBuf {
    dir.join(format!("{app_id}{SUFFIX}"))
}

fn encode(r: &Record) -> Vec<u8> {
    let mut out = Vec::new();
    for s in [&r.app_id, &r.user] {
        write_text(&mut out, s);
    }
    out.extend_from_slice(&r.service_data);
    out
}

fn decode(bytes: &[u8]) -> Option<Record> {
    let mut rest = bytes;
    let mut text = || -> Option<String> {
        let (len, n) = read_vlong(rest).ok()?;
        let len = usize::try_from(len).ok()?;
        let s = rest.get(n..n.checked_add(len)?)?;
        let s = String::from_utf8(s.to_vec()).ok()?;
        rest = &rest[n + len..];
        Some(s)
    };
    let app_id = text()?;
    let user = text()?;
    Some(Record {
        app_id,
        user,
        service_data: rest.to_vec(),
    })
}

/// Stores (or replaces) an application's record.
pub fn store(dir: &Path, record: &Record) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let path = path_of(dir, &record.app_id);
    let tmp = dir.join(format!(".{}{SUFFIX}.tmp", record.app_id));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    f.write_all(&encode(record))?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, &path)
}

/// Forgets an application's record (nothing to do if there is none).
pub fn remove(dir: &Path, app_id: &str) -> io::Result<()> {
    match fs::remove_file(path_of(dir, app_id)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Every stored record, and the names of files that could not be read as one.
pub fn load(dir: &Path) -> io::Result<(Vec<Record>, Vec<String>)> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut records = Vec::new();
    let mut bad = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(app_id) = name.strip_suffix(SUFFIX) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let read = entry
            .metadata()
            .ok()
            .filter(|m| m.is_file() && m.len() <= MAX_RECORD)
            .and_then(|_| fs::read(entry.path()).ok())
            .and_then(|b| decode(&b))
            .filter(|r| r.app_id == app_id);
        match read {
            Some(r) => records.push(r),
            None => bad.push(name),
        }
    }
    records.sort_by(|a, b| a.app_id.cmp(&b.app_id));
    Ok((records, bad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn records_round_trip_and_are_private() {
        let d = tempfile::tempdir().expect("tmp");
        let dir = d.path().join("mapreduce_shuffle");
        let a = Record {
            app_id: "application_1_0001".into(),
            user: "alice".into(),
            service_data: vec![1, 2, 3, 0xff],
        };
        let b = Record {
            app_id: "application_1_0002".into(),
            user: "bob".into(),
            service_data: Vec::new(),
        };
        store(&dir, &a).expect("store a");
        store(&dir, &b).expect("store b");
        let mode = fs::metadata(path_of(&dir, &a.app_id))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            load(&dir).expect("load"),
            (vec![a.clone(), b.clone()], vec![])
        );
        remove(&dir, &b.app_id).expect("remove");
        remove(&dir, "application_9_0009").expect("absent is fine");
        assert_eq!(load(&dir).expect("load"), (vec![a], vec![]));
    }

    #[test]
    fn unreadable_records_are_named_not_loaded() {
        let d = tempfile::tempdir().expect("tmp");
        fs::write(d.path().join("application_1_0003.shuffle"), [0x85]).expect("w");
        fs::write(d.path().join("unrelated.txt"), b"x").expect("w");
        // A record whose id does not match its file name.
        let r = Record {
            app_id: "application_1_0004".into(),
            user: "u".into(),
            service_data: vec![],
        };
        fs::write(d.path().join("application_1_0005.shuffle"), encode(&r)).expect("w");
        let (records, mut bad) = load(d.path()).expect("load");
        bad.sort();
        assert!(records.is_empty());
        assert_eq!(
            bad,
            vec!["application_1_0003.shuffle", "application_1_0005.shuffle"]
        );
        assert_eq!(
            load(&d.path().join("missing")).expect("no dir"),
            (vec![], vec![])
        );
    }
}
