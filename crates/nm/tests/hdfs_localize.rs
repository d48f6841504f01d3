//! Localization from a real HDFS (Hadoop 3.3.4's MiniDFSCluster, files written with the
//! 3.3.4 client's `FsShell`): files, directories (recursively) and archives are copied, checked against their source
//! as Hadoop checks them, read as the application's user, refused with Hadoop's messages;
//! an HDFS that is down fails the localization with a clear error and, back, serves again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use spindle_common::ApplicationId;
use spindle_integration::{CliOutput, HadoopClients, HadoopConf, HdfsJars, HdfsServer};
use spindle_nm::cache_entry::ResourceType;
use spindle_nm::localizer::{LocalResource, Localizer, Visibility};

/// The longest one localization may take before the test calls it hung.
const DEADLINE: Duration = Duration::from_secs(180);

struct Fixture {
    clients: HadoopClients,
    hdfs: HdfsServer,
    conf: tempfile::TempDir,
}

impl Fixture {
    fn start() -> Option<Fixture> {
        let clients = HadoopClients::for_tests()?;
        let jars = HdfsJars::for_tests()?;
        let hdfs = HdfsServer::start(&jars).expect("HDFS starts");
        let conf = tempfile::tempdir().expect("tempdir");
        let mut core = HadoopConf::new();
        core.set("fs.defaultFS", hdfs.uri());
        core.write(&conf.path().join("core-site.xml"))
            .expect("core-site.xml");
        Some(Fixture {
            clients,
            hdfs,
            conf,
        })
    }

    /// `hadoop fs <args>` with the 3.3.4 client, as `user`.
    fn fs(&self, user: &str, args: &[&str]) -> CliOutput {
        let out = self
            .clients
            .yarn()
            .conf_dir(self.conf.path())
            .env("HADOOP_USER_NAME", user)
            .run(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()))
            .expect("FsShell runs");
        assert!(out.success(), "hadoop fs {args:?}: {out}");
        out
    }

    /// Writes `bytes` to `path` on HDFS as `user` and answers (size, modification ms).
    fn put(&self, user: &str, path: &str, bytes: &[u8]) -> (i64, i64) {
        let local = self.conf.path().join("upload");
        std::fs::write(&local, bytes).expect("write");
        let local = local.to_string_lossy().to_string();
        self.fs(user, &["-put", "-f", &local, path]);
        self.stat(path)
    }

    fn stat(&self, path: &str) -> (i64, i64) {
        let out = self.fs("root", &["-stat", "%b %Y", path]);
        let mut parts = out.stdout.split_whitespace();
        let size = parts.next().and_then(|v| v.parse().ok()).expect("size");
        let mtime = parts.next().and_then(|v| v.parse().ok()).expect("mtime");
        (size, mtime)
    }

    fn resource(
        &self,
        path: &str,
        (size, timestamp): (i64, i64),
        kind: ResourceType,
        visibility: Visibility,
    ) -> LocalResource {
        LocalResource {
            filesystem: Some(self.hdfs.uri()),
            source: PathBuf::from(path),
            size,
            timestamp,
            kind,
            visibility,
            pattern: None,
        }
    }
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777
}

fn app() -> ApplicationId {
    "application_1795326004599_0001".parse().expect("app id")
}

async fn localize(
    localizer: &Arc<Localizer>,
    res: &LocalResource,
    user: &str,
) -> Result<spindle_nm::localizer::Localized, String> {
    tokio::time::timeout(DEADLINE, localizer.localize(res, user, app()))
        .await
        .unwrap_or_else(|_| panic!("localizing {} hung", res.display()))
}

