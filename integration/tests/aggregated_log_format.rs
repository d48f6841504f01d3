//! The aggregated log files of `spindle-tfile` against Hadoop 3.3.4's own classes: Hadoop's
//! `AggregatedLogFormat.LogReader` reads exactly what our `LogWriter` wrote, our `LogReader`
//! reads exactly what Hadoop's `LogWriter` wrote, both writers produce the same bytes for the
//! same logs, and Hadoop's TFile dumper (`org.apache.hadoop.io.file.tfile.TFile`) accepts our
//! files.
//!
//! The Java half is integration/java/AggregatedLogTool.java, run with the Hadoop client jars
//! through integration/bin/yarn. The logs cover several containers, an empty file, a file
//! over 1 MiB (several value chunks) and records past the 256 KiB minimum block size (several
//! data blocks), non-ASCII and binary content, a container of many small files and one with
//! none. `yarn logs` itself prints the logs of our file placed in Hadoop's remote log layout.

use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use spindle_integration::logs::minicluster_jar;
use spindle_integration::HadoopClients;
use spindle_tfile::aggregated::{ContainerLogs, LogFile, LogReader, LogWriter};
use spindle_tfile::tfile::TFileReader;

const OWNER: &str = "alice";

/// One container of the fixture: its id and its files (name, content).
struct Container {
    id: String,
    files: Vec<(String, Vec<u8>)>,
}

/// Deterministic pseudo-random bytes (xorshift), so that content is not compressible or
/// periodic.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn container_id(n: u32) -> String {
    format!("container_1700000000000_0042_01_{n:06}")
}

fn fixture() -> Vec<Container> {
    let mut syslog = "héllo wörld ✓ 日本語 😀\n".as_bytes().to_vec();
    syslog.extend(0u8..=255);
    let many = (0..200)
        .map(|i| {
            (
                format!("part-{i:05}.log"),
                format!("line {i}\n").into_bytes(),
            )
        })
        .collect();
    vec![
        Container {
            id: container_id(1),
            files: vec![
                ("stdout".into(), b"hello from the AM\n".to_vec()),
                ("stderr".into(), Vec::new()),
                ("syslog".into(), syslog),
            ],
        },
        Container {
            id: container_id(2),
            files: vec![
                ("big.log".into(), noise(2_600_000, 7)),
                ("stdout".into(), b"done\n".to_vec()),
            ],
        },
        // Past the block size on its own: the third data block starts after it.
        Container {
            id: container_id(3),
            files: vec![("stdout".into(), noise(300_000, 11))],
        },
        Container {
            id: container_id(4),
            files: many,
        },
        Container {
            id: container_id(5),
            files: vec![("stderr".into(), Vec::new())],
        },
        // No files: neither writer writes a record for it.
        Container {
            id: container_id(6),
            files: Vec::new(),
        },
    ]
}

fn acls() -> Vec<(String, String)> {
    vec![
        ("VIEW_APP".to_string(), "alice,bob admins".to_string()),
        ("MODIFY_APP".to_string(), " ".to_string()),
    ]
}

/// Writes every container's files into `<root>/<container id>/` and returns the folders.
fn write_dirs(root: &Path, containers: &[Container]) -> Vec<PathBuf> {
    containers
        .iter()
        .map(|c| {
            let dir = root.join(&c.id);
            std::fs::create_dir_all(&dir).expect("container dir");
            for (name, content) in &c.files {
                std::fs::write(dir.join(name), content).expect("log file");
            }
            dir
        })
        .collect()
}

/// The (name, path) list our writer takes, for one container folder.
fn file_list(dir: &Path, container: &Container) -> Vec<(String, PathBuf)> {
    container
        .files
        .iter()
        .map(|(name, _)| (name.clone(), dir.join(name)))
        .collect()
}

/// Writes the aggregated file with our writer; returns the seconds it took.
fn write_ours(path: &Path, containers: &[Container], dirs: &[PathBuf]) -> f64 {
    let started = Instant::now();
    let out = File::create(path).expect("create the aggregated file");
    let mut writer = LogWriter::new(out, OWNER, &acls()).expect("start the writer");
    for (c, dir) in containers.iter().zip(dirs) {
        writer
            .append_container(&c.id, &file_list(dir, c))
            .expect("append a container");
    }
    writer
        .finish()
        .expect("finish the file")
        .sync_all()
        .expect("sync");
    started.elapsed().as_secs_f64()
}

/// The logs as both readers should see them: containers with files, their files sorted by
/// name (their paths share the folder).
fn expected_logs(containers: &[Container]) -> Vec<ContainerLogs> {
    containers
        .iter()
        .filter(|c| !c.files.is_empty())
        .map(|c| {
            let mut files: Vec<LogFile> = c
                .files
                .iter()
                .map(|(name, content)| LogFile {
                    name: name.clone(),
                    content: content.clone(),
                })
                .collect();
            files.sort_by(|a, b| a.name.cmp(&b.name));
            ContainerLogs {
                container_id: c.id.clone(),
                files,
            }
        })
        .collect()
}

