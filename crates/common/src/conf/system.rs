//! The handful of Java system properties Hadoop configuration files refer
//! to (`${user.name}`, `${java.io.tmpdir}`, `${yarn.log.dir}`, ...), and the
//! current user.
//!
//! Hadoop resolves `${name}` against JVM system properties before it looks at
//! other configuration keys. Spindle has no JVM, so it builds an equivalent
//! table from the process environment once, when a
//! [`Configuration`](super::Configuration) is created.

use std::cell::OnceCell;
use std::collections::BTreeMap;

/// Java's `java.io.tmpdir` on Linux: the JVM uses `/tmp` whatever `TMPDIR` says.
const JAVA_TMPDIR: &str = "/tmp";

/// Used only when neither the environment nor the password database names
/// the user.
const FALLBACK_USER: &str = "root";

/// Builds the system-property table:
///
/// | property | value |
/// |---|---|
/// | `user.name` | `$USER`, else `$LOGNAME`, else the password-database name of the process uid |
/// | `user.home` | `$HOME`, else the password-database home directory, else `/` |
/// | `user.dir` | the current working directory |
/// | `java.io.tmpdir` | `/tmp` |
/// | `file.separator`, `path.separator`, `line.separator` | `/`, `:`, `\n` |
/// | `yarn.log.dir`, `hadoop.log.dir` | `$YARN_LOG_DIR`, else `$HADOOP_LOG_DIR` (absent when neither is set) |
///
/// Hadoop's launch scripts pass the log directory to daemons as
/// `-Dyarn.log.dir` / `-Dhadoop.log.dir`; the table mirrors that. When
/// neither variable is set, `yarn.log.dir` falls back to the built-in
/// configuration default `${hadoop.tmp.dir}/logs`.
pub(crate) fn system_properties() -> BTreeMap<String, String> {
    let mut props = BTreeMap::new();
    // Read the password database only if the environment leaves a gap.
    let passwd_cell = OnceCell::new();
    let passwd = || {
        passwd_cell
            .get_or_init(PasswdEntry::for_current_process)
            .as_ref()
    };

    let user = env_non_empty("USER")
        .or_else(|| env_non_empty("LOGNAME"))
        .or_else(|| passwd().map(|p| p.name.clone()))
        .unwrap_or_else(|| FALLBACK_USER.to_string());
    props.insert("user.name".to_string(), user);

    let home = env_non_empty("HOME")
        .or_else(|| passwd().map(|p| p.home.clone()))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "/".to_string());
    props.insert("user.home".to_string(), home);

    if let Ok(cwd) = std::env::current_dir() {
        props.insert("user.dir".to_string(), cwd.to_string_lossy().into_owned());
    }
    props.insert("java.io.tmpdir".to_string(), JAVA_TMPDIR.to_string());
    props.insert("file.separator".to_string(), "/".to_string());
    props.insert("path.separator".to_string(), ":".to_string());
    props.insert("line.separator".to_string(), "\n".to_string());

    if let Some(log_dir) = env_non_empty("YARN_LOG_DIR").or_else(|| env_non_empty("HADOOP_LOG_DIR"))
    {
        props.insert("yarn.log.dir".to_string(), log_dir.clone());
        props.insert("hadoop.log.dir".to_string(), log_dir);
    }
    props
}

/// The user Spindle acts as, the way Hadoop's UserGroupInformation finds it
/// with SIMPLE authentication: `$HADOOP_USER_NAME`, else `$USER`, else
/// `$LOGNAME`, else the password-database name of the process uid, else
/// `root`.
pub fn current_user() -> String {
    env_non_empty("HADOOP_USER_NAME")
        .or_else(|| env_non_empty("USER"))
        .or_else(|| env_non_empty("LOGNAME"))
        .or_else(|| PasswdEntry::for_current_process().map(|p| p.name))
        .unwrap_or_else(|| FALLBACK_USER.to_string())
}

/// An environment variable, ignoring unset, empty and non-UTF-8 values.
pub(crate) fn env_non_empty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The fields of an `/etc/passwd` line Spindle needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PasswdEntry {
    name: String,
    home: String,
}

impl PasswdEntry {
    /// Looks up the process's uid in `/etc/passwd`. If the uid has no entry
    /// the decimal uid is used as the name, much as `id -un` fails over to
    /// the number.
    fn for_current_process() -> Option<PasswdEntry> {
        let uid = current_uid()?;
        let found = std::fs::read_to_string("/etc/passwd")
            .ok()
            .and_then(|text| Self::find(&text, uid));
        Some(found.unwrap_or_else(|| PasswdEntry {
            name: uid.to_string(),
            home: String::new(),
        }))
    }

    /// Finds `uid` in the text of a passwd file
    /// (`name:password:uid:gid:gecos:home:shell` per line).
    fn find(passwd: &str, uid: u32) -> Option<PasswdEntry> {
        passwd.lines().find_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let fields: Vec<&str> = line.split(':').collect();
            if fields.len() < 6 || fields[2].parse::<u32>().ok()? != uid {
                return None;
            }
            Some(PasswdEntry {
                name: fields[0].to_string(),
                home: fields[5].to_string(),
            })
        })
    }
}

/// The real uid of this process, read without `unsafe`: the owner of
/// `/proc/self` is the process's uid on Linux.
#[cfg(unix)]
fn current_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

#[cfg(not(unix))]
fn current_uid() -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "\
# comment line
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
broken line
alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash
";

    #[test]
    fn passwd_lookup_finds_name_and_home() {
        assert_eq!(
            PasswdEntry::find(PASSWD, 1000),
            Some(PasswdEntry {
                name: "alice".into(),
                home: "/home/alice".into()
            })
        );
        assert_eq!(
            PasswdEntry::find(PASSWD, 0).map(|e| e.name),
            Some("root".into())
        );
        assert_eq!(PasswdEntry::find(PASSWD, 4242), None);
    }

    #[test]
    fn system_properties_have_java_basics() {
        let props = system_properties();
        assert!(props.get("user.name").is_some_and(|u| !u.is_empty()));
        assert!(props.get("user.home").is_some_and(|h| !h.is_empty()));
        assert_eq!(
            props.get("java.io.tmpdir").map(String::as_str),
            Some("/tmp")
        );
        assert_eq!(props.get("file.separator").map(String::as_str), Some("/"));
    }

    #[test]
    fn current_user_is_never_empty() {
        assert!(!current_user().is_empty());
    }
}
