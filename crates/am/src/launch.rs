//! Container launch contexts: what a NodeManager needs to start a process
//! (Hadoop's `ContainerLaunchContext`), and the quoting of command words.
//!
//! A NodeManager joins a context's commands with spaces and runs them as
//! `exec /bin/bash -c "<commands>"` from its launch script, after replacing
//! `<LOG_DIR>` with the container's log dir and `{{VAR}}` with `$VAR`. A
//! word that must reach the program unchanged therefore has to survive two
//! shells: [`quote_for_launch`] single-quotes it for the inner `bash -c`
//! and escapes that for the double quotes around it.

use std::path::Path;

use hadoop_protos::yarn as pb;
use spindle_common::security::Credentials;
use spindle_common::time::epoch_ms;

use crate::convert::string_map;
use crate::error::AmError;

/// Replaced by the NodeManager with the container's log dir.
pub const LOG_DIR: &str = "<LOG_DIR>";

/// Quotes one command word so that, written into a launch context command,
/// it reaches the program as exactly `word`: single quotes for the inner
/// shell (a `'` becomes `'\''`), then `\`, `"`, `$` and `` ` `` escaped for
/// the double-quoted `bash -c "…"` that carries it. Markers such as
/// `<LOG_DIR>` are still expanded by the NodeManager inside the quotes.
pub fn quote_for_launch(word: &str) -> String {
    let single = format!("'{}'", word.replace('\'', r"'\''"));
    let mut out = String::with_capacity(single.len() + 8);
    for c in single.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// How a resource is made available in the container's work dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalResourceKind {
    /// Linked as is.
    File,
    /// Unpacked (zip, jar, tar, tar.gz) into a directory of the link's name.
    Archive,
    /// Unpacked like an archive; the file itself is kept too.
    Pattern,
}

/// Who may share a localized copy on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalResourceVisibility {
    Public,
    Private,
    Application,
}

/// A file the NodeManager copies into the container's work dir. Spindle's
/// NodeManager serves `file:` URLs and checks the size and modification time
/// against what the context states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalResource {
    /// The URL scheme (`file` for local files).
    pub scheme: String,
    /// The host part of the URL, if any.
    pub host: Option<String>,
    /// The URL port; `None` for none.
    pub port: Option<i32>,
    /// The absolute path.
    pub path: String,
    /// Size in bytes, as the NodeManager must find it.
    pub size: i64,
    /// Modification time in ms since the epoch, as the NodeManager must find it.
    pub timestamp_ms: i64,
    pub kind: LocalResourceKind,
    pub visibility: LocalResourceVisibility,
    /// For [`LocalResourceKind::Pattern`].
    pub pattern: Option<String>,
}

impl LocalResource {
    /// A local file (or directory) with its current size and modification
    /// time. The path must be absolute.
    pub fn file(
        path: &Path,
        kind: LocalResourceKind,
        visibility: LocalResourceVisibility,
    ) -> Result<LocalResource, AmError> {
        let shown = path.display().to_string();
        if !path.is_absolute() {
            return Err(AmError::InvalidRequest(format!(
                "local resource {shown} is not an absolute path"
            )));
        }
        let meta = std::fs::metadata(path).map_err(|source| AmError::File {
            path: shown.clone(),
            source,
        })?;
        let timestamp_ms = meta.modified().map_or(0, epoch_ms);
        let path = path.to_str().ok_or_else(|| {
            AmError::InvalidRequest(format!("local resource {shown} is not valid UTF-8"))
        })?;
        Ok(LocalResource {
            scheme: "file".into(),
            host: None,
            port: None,
            path: path.to_string(),
            size: i64::try_from(meta.len()).unwrap_or(i64::MAX),
            timestamp_ms,
            kind,
            visibility,
            pattern: None,
        })
    }