/// What `AggregatedLogTool dump` prints for these logs.
fn expected_dump(logs: &[ContainerLogs]) -> String {
    let mut out = format!("owner\t{OWNER}\n");
    let mut sorted = acls();
    sorted.sort();
    for (access, acl) in sorted {
        let _ = writeln!(out, "acl\t{access}\t{acl}");
    }
    for c in logs {
        let _ = writeln!(out, "container\t{}", c.container_id);
        for f in &c.files {
            let mut hex = String::with_capacity(f.content.len() * 2);
            for b in &f.content {
                let _ = write!(hex, "{b:02x}");
            }
            let _ = writeln!(out, "file\t{}\t{}\t{hex}", f.name, f.content.len());
        }
    }
    out.push_str("end\n");
    out
}

fn tool(clients: &HadoopClients) -> PathBuf {
    match clients.compile_java("AggregatedLogTool") {
        Ok(dir) => dir,
        Err(e) => panic!("cannot compile AggregatedLogTool: {e:#}"),
    }
}

/// Runs `AggregatedLogTool dump <file>` and returns its stdout.
fn hadoop_dump(clients: &HadoopClients, classes: &Path, file: &Path) -> String {
    let out = clients
        .yarn()
        .classpath(classes)
        .run([
            "AggregatedLogTool".as_ref(),
            "dump".as_ref(),
            file.as_os_str(),
        ])
        .expect("run AggregatedLogTool dump");
    out.assert_success();
    out.stdout
}

/// A compact first difference of two long texts, for assertion messages.
fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = at.saturating_sub(80);
    let around = |s: &str| {
        s.get(from..(at + 80).min(s.len()))
            .unwrap_or("")
            .to_string()
    };
    format!(
        "lengths {} and {}, first difference at byte {at}:\n  got:      {:?}\n  expected: {:?}",
        a.len(),
        b.len(),
        around(a),
        around(b)
    )
}

#[test]
fn hadoop_reads_exactly_what_our_writer_wrote() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let classes = tool(&clients);
    let tmp = tempfile::tempdir().expect("tempdir");
    let containers = fixture();
    let dirs = write_dirs(&tmp.path().join("logs"), &containers);
    let file = tmp.path().join("node-1_8041");
    write_ours(&file, &containers, &dirs);

    // Several data blocks: the file really crosses the 256 KiB block size.
    let reader = TFileReader::new(File::open(&file).expect("open")).expect("our reader");
    assert!(
        reader.data_blocks().len() >= 3,
        "only {} data blocks",
        reader.data_blocks().len()
    );

    let dump = hadoop_dump(&clients, &classes, &file);
    let expected = expected_dump(&expected_logs(&containers));
    assert!(dump == expected, "{}", first_difference(&dump, &expected));
}

#[test]
fn our_reader_reads_exactly_what_hadoop_wrote_and_the_bytes_are_the_same() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let classes = tool(&clients);
    let tmp = tempfile::tempdir().expect("tempdir");
    let containers = fixture();
    let dirs = write_dirs(&tmp.path().join("logs"), &containers);
    let hadoop_file = tmp.path().join("hadoop-written");
    let mut args: Vec<std::ffi::OsString> = vec![
        "AggregatedLogTool".into(),
        "write".into(),
        hadoop_file.clone().into(),
        OWNER.into(),
    ];
    for (access, acl) in acls() {
        args.push(format!("acl:{access}={acl}").into());
    }
    for (c, dir) in containers.iter().zip(&dirs) {
        let mut item = std::ffi::OsString::from(format!("{}=", c.id));
        item.push(dir);
        args.push(item);
    }
    let out = clients
        .yarn()
        .classpath(&classes)
        .run(&args)
        .expect("run AggregatedLogTool write");
    out.assert_success();

    let mut reader = LogReader::new(File::open(&hadoop_file).expect("open Hadoop's file"))
        .expect("our reader opens Hadoop's file");
    assert_eq!(reader.version(), Some(1));
    assert_eq!(reader.owner(), Some(OWNER));
    assert_eq!(reader.acls(), &acls()[..]);
    let logs = reader.read_all().expect("our reader reads Hadoop's file");
    let expected = expected_logs(&containers);
    assert_eq!(logs.len(), expected.len());
    for (got, want) in logs.iter().zip(&expected) {
        assert_eq!(got.container_id, want.container_id);
        let names = |c: &ContainerLogs| c.files.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(got), names(want), "{}", want.container_id);
        for (g, w) in got.files.iter().zip(&want.files) {
            assert!(
                g.content == w.content,
                "{} {}: {} bytes read, {} expected",
                want.container_id,
                w.name,
                g.content.len(),
                w.content.len()
            );
        }
    }

    // Same logs, same order, same ACL order: our writer's bytes are Hadoop's.
    let ours = tmp.path().join("ours");
    write_ours(&ours, &containers, &dirs);
    let hadoop_bytes = std::fs::read(&hadoop_file).expect("read Hadoop's file");
    let our_bytes = std::fs::read(&ours).expect("read our file");
    if let Some(at) = hadoop_bytes
        .iter()
        .zip(&our_bytes)
        .position(|(a, b)| a != b)
    {
        panic!(
            "the files differ first at byte {at} (Hadoop's {} bytes, ours {})",
            hadoop_bytes.len(),
            our_bytes.len()
        );
    }
    assert_eq!(hadoop_bytes.len(), our_bytes.len());
}

