//! Hostile archives against the unpacker: crafted tar, tar.gz, zip and jar
//! files that try to create, change or link to something outside the
//! directory they are unpacked into, and a seeded property test over random
//! archives of directories, files, symbolic links and hard links.
//!
//! Each case unpacks into `<tmp>/out/x` next to a sentinel file
//! `<tmp>/sentinel` and then checks the real file system: the sentinel's
//! content and link count are unchanged, nothing new appeared next to it,
//! no hard link in the tree is shared with a file outside it, and no path in
//! the tree resolves (following its links the way the kernel does) to a
//! place outside the tree.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use spindle_nm::unpack::{unpack, ArchiveFormat, UnpackError};

const ORIGINAL: &[u8] = b"the sentinel's original content\n";

/// An archive entry, named exactly as it is written into the archive.
#[derive(Debug, Clone)]
enum E {
    Dir(String),
    File(String, Vec<u8>),
    Sym(String, String),
    Hard(String, String),
    Fifo(String),
    CharDev(String),
}

fn dir(n: &str) -> E {
    E::Dir(n.to_string())
}
fn file(n: &str, data: &str) -> E {
    E::File(n.to_string(), data.as_bytes().to_vec())
}
fn sym(n: &str, t: &str) -> E {
    E::Sym(n.to_string(), t.to_string())
}
fn hard(n: &str, t: &str) -> E {
    E::Hard(n.to_string(), t.to_string())
}

/// A GNU tar header with the raw name and link name (the tar crate's
/// setters refuse the hostile ones this test needs).
fn header(name: &str, kind: tar::EntryType, size: u64, link: Option<&str>) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    {
        let gnu = h.as_gnu_mut().expect("gnu header");
        let n = name.as_bytes();
        assert!(
            n.len() <= gnu.name.len(),
            "name too long for the test: {name}"
        );
        gnu.name[..n.len()].copy_from_slice(n);
        if let Some(link) = link {
            let l = link.as_bytes();
            assert!(l.len() <= gnu.linkname.len(), "link too long: {link}");
            gnu.linkname[..l.len()].copy_from_slice(l);
        }
    }
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(if kind == tar::EntryType::Directory {
        0o755
    } else {
        0o644
    });
    h.set_cksum();
    h
}

fn write_tar(path: &Path, gz: bool, entries: &[E]) {
    let file = fs::File::create(path).expect("create tar");
    let writer: Box<dyn Write> = if gz {
        Box::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::fast(),
        ))
    } else {
        Box::new(file)
    };
    let mut b = tar::Builder::new(writer);
    for e in entries {
        let (h, data): (tar::Header, &[u8]) = match e {
            E::Dir(n) => (header(n, tar::EntryType::Directory, 0, None), &[]),
            E::File(n, d) => (header(n, tar::EntryType::Regular, d.len() as u64, None), d),
            E::Sym(n, t) => (header(n, tar::EntryType::Symlink, 0, Some(t)), &[]),
            E::Hard(n, t) => (header(n, tar::EntryType::Link, 0, Some(t)), &[]),
            E::Fifo(n) => (header(n, tar::EntryType::Fifo, 0, None), &[]),
            E::CharDev(n) => (header(n, tar::EntryType::Char, 0, None), &[]),
        };
        b.append(&h, data).expect("append");
    }
    b.into_inner().expect("finish tar").flush().expect("flush");
}

/// Zip has no hard links or devices: those entries are left out, except a
/// FIFO, which zip marks with its mode. The zip writer refuses a name twice,
/// so a repeated name gets a `./` in front (the same entry once unpacked).
fn write_zip(path: &Path, entries: &[E]) {
    use zip::write::SimpleFileOptions;
    let mut w = zip::ZipWriter::new(fs::File::create(path).expect("create zip"));
    let mut used = std::collections::HashSet::new();
    for e in entries {
        let e = &match e {
            E::Dir(n) => E::Dir(unique(&mut used, n)),
            E::File(n, d) => E::File(unique(&mut used, n), d.clone()),
            E::Sym(n, t) => E::Sym(unique(&mut used, n), t.clone()),
            E::Fifo(n) => E::Fifo(unique(&mut used, n)),
            other => other.clone(),
        };
        match e {
            E::Dir(n) => w
                .add_directory(n.as_str(), SimpleFileOptions::default())
                .expect("zip dir"),
            E::File(n, d) => {
                w.start_file(n.as_str(), SimpleFileOptions::default())
                    .expect("zip file");
                w.write_all(d).expect("zip data");
            }
            E::Sym(n, t) => w
                .add_symlink(n.as_str(), t.as_str(), SimpleFileOptions::default())
                .expect("zip symlink"),
            E::Fifo(n) => {
                w.start_file(
                    n.as_str(),
                    SimpleFileOptions::default().external_attributes(0o010_644 << 16),
                )
                .expect("zip fifo");
            }
            E::Hard(..) | E::CharDev(_) => {}
        }
    }
    w.finish().expect("finish zip");
}