fn zip_with(path: &Path, name: &str, contents: &[u8]) {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).expect("create zip"));
    w.start_file(name, zip::write::SimpleFileOptions::default())
        .expect("entry");
    w.write_all(contents).expect("contents");
    w.finish().expect("finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_on_hdfs_are_localized_checked_and_refused_as_hadoop_does() {
    let Some(mut fx) = Fixture::start() else {
        return;
    };
    let local = tempfile::tempdir().expect("tempdir");
    // Hadoop's client retries a NameNode it cannot reach 15 times over minutes; the
    // outage below needs an answer sooner.
    let localizer = Arc::new(
        Localizer::new(vec![local.path().to_path_buf()]).with_remote_settings(vec![
            ("dfs.client.failover.max.attempts".into(), "1".into()),
            ("dfs.client.failover.sleep.base.millis".into(), "100".into()),
        ]),
    );

    // A private file, read as its owner.
    fx.fs("alice", &["-mkdir", "-p", "/user/alice/res"]);
    let stat = fx.put("alice", "/user/alice/res/a.txt", b"from hdfs\n");
    let a = fx.resource(
        "/user/alice/res/a.txt",
        stat,
        ResourceType::File,
        Visibility::Private,
    );
    let got = localize(&localizer, &a, "alice").await.expect("a.txt");
    assert_eq!(std::fs::read(&got.path).expect("copy"), b"from hdfs\n");
    assert_eq!(got.bytes, 10);
    assert!(
        got.path
            .starts_with(local.path().join("usercache/alice/filecache")),
        "{}",
        got.path.display()
    );
    // The second container of the user gets the same copy.
    let again = localize(&localizer, &a, "alice").await.expect("cached");
    assert!(again.from_cache);
    assert_eq!(localizer.fetch_count(), 1);

    // An archive is unpacked.
    let zip = local.path().join("b.zip");
    zip_with(&zip, "inside.txt", b"unpacked");
    let zip_bytes = std::fs::read(&zip).expect("zip");
    let stat = fx.put("alice", "/user/alice/res/b.zip", &zip_bytes);
    let b = fx.resource(
        "/user/alice/res/b.zip",
        stat,
        ResourceType::Archive,
        Visibility::Application,
    );
    let got = localize(&localizer, &b, "alice").await.expect("b.zip");
    assert_eq!(
        std::fs::read(got.path.join("inside.txt")).expect("unpacked"),
        b"unpacked"
    );

    // Changed on HDFS after the launch context was written: Hadoop's message.
    let changed = LocalResource {
        timestamp: stat.1 - 1000,
        ..b.clone()
    };
    let err = localize(&localizer, &changed, "alice")
        .await
        .expect_err("changed");
    assert!(err.contains("changed on src filesystem"), "{err}");
    assert!(err.contains(&fx.hdfs.uri()), "{err}");

    // Another user may not read alice's private file: the NameNode refuses.
    fx.fs("alice", &["-chmod", "600", "/user/alice/res/a.txt"]);
    let stat = fx.stat("/user/alice/res/a.txt");
    let private = fx.resource(
        "/user/alice/res/a.txt",
        stat,
        ResourceType::File,
        Visibility::Private,
    );
    let err = localize(&localizer, &private, "mallory")
        .await
        .expect_err("mallory");
    assert!(err.contains("Permission denied"), "{err}");

    // PUBLIC needs everyone to be able to read it.
    let public = fx.resource(
        "/user/alice/res/a.txt",
        stat,
        ResourceType::File,
        Visibility::Public,
    );
    let err = localize(&localizer, &public, "alice")
        .await
        .expect_err("not public");
    assert!(
        err.contains("is not publicly accessible and as such cannot be part of the public cache"),
        "{err}"
    );

    // A resource of a scheme the node does not read is named.
    let proto = hadoop_protos::yarn::LocalResourceProto {
        resource: Some(hadoop_protos::yarn::UrlProto {
            scheme: Some("viewfs".into()),
            host: Some("cluster".into()),
            port: None,
            file: Some("/x".into()),
            user_info: None,
        }),
        ..Default::default()
    };
    let err = LocalResource::from_proto(&proto).expect_err("viewfs");
    assert!(err.contains("scheme viewfs is not supported"), "{err}");

    // A directory given as a FILE resource is copied whole, as Hadoop's
    // FSDownload copies it; checked by the directory's modification time.
    let tree = local.path().join("conf");
    std::fs::create_dir_all(tree.join("sub")).expect("mkdir");
    std::fs::write(tree.join("a.xml"), b"<a/>\n").expect("write");
    std::fs::write(tree.join("sub/b.xml"), b"<b>deep</b>\n").expect("write");
    fx.fs(
        "alice",
        &["-put", "-f", &tree.to_string_lossy(), "/user/alice/conf"],
    );
    let stat = fx.stat("/user/alice/conf");
    let dir = fx.resource(
        "/user/alice/conf",
        stat,
        ResourceType::File,
        Visibility::Private,
    );
    let got = localize(&localizer, &dir, "alice")
        .await
        .expect("a directory");
    assert!(
        got.path.is_dir() && got.path.ends_with("conf"),
        "{}",
        got.path.display()
    );
    assert_eq!(
        std::fs::read(got.path.join("a.xml")).expect("a.xml"),
        b"<a/>\n"
    );
    assert_eq!(
        std::fs::read(got.path.join("sub/b.xml")).expect("sub/b.xml"),
        b"<b>deep</b>\n"
    );
    assert_eq!(got.bytes, 17);
    assert_eq!(mode_of(&got.path.join("sub")), 0o700);
    assert_eq!(mode_of(&got.path.join("sub/b.xml")), 0o500);
    let again = localize(&localizer, &dir, "alice").await.expect("cached");
    assert!(again.from_cache);
    let err = localize(
        &localizer,
        &LocalResource {
            timestamp: stat.1 - 1,
            ..dir.clone()
        },
        "alice",
    )
    .await
    .expect_err("changed");
    assert!(err.contains("changed on src filesystem"), "{err}");
    let err = localize(
        &localizer,
        &LocalResource {
            kind: ResourceType::Archive,
            ..dir.clone()
        },
        "alice",
    )
    .await
    .expect_err("not an archive");
    assert!(err.contains("it is a directory, not an archive"), "{err}");
    // PUBLIC: everything in it must be readable by everyone.
    fx.fs("alice", &["-chmod", "600", "/user/alice/conf/sub/b.xml"]);
    let public_dir = LocalResource {
        visibility: Visibility::Public,
        ..dir.clone()
    };
    let err = localize(&localizer, &public_dir, "bob")
        .await
        .expect_err("not public");
    assert!(err.contains("is not publicly accessible"), "{err}");
    fx.fs("alice", &["-chmod", "644", "/user/alice/conf/sub/b.xml"]);
    let got = localize(&localizer, &public_dir, "bob")
        .await
        .expect("public");
    assert!(got.path.starts_with(local.path().join("filecache")));
    assert_eq!(mode_of(&got.path.join("sub/b.xml")), 0o555);
    assert_eq!(mode_of(&got.path.join("sub")), 0o755);

    // HDFS down: a clear error, nothing cached; back up: served.
    let stat = fx.put("alice", "/user/alice/res/c.txt", b"after the outage\n");
    let c = fx.resource(
        "/user/alice/res/c.txt",
        stat,
        ResourceType::File,
        Visibility::Private,
    );
    fx.hdfs.kill().expect("kill -9 HDFS");
    let err = localize(&localizer, &c, "alice")
        .await
        .expect_err("HDFS is down");
    assert!(
        err.contains("cannot localize") && err.contains("c.txt"),
        "{err}"
    );
    fx.hdfs.restart().expect("HDFS restarts");
    let got = localize(&localizer, &c, "alice")
        .await
        .expect("after restart");
    assert_eq!(
        std::fs::read(&got.path).expect("copy"),
        b"after the outage\n"
    );
}

