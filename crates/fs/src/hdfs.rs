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
            let want = usize::try_from(len).unwrap_or(usize::MAX);
            let mut stream = reader.read_range_stream(0, want).boxed();
            let mut copied = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| self.error(path, e))?;
                copied += chunk.len() as u64;
                out.write_all(&chunk).await.map_err(|e| {
                    io::Error::new(e.kind(), format!("writing {}: {e}", dest.display()))
                })?;
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