fn unique(used: &mut std::collections::HashSet<String>, name: &str) -> String {
    let mut n = name.to_string();
    while !used.insert(n.clone()) {
        n = format!("./{n}");
    }
    n
}

/// The formats an entry list can be written in, by file name.
const FORMATS: [(&str, ArchiveFormat); 5] = [
    ("a.tar", ArchiveFormat::Tar),
    ("a.tar.gz", ArchiveFormat::TarGz),
    ("a.tgz", ArchiveFormat::TarGz),
    ("a.zip", ArchiveFormat::Zip),
    ("a.jar", ArchiveFormat::Zip),
];

fn write_archive(path: &Path, format: ArchiveFormat, entries: &[E]) {
    let gz = path.to_string_lossy().ends_with("gz");
    match format {
        ArchiveFormat::Zip => write_zip(path, entries),
        ArchiveFormat::Tar | ArchiveFormat::TarGz => write_tar(path, gz, entries),
    }
}

/// A scratch area: `<tmp>/sentinel`, the archives under `<tmp>/in`, and the
/// unpacked tree at `<tmp>/out/x`.
struct Scene {
    _tmp: tempfile::TempDir,
    top: PathBuf,
    sentinel: PathBuf,
    dest: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = fs::canonicalize(tmp.path()).expect("canonical tmp");
        let sentinel = top.join("sentinel");
        fs::write(&sentinel, ORIGINAL).expect("sentinel");
        fs::create_dir(top.join("in")).expect("in");
        Scene {
            dest: top.join("out").join("x"),
            _tmp: tmp,
            top,
            sentinel,
        }
    }

    /// The sentinel's absolute path without its leading `/`, for links
    /// that climb to the file-system root first.
    fn sentinel_from_root(&self) -> String {
        self.sentinel
            .to_string_lossy()
            .trim_start_matches('/')
            .to_string()
    }

    fn unpack(&self, name: &str, format: ArchiveFormat, entries: &[E]) -> Result<(), UnpackError> {
        let archive = self.top.join("in").join(name);
        write_archive(&archive, format, entries);
        let _ = fs::remove_dir_all(self.top.join("out"));
        unpack(&archive, format, &self.dest).map(|_| ())
    }

    /// Everything the rule promises, checked on the real file system.
    fn assert_contained(&self, what: &str) {
        assert_eq!(
            fs::read(&self.sentinel).expect("sentinel"),
            ORIGINAL,
            "{what}: the sentinel was changed"
        );
        assert_eq!(
            fs::metadata(&self.sentinel).expect("sentinel").nlink(),
            1,
            "{what}: a hard link to the sentinel exists"
        );
        let mut top: Vec<String> = fs::read_dir(&self.top)
            .expect("list tmp")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert!(
            top == ["in", "out", "sentinel"] || top == ["in", "sentinel"],
            "{what}: something was created next to the tree: {top:?}"
        );
        if let Ok(out) = fs::read_dir(self.top.join("out")) {
            let names: Vec<_> = out.map(|e| e.expect("entry").file_name()).collect();
            assert!(
                names.is_empty() || names == ["x"],
                "{what}: something was created next to the tree: {names:?}"
            );
        }
        if !self.dest.exists() {
            return;
        }
        let mut inodes: HashMap<(u64, u64), (u64, usize)> = HashMap::new();
        for path in walk(&self.dest) {
            let resolved = resolve(&path);
            assert!(
                resolved.starts_with(&self.dest),
                "{what}: {} resolves to {}, outside the tree",
                path.display(),
                resolved.display()
            );
            let m = fs::symlink_metadata(&path).expect("stat");
            if m.file_type().is_file() {
                let e = inodes.entry((m.dev(), m.ino())).or_insert((m.nlink(), 0));
                e.1 += 1;
            }
        }
        for ((_, ino), (nlink, seen)) in inodes {
            assert_eq!(
                nlink, seen as u64,
                "{what}: inode {ino} has {nlink} links but {seen} in the tree"
            );
        }
    }
}

/// Every path below `root` (not following links), `root` included.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        i += 1;
        if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            for e in fs::read_dir(&p).expect("read dir") {
                out.push(e.expect("entry").path());
            }
        }
    }
    out
}