/// The properties table of Hadoop's TFile dumper: `Name : value` lines.
fn dumper_property<'a>(stdout: &'a str, name: &str) -> Option<&'a str> {
    stdout.lines().find_map(|line| {
        let (key, value) = line.split_once(" : ")?;
        (key.trim() == name).then(|| value.trim())
    })
}

#[test]
fn hadoops_tfile_dumper_accepts_our_file() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let containers = fixture();
    let dirs = write_dirs(&tmp.path().join("logs"), &containers);
    let file = tmp.path().join("node-1_8041");
    write_ours(&file, &containers, &dirs);
    let reader = TFileReader::new(File::open(&file).expect("open")).expect("our reader");
    let len = std::fs::metadata(&file).expect("stat").len();

    let out = clients
        .yarn()
        .run([
            "org.apache.hadoop.io.file.tfile.TFile".as_ref(),
            file.as_os_str(),
        ])
        .expect("run the TFile dumper");
    out.assert_success();
    // The dumper prints a failure's stack trace and still exits 0.
    assert!(
        !out.stderr.contains("Exception") && !out.stdout.contains("Exception"),
        "the dumper failed:\n{out}"
    );
    let property = |name: &str| match dumper_property(&out.stdout, name) {
        Some(v) => v.to_string(),
        None => panic!("no {name:?} in the dumper's output:\n{out}"),
    };
    assert_eq!(property("BCFile Version"), "v1.0");
    assert_eq!(property("TFile Version"), "v1.0");
    assert_eq!(property("File Length"), len.to_string());
    assert_eq!(property("Data Compression"), "none");
    assert_eq!(
        property("Record Count"),
        (3 + expected_logs(&containers).len()).to_string()
    );
    assert_eq!(property("Sorted"), "false");
    assert_eq!(
        property("Data Block Count"),
        reader.data_blocks().len().to_string()
    );
    assert_eq!(property("Meta Block Count"), "3");
    // The per-block table: one line per data block with its record count, then the meta
    // blocks by name.
    for name in ["BCFile.index", "TFile.index", "TFile.meta"] {
        assert!(
            out.stdout.lines().any(|l| l.trim_start().starts_with(name)),
            "no {name} line:\n{out}"
        );
    }
}

/// The figure the coordinator asked for: 100 containers of stdout and stderr of 10 KiB each.
/// Prints the size and the time our (debug build) writer took; Hadoop reads the result.
#[test]
fn a_hundred_containers_of_twenty_kib_size_and_write_time() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let classes = tool(&clients);
    let tmp = tempfile::tempdir().expect("tempdir");
    let containers: Vec<Container> = (1..=100)
        .map(|n| Container {
            id: container_id(n),
            files: vec![
                ("stdout".into(), noise(10 * 1024, u64::from(n))),
                ("stderr".into(), noise(10 * 1024, u64::from(n) + 1000)),
            ],
        })
        .collect();
    let dirs = write_dirs(&tmp.path().join("logs"), &containers);
    let file = tmp.path().join("node-1_8041");
    let seconds = write_ours(&file, &containers, &dirs);
    let size = std::fs::metadata(&file).expect("stat").len();
    let content = 100 * 2 * 10 * 1024;
    eprintln!(
        "100 containers x (stdout 10 KiB + stderr 10 KiB): {size} bytes ({} bytes over the \
         {content} bytes of logs), written in {:.1} ms (debug build, local disk, fsync included)",
        size - content,
        seconds * 1000.0
    );
    let dump = hadoop_dump(&clients, &classes, &file);
    let expected = expected_dump(&expected_logs(&containers));
    assert!(dump == expected, "{}", first_difference(&dump, &expected));
}

/// One `LogType` section of `yarn logs` output: (container id, file name, length, content).
type Section = (String, String, usize, String);

