//! Property tests of the XML configuration parser: generated configurations read back
//! exactly, and random or mutated XML never panics; every error names the resource, a
//! line and a column inside the text.
//!
//! The cases come from a seeded generator (SplitMix64), so a run is reproducible:
//! `SPINDLE_CONF_FUZZ_CASES` (default 3,000 per property) and `SPINDLE_CONF_FUZZ_SEED`
//! change the number of cases and the seed.

use spindle_common::conf::{ConfError, Configuration};
use spindle_common::markup::escape_xml;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn cases() -> u64 {
    env_u64("SPINDLE_CONF_FUZZ_CASES", 3_000)
}

fn seed() -> u64 {
    env_u64("SPINDLE_CONF_FUZZ_SEED", 0x00c0_ffee)
}

/// Characters values are made of: letters, digits, XML's special characters, `$`
/// and braces (substitutions), whitespace, non-ASCII letters.
const ALPHABET: &[char] = &[
    'a',
    'b',
    'z',
    'A',
    'Z',
    '0',
    '7',
    '9',
    '.',
    '-',
    '_',
    '/',
    ':',
    ',',
    ' ',
    '<',
    '>',
    '&',
    '"',
    '\'',
    '$',
    '{',
    '}',
    '=',
    '\t',
    'é',
    'ß',
    '中',
    '\u{1F600}',
];

fn text(rng: &mut Rng, max: usize) -> String {
    (0..rng.below(max + 1))
        .map(|_| ALPHABET[rng.below(ALPHABET.len())])
        .collect()
}

/// A well-formed configuration of random properties (names unique, values without
/// `${`, so they read back unexpanded).
fn generated(rng: &mut Rng) -> (String, Vec<(String, String)>) {
    let n = rng.below(12);
    let mut props = Vec::new();
    for i in 0..n {
        let name = format!(
            "fuzz.{}.k{i}",
            text(rng, 6).replace(|c: char| !c.is_ascii_alphanumeric(), "x")
        );
        let value = text(rng, 40).replace("${", "$ {").trim().to_string();
        props.push((name, value));
    }
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration>\n");
    for (k, v) in &props {
        xml.push_str("  <property>\n");
        xml.push_str(&format!("    <name>{}</name>\n", escape_xml(k)));
        xml.push_str(&format!("    <value>{}</value>\n", escape_xml(v)));
        if rng.below(4) == 0 {
            xml.push_str("    <final>true</final>\n");
        }
        if rng.below(4) == 0 {
            xml.push_str(&format!(
                "    <description>{}</description>\n",
                escape_xml(&text(rng, 20))
            ));
        }
        xml.push_str("  </property>\n");
    }
    xml.push_str("</configuration>\n");
    (xml, props)
}

/// Pieces that XML parsers and Hadoop's format find interesting.
const SNIPPETS: &[&str] = &[
    "<",
    ">",
    "</property>",
    "<property>",
    "<name>",
    "</value>",
    "<value/>",
    "<final>yes</final>",
    "&amp;",
    "&bogus;",
    "&#0;",
    "&#x110000;",
    "&#xD800;",
    "<![CDATA[x]]>",
    "]]>",
    "<!-- c -->",
    "<!--",
    "<?pi x?>",
    "<!DOCTYPE configuration [<!ENTITY e \"${e}\">]>",
    "<xi:include href=\"other.xml\" xmlns:xi=\"http://www.w3.org/2001/XInclude\"/>",
    "${",
    "${a}",
    "${env.HOME}",
    "${sys.user.name}",
    "\u{0}",
    "\u{feff}",
    "\r\n",
    "\n\n\n",
    "<configuration>",
    "</configuration>",
    "<a b='1' b='2'/>",
    "xmlns:x=\"urn:x\"",
];