    pub fn to_pb(&self) -> pb::LocalResourceProto {
        pb::LocalResourceProto {
            resource: Some(pb::UrlProto {
                scheme: Some(self.scheme.clone()),
                host: self.host.clone(),
                port: self.port,
                file: Some(self.path.clone()),
                user_info: None,
            }),
            size: Some(self.size),
            timestamp: Some(self.timestamp_ms),
            r#type: Some(match self.kind {
                LocalResourceKind::File => pb::LocalResourceTypeProto::File,
                LocalResourceKind::Archive => pb::LocalResourceTypeProto::Archive,
                LocalResourceKind::Pattern => pb::LocalResourceTypeProto::Pattern,
            } as i32),
            visibility: Some(match self.visibility {
                LocalResourceVisibility::Public => pb::LocalResourceVisibilityProto::Public,
                LocalResourceVisibility::Private => pb::LocalResourceVisibilityProto::Private,
                LocalResourceVisibility::Application => {
                    pb::LocalResourceVisibilityProto::Application
                }
            } as i32),
            pattern: self.pattern.clone(),
            should_be_uploaded_to_shared_cache: Some(false),
        }
    }
}

/// The variables of a client's environment that the ApplicationMasters
/// Spindle's own clients launch inherit (through
/// [`LaunchContext::pass_env`]): their logging, and where their
/// configuration is.
pub const PASSED_ENV: [&str; 5] = [
    "SPINDLE_LOG",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "YARN_CONF_DIR",
    "HADOOP_CONF_DIR",
];

/// What to run in a container.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchContext {
    /// Command strings, joined with spaces by the NodeManager and run by
    /// `bash -c`. Quote words with [`quote_for_launch`].
    pub commands: Vec<String>,
    /// Environment variables, in order (a later duplicate wins).
    pub environment: Vec<(String, String)>,
    /// Resources by link name in the work dir.
    pub local_resources: Vec<(String, LocalResource)>,
    /// Tokens for the container (`HADOOP_TOKEN_FILE_LOCATION`); none means
    /// an empty credentials file.
    pub tokens: Option<Credentials>,
    /// Data for the node's auxiliary services, by service name.
    pub service_data: Vec<(String, Vec<u8>)>,
}

impl LaunchContext {
    /// A context running `command` (already quoted as needed).
    pub fn command(command: impl Into<String>) -> LaunchContext {
        LaunchContext {
            commands: vec![command.into()],
            ..LaunchContext::default()
        }
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> LaunchContext {
        self.environment.push((key.into(), value.into()));
        self
    }

    /// The variables named in `names` that are set (and not empty) in this
    /// process's environment, added as they are: how a client hands its
    /// logging settings and configuration dirs on to the ApplicationMaster
    /// it launches ([`PASSED_ENV`]), and an ApplicationMaster its logging
    /// settings on to its workers.
    pub fn pass_env(mut self, names: &[&str]) -> LaunchContext {
        for &name in names {
            if let Some(v) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
                self = self.env(name, v);
            }
        }
        self
    }

    pub fn resource(mut self, link: impl Into<String>, resource: LocalResource) -> LaunchContext {
        self.local_resources.push((link.into(), resource));
        self
    }

    pub fn to_pb(&self) -> pb::ContainerLaunchContextProto {
        pb::ContainerLaunchContextProto {
            local_resources: self
                .local_resources
                .iter()
                .map(|(k, r)| pb::StringLocalResourceMapProto {
                    key: Some(k.clone()),
                    value: Some(r.to_pb()),
                })
                .collect(),
            tokens: self.tokens.as_ref().map(Credentials::to_bytes),
            service_data: self
                .service_data
                .iter()
                .map(|(k, v)| pb::StringBytesMapProto {
                    key: Some(k.clone()),
                    value: Some(v.clone()),
                })
                .collect(),
            environment: string_map(&self.environment),
            command: self.commands.clone(),
            application_ac_ls: Vec::new(),
            container_retry_context: None,
            tokens_conf: None,
        }
    }
}

impl From<&LaunchContext> for pb::ContainerLaunchContextProto {
    fn from(c: &LaunchContext) -> Self {
        c.to_pb()
    }
}

