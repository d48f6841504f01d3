//! A resource as a launch context names it (`LocalResourceProto`): its
//! source (a `file:` or `hdfs:` URL; any other scheme is refused, named),
//! its expected size and modification time, its type and visibility; and
//! Hadoop's check of a source against what the launch context says of it.

use std::fs;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use hadoop_protos::yarn::{
    LocalResourceProto, LocalResourceTypeProto, LocalResourceVisibilityProto,
};

use crate::cache_entry::ResourceType;

/// Who may share a localized copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    Public,
    Private,
    Application,
}

/// One resource of a launch context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalResource {
    /// The file system holding the source when it is not this node's
    /// (`hdfs://host:port`); `None` for a `file:` URL.
    pub filesystem: Option<String>,
    /// The source file (its path on `filesystem`).
    pub source: PathBuf,
    /// Expected size in bytes; negative means "not checked".
    pub size: i64,
    /// Expected modification time in ms since the epoch.
    pub timestamp: i64,
    pub kind: ResourceType,
    pub visibility: Visibility,
    pub pattern: Option<String>,
}

impl LocalResource {
    /// Reads a resource of a launch context: a `file:` URL (without a
    /// remote host) or an `hdfs://` one.
    pub fn from_proto(p: &LocalResourceProto) -> Result<LocalResource, String> {
        let url = p
            .resource
            .as_ref()
            .ok_or_else(|| "the local resource has no URL".to_string())?;
        let scheme = url.scheme.clone().unwrap_or_default();
        let file = url.file.clone().unwrap_or_default();
        let host = url.host.as_deref().filter(|h| !h.is_empty());
        let filesystem = if scheme.eq_ignore_ascii_case("file") {
            if let Some(host) = host.filter(|h| *h != "localhost") {
                return Err(format!(
                    "cannot localize {scheme}:{file}: it names host '{host}'; only local files \
                     can be localized"
                ));
            }
            None
        } else if scheme.eq_ignore_ascii_case(spindle_fs::HDFS_SCHEME) {
            let host = host.ok_or_else(|| {
                format!("cannot localize {scheme}:{file}: the URL names no NameNode host")
            })?;
            Some(filesystem_uri(host, url.port))
        } else {
            let scheme = if scheme.is_empty() { "(none)" } else { &scheme };
            return Err(format!(
                "cannot localize {scheme}:{file}: scheme {scheme} is not supported by Spindle's \
                 NodeManager (only file: and hdfs: URLs are)"
            ));
        };
        let shown = match &filesystem {
            Some(fs) => format!("{fs}{file}"),
            None => format!("{scheme}:{file}"),
        };
        if !file.starts_with('/') {
            return Err(format!("cannot localize {shown}: the path is not absolute"));
        }
        let kind = match p.r#type.map(LocalResourceTypeProto::try_from) {
            None | Some(Ok(LocalResourceTypeProto::File)) => ResourceType::File,
            Some(Ok(LocalResourceTypeProto::Archive)) => ResourceType::Archive,
            Some(Ok(LocalResourceTypeProto::Pattern)) => ResourceType::Pattern,
            Some(Err(_)) => return Err(format!("cannot localize {shown}: unknown resource type")),
        };
        let visibility = match p.visibility.map(LocalResourceVisibilityProto::try_from) {
            Some(Ok(LocalResourceVisibilityProto::Public)) => Visibility::Public,
            None | Some(Ok(LocalResourceVisibilityProto::Private)) => Visibility::Private,
            Some(Ok(LocalResourceVisibilityProto::Application)) => Visibility::Application,
            Some(Err(_)) => return Err(format!("cannot localize {shown}: unknown visibility")),
        };
        Ok(LocalResource {
            filesystem,
            source: PathBuf::from(file),
            size: p.size.unwrap_or(-1),
            timestamp: p.timestamp.unwrap_or(0),
            kind,
            visibility,
            pattern: p.pattern.clone(),
        })
    }

    /// The resource's URL, for messages.
    pub fn display(&self) -> String {
        match &self.filesystem {
            Some(fs) => format!("{fs}{}", self.source.display()),
            None => format!("file:{}", self.source.display()),
        }
    }
}

/// `hdfs://host[:port]`, the file system a resource URL names.
pub(super) fn filesystem_uri(host: &str, port: Option<i32>) -> String {
    match port {
        Some(p) if p > 0 => format!("{}://{host}:{p}", spindle_fs::HDFS_SCHEME),
        _ => format!("{}://{host}", spindle_fs::HDFS_SCHEME),
    }
}

/// A modification time in ms since the epoch, as launch contexts state it.
pub(super) fn mtime_ms(meta: &fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Hadoop's check of a source against what the launch context says of it:
/// the modification time (ms) and, for a file (`len`), the size.
pub(super) fn check_source(
    res: &LocalResource,
    modified: i64,
    len: Option<u64>,
) -> Result<(), String> {
    let shown = res.display();
    if modified != res.timestamp {
        return Err(format!(
            "Resource {shown} changed on src filesystem (expected {}, was {modified})",
            res.timestamp
        ));
    }
    match len {
        Some(len) if res.size >= 0 && len != res.size.unsigned_abs() => Err(format!(
            "Resource {shown} changed on src filesystem (expected size {}, was {len})",
            res.size
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use hadoop_protos::yarn::LocalResourceTypeProto;

    use super::*;
    use crate::localizer::test_support::proto;

    #[test]
    fn the_file_system_is_named_by_host_and_port() {
        assert_eq!(filesystem_uri("nn", Some(8020)), "hdfs://nn:8020");
        assert_eq!(filesystem_uri("nameservice1", None), "hdfs://nameservice1");
        assert_eq!(filesystem_uri("nn", Some(-1)), "hdfs://nn");
    }

    #[test]
    fn file_and_hdfs_urls_are_accepted() {
        let mut p = proto("/data/x.jar", "viewfs", 1, 1, LocalResourceTypeProto::File);
        let err = LocalResource::from_proto(&p).expect_err("viewfs");
        assert!(
            err.contains("scheme viewfs is not supported by Spindle's NodeManager"),
            "{err}"
        );
        if let Some(url) = p.resource.as_mut() {
            url.scheme = Some("hdfs".into());
        }
        let err = LocalResource::from_proto(&p).expect_err("hdfs without a host");
        assert!(err.contains("names no NameNode host"), "{err}");
        if let Some(url) = p.resource.as_mut() {
            url.host = Some("nn".into());
            url.port = Some(8020);
        }
        let r = LocalResource::from_proto(&p).expect("hdfs");
        assert_eq!(r.filesystem.as_deref(), Some("hdfs://nn:8020"));
        assert_eq!(r.display(), "hdfs://nn:8020/data/x.jar");
        let mut p = proto("/data/x.jar", "file", 1, 1, LocalResourceTypeProto::Archive);
        let r = LocalResource::from_proto(&p).expect("file");
        assert_eq!(r.kind, ResourceType::Archive);
        assert_eq!(r.visibility, Visibility::Private);
        if let Some(url) = p.resource.as_mut() {
            url.host = Some("elsewhere".into());
        }
        assert!(LocalResource::from_proto(&p).is_err());
    }
}