/// Alice's HDFS delegation token, as Hadoop's client fetches one for a job
/// (`FileSystem.addDelegationTokens`), read back from Hadoop's token file.
fn delegation_token(fx: &Fixture, user: &str) -> (Vec<spindle_fs::Token>, PathBuf) {
    let classes = fx
        .clients
        .compile_java("HdfsToken")
        .expect("HdfsToken compiles");
    let file = fx.conf.path().join(format!("{user}.tokens"));
    let file_arg = file.to_string_lossy().to_string();
    let out = fx
        .clients
        .yarn()
        .classpath(&classes)
        .run(["HdfsToken", "get", &fx.hdfs.uri(), user, "yarn", &file_arg])
        .expect("HdfsToken runs");
    assert!(out.success(), "HdfsToken get: {out}");
    let service = format!("127.0.0.1:{}", fx.hdfs.port());
    assert!(
        out.stdout
            .contains(&format!("token HDFS_DELEGATION_TOKEN {service}")),
        "{out}"
    );
    let bytes = std::fs::read(&file).expect("token file");
    let creds = spindle_common::security::Credentials::from_bytes(&bytes).expect("credentials");
    let tokens = creds.tokens.into_iter().map(|(_, t)| t).collect();
    (tokens, file)
}

/// The bytes of `res` localized for `user` with `tokens` by a localizer of
/// its own (nothing comes from a cache).
async fn localize_with(
    res: &LocalResource,
    user: &str,
    tokens: &[spindle_fs::Token],
) -> Result<Vec<u8>, String> {
    let local = tempfile::tempdir().expect("tempdir");
    let localizer = Arc::new(
        Localizer::new(vec![local.path().to_path_buf()]).with_remote_settings(vec![(
            "dfs.client.failover.max.attempts".into(),
            "1".into(),
        )]),
    );
    let got = tokio::time::timeout(
        DEADLINE,
        localizer.localize_with(res, user, app(), None, Arc::new(tokens.to_vec())),
    )
    .await
    .unwrap_or_else(|_| panic!("localizing {} hung", res.display()))?;
    Ok(std::fs::read(&got.path).expect("copy"))
}

