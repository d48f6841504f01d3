//! HDFS (`hdfs:`), spoken natively by the `hdfs-native` client.

use std::io;
use std::path::Path;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{FileSystem, Status};
use spindle_common::security::tokens::Token;

/// The URL scheme of HDFS.
pub const HDFS_SCHEME: &str = "hdfs";

/// The kind of the delegation tokens a NameNode issues.
pub const HDFS_DELEGATION_TOKEN: &str = "HDFS_DELEGATION_TOKEN";

/// The size of the pieces an upload is sent in.
const UPLOAD_CHUNK: usize = 1 << 20;

/// One HDFS client: a NameNode (or nameservice) and the user it acts as.
pub struct HdfsFs {
    uri: String,
    client: Client,
    block_retry: BlockRetry,
}

/// How a read waits for a block no DataNode could serve, as Hadoop's
/// `DFSInputStream` does (`dfs.client.max.block.acquire.failures`,
/// `dfs.client.retry.window.base`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockRetry {
    max_failures: u32,
    window_ms: u64,
}

impl BlockRetry {
    fn from_settings(settings: &[(String, String)]) -> BlockRetry {
        let get = |key: &str| {
            settings
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        };
        BlockRetry {
            max_failures: get("dfs.client.max.block.acquire.failures")
                .map_or(3, |v| u32::try_from(v).unwrap_or(u32::MAX)),
            window_ms: get("dfs.client.retry.window.base").unwrap_or(3000),
        }
    }

    /// The wait before retry `failures` + 1: Hadoop's
    /// `window * failures + window * (failures + 1) * random`, with the
    /// random factor at its mean.
    fn wait(&self, failures: u32) -> std::time::Duration {
        let f = u64::from(failures);
        let ms = self
            .window_ms
            .saturating_mul(f)
            .saturating_add(self.window_ms.saturating_mul(f + 1) / 2);
        std::time::Duration::from_millis(ms)
    }
}

impl HdfsFs {
    /// A client of `filesystem` (`hdfs://host:port` or `hdfs://nameservice`)
    /// acting as `user` (the process's user when `None`), given Hadoop
    /// `settings` over the configuration files `hdfs-native` reads itself.
    pub fn connect(
        filesystem: &str,
        user: Option<&str>,
        settings: &[(String, String)],
    ) -> io::Result<HdfsFs> {
        HdfsFs::connect_with_tokens(filesystem, user, settings, &[])
    }

    /// As [`HdfsFs::connect`], authenticating with `tokens` (an
    /// `HDFS_DELEGATION_TOKEN` whose service is the NameNode's `ip:port` or
    /// `ha-hdfs:<nameservice>`; others are ignored), as Hadoop's client does
    /// for a user whose credentials hold them: the NameNode then knows the
    /// caller as the token's owner.
    pub fn connect_with_tokens(
        filesystem: &str,
        user: Option<&str>,
        settings: &[(String, String)],
        tokens: &[Token],
    ) -> io::Result<HdfsFs> {
        let mut builder = ClientBuilder::new()
            .with_url(filesystem)
            .with_config(settings.iter().cloned());
        if let Some(user) = user {
            builder = builder.with_user(user);
        }
        for t in tokens.iter().filter(|t| t.kind == HDFS_DELEGATION_TOKEN) {
            builder = builder.with_delegation_token(
                t.identifier.clone(),
                t.password.clone(),
                t.kind.clone(),
                t.service.clone(),
            );
        }
        let client = builder.build().map_err(|e| {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("cannot reach {filesystem}: {e}"),
            )
        })?;
        Ok(HdfsFs {
            uri: filesystem.to_string(),
            client,
            block_retry: BlockRetry::from_settings(settings),
        })
    }

    /// `e`, from an operation on `path`, as an `io::Error` of the kind
    /// callers branch on.
    fn error(&self, path: &str, e: HdfsError) -> io::Error {
        let kind = match &e {
            HdfsError::FileNotFound(_) => io::ErrorKind::NotFound,
            HdfsError::AlreadyExists(_) => io::ErrorKind::AlreadyExists,
            HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _)
                if class.ends_with("AccessControlException") =>
            {
                io::ErrorKind::PermissionDenied
            }
            HdfsError::RPCError(class, _) if class.ends_with("FileNotFoundException") => {
                io::ErrorKind::NotFound
            }
            HdfsError::RPCError(class, _) if class.ends_with("FileAlreadyExistsException") => {
                io::ErrorKind::AlreadyExists
            }
            HdfsError::IOError(io) => io.kind(),
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, format!("{}{path}: {e}", self.uri))
    }
}

impl FileSystem for HdfsFs {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn status<'a>(&'a self, path: &'a str) -> BoxFuture<'a, io::Result<Status>> {
        async move {
            let s = self
                .client
                .get_file_info(path)
                .await
                .map_err(|e| self.error(path, e))?;
            Ok(status(path.to_string(), &s))
        }
        .boxed()
    }

    fn list<'a>(&'a self, dir: &'a str) -> BoxFuture<'a, io::Result<Vec<Status>>> {
        async move {
            let entries = self
                .client
                .list_status(dir, false)
                .await
                .map_err(|e| self.error(dir, e))?;
            Ok(entries.iter().map(|s| status(s.path.clone(), s)).collect())
        }
        .boxed()
    }

    fn mkdirs<'a>(&'a self, path: &'a str, permission: u16) -> BoxFuture<'a, io::Result<()>> {
        async move {
            self.client
                .mkdirs(path, u32::from(permission), true)
                .await
                .map_err(|e| self.error(path, e))
        }
        .boxed()
    }