/// Splits what `yarn logs` printed into its per-file sections.
fn parse_yarn_logs(stdout: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut rest = stdout;
    while let Some(at) = rest.find("Container: ") {
        rest = &rest[at + "Container: ".len()..];
        let container = rest.split([' ', '\n']).next().unwrap_or("").to_string();
        let field = |rest: &str, name: &str| -> Option<String> {
            let at = rest.find(&format!("\n{name}:"))?;
            let line = rest[at + name.len() + 2..].lines().next()?;
            Some(line.to_string())
        };
        let (Some(name), Some(length)) = (field(rest, "LogType"), field(rest, "LogLength")) else {
            break;
        };
        let Some(start) = rest
            .find("\nLogContents:\n")
            .map(|at| at + "\nLogContents:\n".len())
        else {
            break;
        };
        let end_marker = format!("\nEnd of LogType:{name}\n");
        let Some(len) = rest[start..].find(&end_marker) else {
            break;
        };
        let content = rest[start..start + len].to_string();
        sections.push((
            container,
            name,
            length.parse().unwrap_or(usize::MAX),
            content,
        ));
        rest = &rest[start + len + end_marker.len()..];
    }
    sections
}

/// `yarn logs` (Hadoop's LogsCLI) prints every file of our file, found in the remote
/// application log directory where a NodeManager puts it
/// (`<remote-app-log-dir>/<user>/bucket-logs-tfile/<app id % 10000>/<app id>/<host>_<port>`),
/// with no ResourceManager running (the CLI then reads the file system directly).
#[test]
fn yarn_logs_prints_every_file_of_our_file() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jettison) = minicluster_jar() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    // Text only: the CLI prints the bytes as they are.
    let big: String = (0..60_000)
        .map(|i| format!("line {i} of a big log\n"))
        .collect();
    let containers = vec![
        Container {
            id: container_id(1),
            files: vec![
                ("stdout".into(), b"hello from the AM\n".to_vec()),
                ("stderr".into(), Vec::new()),
                (
                    "syslog".into(),
                    "héllo wörld ✓ 日本語 😀\n".as_bytes().to_vec(),
                ),
            ],
        },
        Container {
            id: container_id(2),
            files: vec![("big.log".into(), big.into_bytes())],
        },
        Container {
            id: container_id(3),
            files: (0..50)
                .map(|i| {
                    (
                        format!("part-{i:05}.log"),
                        format!("line {i}\n").into_bytes(),
                    )
                })
                .collect(),
        },
    ];
    let dirs = write_dirs(&tmp.path().join("logs"), &containers);
    let remote = tmp.path().join("remote");
    let app_dir = remote
        .join(OWNER)
        .join("bucket-logs-tfile")
        .join("0042")
        .join("application_1700000000000_0042");
    std::fs::create_dir_all(&app_dir).expect("remote app dir");
    write_ours(&app_dir.join("node-1_8041"), &containers, &dirs);

    let conf_dir = tmp.path().join("conf");
    std::fs::create_dir_all(&conf_dir).expect("conf dir");
    let mut yarn = spindle_integration::conf::fast_failing_client_settings();
    yarn.set("yarn.resourcemanager.address", "127.0.0.1:1")
        .set("yarn.log-aggregation-enable", "true")
        .set("yarn.nodemanager.remote-app-log-dir", remote.display());
    yarn.write(&conf_dir.join("yarn-site.xml"))
        .expect("yarn-site.xml");
    let mut core = spindle_integration::HadoopConf::new();
    core.set("fs.defaultFS", "file:///");
    core.write(&conf_dir.join("core-site.xml"))
        .expect("core-site.xml");

    let out = clients
        .yarn()
        .conf_dir(&conf_dir)
        .classpath(jettison)
        .run([
            "logs",
            "-applicationId",
            "application_1700000000000_0042",
            "-appOwner",
            OWNER,
        ])
        .expect("run yarn logs");
    out.assert_success();
    let mut sections = parse_yarn_logs(&out.stdout);
    sections.sort();
    let mut expected: Vec<Section> = containers
        .iter()
        .flat_map(|c| {
            c.files.iter().map(|(name, content)| {
                (
                    c.id.clone(),
                    name.clone(),
                    content.len(),
                    String::from_utf8_lossy(content).into_owned(),
                )
            })
        })
        .collect();
    expected.sort();
    assert_eq!(
        sections.len(),
        expected.len(),
        "sections of:\n{}",
        out.stderr
    );
    for (got, want) in sections.iter().zip(&expected) {
        assert!(
            got == want,
            "yarn logs printed {} {} ({} bytes, {} chars), expected {} bytes",
            got.0,
            got.1,
            got.2,
            got.3.len(),
            want.2
        );
    }
}