/// One step of a path resolution.
enum Step {
    Root,
    Up,
    Name(OsString),
}

fn steps(path: &Path) -> Vec<Step> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Step::Root),
            Component::ParentDir => Some(Step::Up),
            Component::Normal(n) => Some(Step::Name(n.to_os_string())),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Where `path` leads when its links are followed as the kernel follows
/// them; parts that do not exist are taken as plain names (so a dangling
/// link is judged by where it would lead once they exist). A loop resolves
/// to `path` itself (the kernel refuses it).
fn resolve(path: &Path) -> PathBuf {
    let mut pending: VecDeque<Step> = steps(path).into();
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(step) = pending.pop_front() {
        match step {
            Step::Root => current = PathBuf::from("/"),
            Step::Up => {
                current.pop();
            }
            Step::Name(n) => {
                let next = current.join(n);
                match fs::read_link(&next) {
                    Ok(target) => {
                        links += 1;
                        if links > 40 {
                            return path.to_path_buf();
                        }
                        for s in steps(&target).into_iter().rev() {
                            pending.push_front(s);
                        }
                    }
                    Err(_) => current = next,
                }
            }
        }
    }
    current
}

fn assert_refused(r: Result<(), UnpackError>, what: &str, needle: &str) {
    match r {
        Err(UnpackError::UnsafeEntry { ref problem, .. }) => {
            let text = r.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                problem.contains(needle),
                "{what}: refused, but not for '{needle}': {text}"
            );
            assert!(text.ends_with("the archive is refused"), "{text}");
        }
        Err(other) => panic!("{what}: refused for another reason: {other}"),
        Ok(()) => panic!("{what}: the archive was unpacked"),
    }
}

/// `l1 -> a/b/..`, `lN -> l(N-1)/..` up to `l12`: each inside the tree by
/// its name, together the file-system root.
fn chain() -> Vec<E> {
    let mut v = vec![dir("a/"), dir("a/b/"), sym("l1", "a/b/..")];
    for n in 2..=12 {
        v.push(sym(&format!("l{n}"), &format!("l{}/..", n - 1)));
    }
    v
}

#[test]
fn chained_links_that_climb_out_are_refused() {
    let s = Scene::new();
    for (name, format) in FORMATS {
        let mut entries = chain();
        entries.push(sym("shadow", &format!("l12/{}", s.sentinel_from_root())));
        let what = format!("{name}: link chain to the sentinel");
        assert_refused(s.unpack(name, format, &entries), &what, "'..' after a name");
        s.assert_contained(&what);

        // The same chain with the shape of the report: a link to
        // l12/etc/shadow.
        let mut entries = chain();
        entries.push(sym("shadow", "l12/etc/shadow"));
        let what = format!("{name}: link chain to /etc/shadow");
        assert_refused(s.unpack(name, format, &entries), &what, "'..' after a name");
        s.assert_contained(&what);
    }
}

#[test]
fn hard_links_through_links_or_out_of_the_tree_are_refused() {
    let s = Scene::new();
    for (name, format) in [
        ("a.tar", ArchiveFormat::Tar),
        ("a.tgz", ArchiveFormat::TarGz),
    ] {
        // Through the chain of links, to the sentinel.
        let mut entries = chain();
        entries.push(hard("h", &format!("l12/{}", s.sentinel_from_root())));
        let what = format!("{name}: hard link through the chain");
        assert!(s.unpack(name, format, &entries).is_err(), "{what}");
        s.assert_contained(&what);

        // Only the hard link: through a link that stays inside.
        let entries = vec![
            dir("sub/"),
            file("sub/f", "inside"),
            sym("d", "sub"),
            hard("h", "d/f"),
        ];
        let what = format!("{name}: hard link through an inside link");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "through the symbolic link 'd'",
        );
        s.assert_contained(&what);

        // To a symbolic link.
        let entries = vec![file("f", "x"), sym("l", "f"), hard("h", "l")];
        let what = format!("{name}: hard link to a link");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "which is a symbolic link",
        );
        s.assert_contained(&what);

        // Out of the tree by name.
        for target in [
            "../../sentinel".to_string(),
            s.sentinel.display().to_string(),
        ] {
            let entries = vec![hard("h", &target)];
            let what = format!("{name}: hard link to {target}");
            assert!(s.unpack(name, format, &entries).is_err(), "{what}");
            s.assert_contained(&what);
        }

        // To a file not unpacked (yet).
        let entries = vec![hard("h", "later"), file("later", "x")];
        let what = format!("{name}: hard link before its target");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "not a file unpacked before it",
        );
        s.assert_contained(&what);

        // A proper one is kept, and shares the file.
        let entries = vec![dir("d/"), file("d/f", "data"), hard("g", "d/f")];
        s.unpack(name, format, &entries)
            .expect("a hard link inside");
        assert_eq!(fs::read(s.dest.join("g")).expect("read"), b"data");
        assert_eq!(fs::metadata(s.dest.join("g")).expect("stat").nlink(), 2);
        s.assert_contained(&format!("{name}: proper hard link"));
    }
}

