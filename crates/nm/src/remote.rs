//! Resources on a remote file system: HDFS, read natively (the `hdfs-native`
//! client speaks the NameNode's and DataNodes' protocols; no JVM in the
//! node).
//!
//! This file is the client side only: a source's status, Hadoop's public
//! check on the remote permissions, and streaming its bytes into a local
//! file. The localizer ([`crate::localizer`]) decides what is checked and
//! where the bytes go.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use hdfs_native::{Client, ClientBuilder};
use tokio::io::AsyncWriteExt;

/// The URL scheme of HDFS.
pub const HDFS_SCHEME: &str = "hdfs";

/// `hdfs://host[:port]`, the file system a resource URL names.
pub fn filesystem_uri(host: &str, port: Option<i32>) -> String {
    match port {
        Some(p) if p > 0 => format!("{HDFS_SCHEME}://{host}:{p}"),
        _ => format!("{HDFS_SCHEME}://{host}"),
    }
}

/// A file system (`hdfs://host:port`) and the user a client reads as (the
/// node's own when `None`).
type ClientKey = (String, Option<String>);

/// One client per file system and user, made when first needed.
#[derive(Default)]
pub struct RemoteClients {
    /// Hadoop settings every client is given.
    settings: Vec<(String, String)>,
    clients: Mutex<HashMap<ClientKey, Arc<Client>>>,
}

impl RemoteClients {
    /// Clients given `settings` (Hadoop keys and values) over the
    /// configuration files `hdfs-native` reads itself.
    pub fn new(settings: Vec<(String, String)>) -> RemoteClients {
        RemoteClients {
            settings,
            clients: Mutex::default(),
        }
    }

    fn client(&self, filesystem: &str, user: Option<&str>) -> Result<Arc<Client>, String> {
        let key = (filesystem.to_string(), user.map(str::to_string));
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(&key) {
            return Ok(c.clone());
        }
        let mut builder = ClientBuilder::new()
            .with_url(filesystem)
            .with_config(self.settings.iter().cloned());
        if let Some(user) = user {
            builder = builder.with_user(user);
        }
        let client = Arc::new(
            builder
                .build()
                .map_err(|e| format!("cannot reach {filesystem}: {e}"))?,
        );
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// The status of `path` on `filesystem`, read as `user` (the node's
    /// own user when `None`).
    pub async fn status(
        &self,
        filesystem: &str,
        user: Option<&str>,
        path: &str,
    ) -> Result<RemoteStatus, String> {
        let status = self
            .client(filesystem, user)?
            .get_file_info(path)
            .await
            .map_err(|e| e.to_string())?;
        Ok(RemoteStatus {
            is_dir: status.isdir,
            len: status.length as u64,
            modified_ms: i64::try_from(status.modification_time).unwrap_or(i64::MAX),
            permission: status.permission,
        })
    }

    /// Whether everyone may read `path` on `filesystem`: Hadoop's
    /// `FSDownload.isPublic`, the file readable by others and every
    /// directory above it searchable by others. `file` is its status.
    pub async fn is_public(
        &self,
        filesystem: &str,
        path: &Path,
        file: &RemoteStatus,
    ) -> Result<bool, String> {
        if file.permission & 0o004 == 0 {
            return Ok(false);
        }
        for dir in path.ancestors().skip(1) {
            let Some(dir) = dir.to_str() else {
                return Ok(false);
            };
            if self.status(filesystem, None, dir).await?.permission & 0o001 == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Streams the `len` bytes of `path` on `filesystem`, read as `user`,
    /// into the new file `dest`.
    pub async fn copy(
        &self,
        filesystem: &str,
        user: Option<&str>,
        path: &str,
        len: u64,
        dest: &Path,
    ) -> Result<(), String> {
        let client = self.client(filesystem, user)?;
        copy(&client, path, len, dest).await
    }
}

/// What the localizer checks of a remote source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteStatus {
    pub is_dir: bool,
    pub len: u64,
    pub modified_ms: i64,
    /// The permission bits (`rwxrwxrwx`).
    pub permission: u16,
}

/// Streams the `len` bytes of `path` into the new file `dest`.
async fn copy(client: &Client, path: &str, len: u64, dest: &Path) -> Result<(), String> {
    let reader = client.read(path).await.map_err(|e| e.to_string())?;
    let mut out = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)
        .await
        .map_err(|e| format!("creating {}: {e}", dest.display()))?;
    let mut stream = reader.read_range_stream(0, len as usize).boxed();
    let mut copied = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        copied += chunk.len() as u64;
        out.write_all(&chunk)
            .await
            .map_err(|e| format!("writing {}: {e}", dest.display()))?;
    }
    out.flush().await.map_err(|e| e.to_string())?;
    if copied != len {
        return Err(format!("the source ended after {copied} of {len} bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_system_is_named_by_host_and_port() {
        assert_eq!(filesystem_uri("nn", Some(8020)), "hdfs://nn:8020");
        assert_eq!(filesystem_uri("nameservice1", None), "hdfs://nameservice1");
        assert_eq!(filesystem_uri("nn", Some(-1)), "hdfs://nn");
    }
}