    fn set_permission<'a>(
        &'a self,
        path: &'a str,
        permission: u16,
    ) -> BoxFuture<'a, io::Result<()>> {
        async move {
            self.client
                .set_permission(path, u32::from(permission))
                .await
                .map_err(|e| self.error(path, e))
        }
        .boxed()
    }

    fn rename<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, io::Result<()>> {
        async move {
            self.client
                .rename(from, to, true)
                .await
                .map_err(|e| self.error(from, e))
        }
        .boxed()
    }

    fn delete<'a>(&'a self, path: &'a str, recursive: bool) -> BoxFuture<'a, io::Result<bool>> {
        async move {
            match self.client.delete(path, recursive).await {
                Ok(deleted) => Ok(deleted),
                Err(HdfsError::FileNotFound(_)) => Ok(false),
                Err(e) => Err(self.error(path, e)),
            }
        }
        .boxed()
    }

    fn download<'a>(
        &'a self,
        path: &'a str,
        len: u64,
        dest: &'a Path,
    ) -> BoxFuture<'a, io::Result<()>> {
        async move {
            let reader = self
                .client
                .read(path)
                .await
                .map_err(|e| self.error(path, e))?;
            let mut out = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(dest)
                .await
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("creating {}: {e}", dest.display()))
                })?;
            let mut reader = reader;
            let mut copied = 0u64;
            let mut failures = 0u32;
            'reading: loop {
                let from = usize::try_from(copied).unwrap_or(usize::MAX);
                let want = usize::try_from(len.saturating_sub(copied)).unwrap_or(usize::MAX);
                let mut stream = reader.read_range_stream(from, want).boxed();
                while let Some(chunk) = stream.next().await {
                    let chunk = match chunk {
                        Ok(chunk) => chunk,
                        // No DataNode could serve a block (none has reported it yet,
                        // after a restart, or all failed): as Hadoop's DFSInputStream,
                        // wait and ask the NameNode for the block's locations again, up
                        // to `dfs.client.max.block.acquire.failures` times, resuming
                        // where the copy stopped.
                        Err(HdfsError::DataTransferError(_))
                            if failures < self.block_retry.max_failures =>
                        {
                            tokio::time::sleep(self.block_retry.wait(failures)).await;
                            failures += 1;
                            drop(stream);
                            reader = self
                                .client
                                .read(path)
                                .await
                                .map_err(|e| self.error(path, e))?;
                            continue 'reading;
                        }
                        Err(e) => return Err(self.error(path, e)),
                    };
                    copied += chunk.len() as u64;
                    out.write_all(&chunk).await.map_err(|e| {
                        io::Error::new(e.kind(), format!("writing {}: {e}", dest.display()))
                    })?;
                }
                break;
            }
            out.flush().await?;
            crate::copied_all(&self.uri, path, copied, len)
        }
        .boxed()
    }

    fn upload<'a>(
        &'a self,
        src: &'a Path,
        path: &'a str,
        permission: u16,
    ) -> BoxFuture<'a, io::Result<u64>> {
        async move {
            let mut input = tokio::fs::File::open(src)
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", src.display())))?;
            let options = WriteOptions {
                permission: u32::from(permission),
                overwrite: true,
                ..WriteOptions::default()
            };
            let mut writer = self
                .client
                .create(path, options)
                .await
                .map_err(|e| self.error(path, e))?;
            let mut sent = 0u64;
            loop {
                let mut buf = vec![0u8; UPLOAD_CHUNK];
                let mut filled = 0;
                while filled < buf.len() {
                    let n = input.read(&mut buf[filled..]).await?;
                    if n == 0 {
                        break;
                    }
                    filled += n;
                }
                if filled == 0 {
                    break;
                }
                buf.truncate(filled);
                writer
                    .write_bytes(Bytes::from(buf))
                    .await
                    .map_err(|e| self.error(path, e))?;
                sent += filled as u64;
            }
            writer.close().await.map_err(|e| self.error(path, e))?;
            Ok(sent)
        }
        .boxed()
    }
}

fn status(path: String, s: &hdfs_native::client::FileStatus) -> Status {
    Status {
        path,
        is_dir: s.isdir,
        len: s.length as u64,
        modified_ms: i64::try_from(s.modification_time).unwrap_or(i64::MAX),
        permission: s.permission,
        owner: s.owner.clone(),
        group: s.group.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_retries_follow_hadoops_settings_and_waits() {
        let default = BlockRetry::from_settings(&[]);
        assert_eq!(
            default,
            BlockRetry {
                max_failures: 3,
                window_ms: 3000
            }
        );
        // window * failures + window * (failures + 1) / 2
        assert_eq!(default.wait(0).as_millis(), 1500);
        assert_eq!(default.wait(1).as_millis(), 6000);
        assert_eq!(default.wait(2).as_millis(), 10_500);
        let set = BlockRetry::from_settings(&[
            ("dfs.client.max.block.acquire.failures".into(), "5".into()),
            ("dfs.client.retry.window.base".into(), " 100 ".into()),
            ("dfs.client.retry.window.base".into(), "200".into()),
        ]);
        assert_eq!(
            set,
            BlockRetry {
                max_failures: 5,
                window_ms: 200
            }
        );
        let bad = BlockRetry::from_settings(&[(
            "dfs.client.max.block.acquire.failures".into(),
            "many".into(),
        )]);
        assert_eq!(bad.max_failures, 3);
    }
}