#[test]
fn absolute_and_parent_names_are_refused() {
    let s = Scene::new();
    let abs = s.top.join("abs.txt").display().to_string();
    for (name, format) in FORMATS {
        for entries in [
            vec![file(&abs, "evil")],
            vec![file("../escaped.txt", "evil")],
            vec![file("a/../../escaped.txt", "evil")],
            vec![dir("../../d/")],
            vec![sym("../l", "x")],
            vec![sym("l", &s.sentinel.display().to_string())],
            vec![dir("a/"), sym("a/up", "../../sentinel")],
        ] {
            let what = format!("{name}: {entries:?}");
            assert!(s.unpack(name, format, &entries).is_err(), "{what}");
            s.assert_contained(&what);
            assert!(!s.top.join("abs.txt").exists(), "{what}");
            assert!(!s.top.join("escaped.txt").exists(), "{what}");
            assert!(!s.top.join("out/escaped.txt").exists(), "{what}");
        }
    }
}

#[test]
fn nothing_is_written_through_a_link_the_archive_created() {
    let s = Scene::new();
    for (name, format) in FORMATS {
        // Through a link that stays inside.
        let entries = vec![dir("sub/"), sym("d", "sub"), file("d/x", "through")];
        let what = format!("{name}: file through an inside link");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "through the symbolic link 'd'",
        );
        assert!(!s.dest.join("sub/x").exists(), "{what}");
        s.assert_contained(&what);

        // A directory entry through one.
        let entries = vec![dir("sub/"), sym("d", "sub"), dir("d/inner/")];
        let what = format!("{name}: directory through an inside link");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "through the symbolic link 'd'",
        );
        s.assert_contained(&what);

        // Through the chain, to the sentinel's directory.
        let mut entries = chain();
        entries.push(file(&format!("l12/{}", s.sentinel_from_root()), "pwned"));
        let what = format!("{name}: file through the chain");
        assert!(s.unpack(name, format, &entries).is_err(), "{what}");
        s.assert_contained(&what);

        // Through a file (a name used as a file, then as a directory).
        let entries = vec![file("f", "x"), file("f/y", "y")];
        let what = format!("{name}: file below a file");
        assert_refused(s.unpack(name, format, &entries), &what, "where a file is");
        s.assert_contained(&what);
    }
}

#[test]
fn duplicate_entries_replace_links_without_following_them() {
    let s = Scene::new();
    for (name, format) in FORMATS {
        // A link, then a file of the same name: the link is replaced, its
        // target is not written.
        let entries = vec![
            dir("sub/"),
            file("sub/target", "kept"),
            sym("x", "sub/target"),
            file("x", "replaced"),
        ];
        s.unpack(name, format, &entries).expect("unpacked");
        let m = fs::symlink_metadata(s.dest.join("x")).expect("x");
        assert!(m.file_type().is_file(), "{name}: x is a file now");
        assert_eq!(fs::read(s.dest.join("x")).expect("x"), b"replaced");
        assert_eq!(fs::read(s.dest.join("sub/target")).expect("t"), b"kept");
        s.assert_contained(&format!("{name}: link replaced by a file"));

        // A file, then a link of the same name.
        let entries = vec![file("x", "first"), sym("x", "y")];
        s.unpack(name, format, &entries).expect("unpacked");
        assert_eq!(
            fs::read_link(s.dest.join("x")).expect("link"),
            PathBuf::from("y")
        );

        // A directory is never replaced.
        let entries = vec![dir("d/"), file("d/in", "x"), file("d", "over")];
        let what = format!("{name}: file over a directory");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "replace a directory",
        );
        s.assert_contained(&what);
        let entries = vec![dir("d/"), sym("d", "elsewhere")];
        let what = format!("{name}: link over a directory");
        assert_refused(
            s.unpack(name, format, &entries),
            &what,
            "replace a directory",
        );
    }
}

#[test]
fn devices_and_fifos_are_refused() {
    let s = Scene::new();
    for (name, format) in FORMATS {
        let r = s.unpack(name, format, &[file("ok", "x"), E::Fifo("pipe".into())]);
        assert_refused(r, &format!("{name}: fifo"), "FIFO");
        assert!(!s.dest.join("pipe").exists());
        if format != ArchiveFormat::Zip {
            let r = s.unpack(name, format, &[E::CharDev("null".into())]);
            assert_refused(r, &format!("{name}: device"), "character device");
        }
    }
}