impl From<LaunchContext> for pb::ContainerLaunchContextProto {
    fn from(c: LaunchContext) -> Self {
        c.to_pb()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the named variables that are set and not empty are handed on,
    /// after what the context already had, in the order named.
    #[test]
    fn passes_on_the_named_variables_that_are_set() {
        // Names no other test or process sets.
        std::env::set_var("SPINDLE_LAUNCH_TEST_SET", "v1");
        std::env::set_var("SPINDLE_LAUNCH_TEST_EMPTY", "");
        std::env::remove_var("SPINDLE_LAUNCH_TEST_UNSET");
        let ctx = LaunchContext::command("true").env("A", "1").pass_env(&[
            "SPINDLE_LAUNCH_TEST_UNSET",
            "SPINDLE_LAUNCH_TEST_SET",
            "SPINDLE_LAUNCH_TEST_EMPTY",
        ]);
        assert_eq!(
            ctx.environment,
            [
                ("A".to_string(), "1".to_string()),
                ("SPINDLE_LAUNCH_TEST_SET".to_string(), "v1".to_string()),
            ]
        );
    }

    /// Runs `bash -c "<quoted>"` the way a launch script does and prints the
    /// words the inner shell received, one per line.
    fn through_launch_shells(words: &[&str]) -> Vec<String> {
        let quoted: Vec<String> = words.iter().map(|w| quote_for_launch(w)).collect();
        let script = format!("exec /bin/bash -c \"printf '%s\\n' {}\"", quoted.join(" "));
        let out = std::process::Command::new("/bin/bash")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "{script}: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn quoted_words_survive_both_shells() {
        let words = [
            "plain",
            "two words",
            "it's",
            "$HOME",
            "`id`",
            "back\\slash",
            "quote\"d",
            "a;b|c&&d",
            "*",
            "",
            "!bang",
        ];
        assert_eq!(through_launch_shells(&words), words);
    }

    #[test]
    fn quoting_leaves_markers_for_the_node_manager() {
        assert_eq!(quote_for_launch("<LOG_DIR>/x"), "'<LOG_DIR>/x'");
        assert_eq!(quote_for_launch("a'b"), r"'a'\\''b'");
        assert_eq!(quote_for_launch("$X"), r"'\$X'");
    }

    #[test]
    fn local_files_carry_size_and_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("data.txt");
        std::fs::write(&path, b"12345").expect("write");
        let r = LocalResource::file(
            &path,
            LocalResourceKind::File,
            LocalResourceVisibility::Application,
        )
        .expect("stat");
        assert_eq!(r.size, 5);
        assert!(r.timestamp_ms > 0);
        let p = r.to_pb();
        let url = p.resource.expect("url");
        assert_eq!(url.scheme.as_deref(), Some("file"));
        assert_eq!(url.file.as_deref(), path.to_str());
        assert_eq!(p.visibility, Some(3));
        assert!(LocalResource::file(
            Path::new("relative"),
            LocalResourceKind::File,
            LocalResourceVisibility::Public
        )
        .is_err());
        assert!(matches!(
            LocalResource::file(
                &dir.path().join("missing"),
                LocalResourceKind::File,
                LocalResourceVisibility::Public
            ),
            Err(AmError::File { .. })
        ));
    }

    #[test]
    fn contexts_convert_to_the_wire() {
        let mut creds = Credentials::new();
        creds.add_secret("s", b"v".to_vec());
        let ctx = LaunchContext {
            tokens: Some(creds.clone()),
            ..LaunchContext::command("echo hi")
                .env("A", "1")
                .env("B", "$A")
        };
        let p = ctx.to_pb();
        assert_eq!(p.command, ["echo hi"]);
        assert_eq!(p.environment.len(), 2);
        assert_eq!(p.environment[1].value.as_deref(), Some("$A"));
        let tokens = p.tokens.expect("tokens");
        assert_eq!(Credentials::from_bytes(&tokens).ok(), Some(creds));
    }
}