fn mutated(rng: &mut Rng, base: &str) -> String {
    let mut bytes = base.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(6) {
            0 => {
                if !bytes.is_empty() {
                    let i = rng.below(bytes.len());
                    bytes[i] ^= 1 << rng.below(8);
                }
            }
            1 => {
                let s = rng.pick(SNIPPETS);
                bytes.splice(at..at, s.bytes());
            }
            2 => {
                let n = rng.below(24).min(bytes.len() - at);
                bytes.drain(at..at + n);
            }
            3 => {
                let n = rng.below(64).min(bytes.len() - at);
                let copy: Vec<u8> = bytes[at..at + n].to_vec();
                let to = rng.below(bytes.len() + 1);
                bytes.splice(to..to, copy);
            }
            4 => bytes.truncate(at),
            _ => {
                let s = text(rng, 8);
                bytes.splice(at..at, s.bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Parses `xml`; an error must be about the XML and point into it.
fn check(xml: &str, what: &str) -> Option<Configuration> {
    let mut conf = Configuration::empty();
    match conf.add_resource_str("fuzz.xml", xml) {
        Ok(()) => Some(conf),
        Err(e) => {
            let lines = xml.split('\n').count() as u32;
            let (line, column) = match &e {
                ConfError::Xml { line, column, .. }
                | ConfError::Unsupported { line, column, .. } => (*line, *column),
                other => panic!("{what}: an error that names no line: {other:?}\n{xml}"),
            };
            assert!(
                line >= 1 && line <= lines.max(1),
                "{what}: line {line} is outside the {lines}-line text: {e}\n{xml}"
            );
            assert!(column >= 1, "{what}: column {column}: {e}");
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("fuzz.xml:{line}:{column}: ")),
                "{what}: the message does not lead with the place: {msg}"
            );
            None
        }
    }
}

/// Every typed getter on every key either answers or says why not; none panics.
fn read_everything(conf: &Configuration, keys: &[String]) {
    for k in keys {
        let _ = conf.get(k);
        let _ = conf.get_i64(k);
        let _ = conf.get_u64(k);
        let _ = conf.get_i32(k);
        let _ = conf.get_f64(k);
        let _ = conf.get_bool(k);
        let _ = conf.get_strings(k);
        let _ = conf.get_socket_addr(k);
    }
}

#[test]
fn generated_configurations_read_back_exactly() {
    let mut rng = Rng(seed());
    for case in 0..cases() {
        let (xml, props) = generated(&mut rng);
        let conf = check(&xml, &format!("generated case {case}"))
            .unwrap_or_else(|| panic!("generated case {case} does not parse:\n{xml}"));
        for (k, v) in &props {
            // An empty value leaves the key unset, as in Hadoop's loader.
            let expected = (!v.is_empty()).then_some(v.as_str());
            assert_eq!(
                conf.get_raw(k),
                expected,
                "generated case {case}: {k}\n{xml}"
            );
        }
        let keys: Vec<String> = props.into_iter().map(|(k, _)| k).collect();
        read_everything(&conf, &keys);
    }
}

#[test]
fn mutated_configurations_never_panic_and_errors_name_a_line() {
    let mut rng = Rng(seed() ^ 0x5a5a);
    let mut errors = 0u64;
    for case in 0..cases() {
        let (base, props) = generated(&mut rng);
        let xml = mutated(&mut rng, &base);
        let what = format!("mutated case {case}");
        match check(&xml, &what) {
            Some(conf) => {
                let mut keys: Vec<String> = props.into_iter().map(|(k, _)| k).collect();
                keys.push("fuzz.missing".into());
                read_everything(&conf, &keys);
            }
            None => errors += 1,
        }
    }
    // The mutations are strong enough to break most documents.
    assert!(
        errors * 4 >= cases(),
        "only {errors} of {} mutated documents were refused",
        cases()
    );
}

#[test]
fn random_text_never_panics() {
    let mut rng = Rng(seed() ^ 0xa5a5);
    for case in 0..cases() {
        let mut xml = String::new();
        for _ in 0..rng.below(30) {
            if rng.below(2) == 0 {
                xml.push_str(rng.pick(SNIPPETS));
            } else {
                xml.push_str(&text(&mut rng, 10));
            }
        }
        let _ = check(&xml, &format!("random case {case}"));
    }
}

#[test]
fn substitution_cycles_and_entity_bombs_end() {
    // A value that refers to itself, and one that doubles at each step.
    let xml = "<configuration>\
        <property><name>a</name><value>${a}${a}</value></property>\
        <property><name>b</name><value>${c}${c}${c}${c}</value></property>\
        <property><name>c</name><value>${b}${b}${b}${b}</value></property>\
        </configuration>";
    let conf = check(xml, "cycles").expect("cycles parse; they fail when read");
    read_everything(&conf, &["a".into(), "b".into(), "c".into()]);
    // Nested entities (the "billion laughs"): refused or bounded, never unbounded.
    let mut bomb =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE configuration [\n<!ENTITY l0 \"lol\">\n");
    for i in 1..10 {
        let prev = format!("&l{};", i - 1);
        bomb.push_str(&format!("<!ENTITY l{i} \"{}\">\n", prev.repeat(10)));
    }
    bomb.push_str("]>\n<configuration><property><name>x</name><value>&l9;</value></property></configuration>\n");
    if let Some(conf) = check(&bomb, "entity bomb") {
        let len = conf.get_raw("x").map_or(0, str::len);
        assert!(len < 10_000_000, "the entity bomb expanded to {len} bytes");
    }
}