#[test]
fn ordinary_archives_with_links_unpack() {
    let s = Scene::new();
    for (name, format) in FORMATS {
        let entries = vec![
            dir("env/"),
            dir("env/bin/"),
            file("env/bin/python3.11", "#!python"),
            sym("env/bin/python", "python3.11"),
            sym("env/bin/python3", "./python3.11"),
            dir("env/lib64/"),
            file("env/lib64/libz.so.1", "elf"),
            dir("env/lib/"),
            sym("env/lib/libz.so", "../lib64/libz.so.1"),
            sym("env/lib/top", "../.."),
            sym("env/lib/here", "."),
            file("README", "hi"),
        ];
        s.unpack(name, format, &entries)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            fs::read(s.dest.join("env/bin/python")).expect("via link"),
            b"#!python"
        );
        assert_eq!(
            fs::read(s.dest.join("env/lib/libz.so")).expect("via link"),
            b"elf"
        );
        assert_eq!(
            fs::read(s.dest.join("env/lib/top/README")).expect("via link"),
            b"hi"
        );
        s.assert_contained(&format!("{name}: ordinary archive"));
    }
}

/// A small deterministic generator (SplitMix64), so every run tries the
/// same archives and a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

const NAMES: [&str; 6] = ["a", "b", "l1", "l2", "l3", "x"];

fn random_name(rng: &mut Rng) -> String {
    let depth = 1 + rng.below(2);
    (0..depth)
        .map(|_| rng.pick(&NAMES))
        .collect::<Vec<_>>()
        .join("/")
}

/// A link target: absolute, climbing out by name, only `..`, well-formed
/// (some `..` then names), or going through a link made earlier and climbing from
/// there (the chains of the report).
fn random_target(rng: &mut Rng, s: &Scene, links: &[String]) -> String {
    match rng.below(20) {
        0 => s.sentinel.display().to_string(),
        1 => format!("../../{}", rng.pick(&["sentinel", "out", "x"])),
        2..=5 => vec![".."; 1 + rng.below(2)].join("/"),
        6..=9 => {
            let mut parts: Vec<String> = vec!["..".into(); rng.below(3)];
            for _ in 0..1 + rng.below(3) {
                parts.push(rng.pick(&NAMES).into());
            }
            parts.join("/")
        }
        _ => {
            let mut parts: Vec<String> = vec!["..".into(); rng.below(2)];
            match links.get(rng.below(links.len() + 1)) {
                Some(l) => parts.push(l.clone()),
                None => parts.push(rng.pick(&NAMES).into()),
            }
            for _ in 0..1 + rng.below(3) {
                parts.push("..".into());
            }
            if rng.below(3) == 0 {
                parts.push("sentinel".into());
            }
            parts.join("/")
        }
    }
}

fn random_entries(rng: &mut Rng, s: &Scene) -> Vec<E> {
    let mut links: Vec<String> = Vec::new();
    (0..1 + rng.below(12))
        .map(|_| match rng.below(10) {
            0 | 1 => E::Dir(format!("{}/", random_name(rng))),
            2 | 3 => E::File(random_name(rng), b"data".to_vec()),
            4 => E::Hard(random_name(rng), random_target(rng, s, &links)),
            _ => {
                let name = random_name(rng);
                let target = random_target(rng, s, &links);
                links.push(name.clone());
                E::Sym(name, target)
            }
        })
        .collect()
}

#[test]
fn random_archives_never_reach_outside_the_tree() {
    const CASES: u64 = 400;
    let s = Scene::new();
    let mut unpacked = 0;
    let mut links_kept = 0;
    for seed in 0..CASES {
        let mut rng = Rng(seed);
        let entries = random_entries(&mut rng, &s);
        let (name, format) = if seed % 2 == 0 {
            ("p.tar", ArchiveFormat::Tar)
        } else {
            ("p.zip", ArchiveFormat::Zip)
        };
        if s.unpack(name, format, &entries).is_ok() {
            unpacked += 1;
        }
        s.assert_contained(&format!("seed {seed} ({name}): {entries:?}"));
        links_kept += walk(&s.dest)
            .iter()
            .filter(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
            .count();
    }
    // The generator is not so hostile that nothing is ever unpacked: some
    // whole archives, and links in what was unpacked.
    assert!(
        unpacked >= CASES / 20 && links_kept >= 30,
        "only {unpacked} of {CASES} archives unpacked, {links_kept} links kept"
    );
}