/// A private resource is read with the delegation token in the container's
/// credentials, as Hadoop's ContainerLocalizer reads with the tokens it is
/// started with: the NameNode checks the token (a forged or cancelled one
/// is refused) and knows the reader as the token's owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_resources_are_read_with_the_containers_hdfs_delegation_token() {
    let Some(fx) = Fixture::start() else {
        return;
    };
    fx.fs("alice", &["-mkdir", "-p", "/user/alice/tok"]);
    fx.put("alice", "/user/alice/tok/secret.txt", b"alice only\n");
    fx.fs("alice", &["-chmod", "600", "/user/alice/tok/secret.txt"]);
    let stat = fx.stat("/user/alice/tok/secret.txt");
    let secret = fx.resource(
        "/user/alice/tok/secret.txt",
        stat,
        ResourceType::File,
        Visibility::Private,
    );
    let (tokens, file) = delegation_token(&fx, "alice");
    assert_eq!(tokens.len(), 1);

    // With alice's token: read.
    let got = localize_with(&secret, "alice", &tokens)
        .await
        .expect("read with the token");
    assert_eq!(got, b"alice only\n");

    // The NameNode knows the holder of alice's token as alice, whatever user
    // name the client would claim: the token, not the name, is the identity.
    let got = localize_with(&secret, "mallory", &tokens)
        .await
        .expect("the token's owner reads it");
    assert_eq!(got, b"alice only\n");
    let err = localize_with(&secret, "mallory", &[])
        .await
        .expect_err("mallory without the token");
    assert!(err.contains("Permission denied"), "{err}");

    // A forged token (its password changed) is refused by the NameNode; the
    // client does not fall back to its user name.
    let mut forged = tokens.clone();
    if let Some(last) = forged[0].password.last_mut() {
        *last ^= 0x5a;
    }
    let err = localize_with(&secret, "alice", &forged)
        .await
        .expect_err("forged token");
    assert!(
        err.contains("DIGEST-MD5") && err.contains("Mismatched response"),
        "{err}"
    );

    // A token of another NameNode is not presented to this one.
    let mut elsewhere = tokens.clone();
    elsewhere[0].service = "127.0.0.1:1".into();
    localize_with(&secret, "alice", &elsewhere)
        .await
        .expect("a token for another service is not used");

    // Cancelled (as the RM cancels a finished job's tokens): refused.
    let out = fx
        .clients
        .yarn()
        .classpath(fx.clients.compile_java("HdfsToken").expect("compiles"))
        .run([
            "HdfsToken",
            "cancel",
            &fx.hdfs.uri(),
            "alice",
            &file.to_string_lossy(),
        ])
        .expect("HdfsToken runs");
    assert!(out.success(), "HdfsToken cancel: {out}");
    let err = localize_with(&secret, "alice", &tokens)
        .await
        .expect_err("cancelled token");
    assert!(
        err.contains("InvalidToken") && err.contains("can't be found in cache"),
        "{err}"
    );
}
