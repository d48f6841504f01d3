//! Hadoop-style XML configuration.
//!
//! A [`Configuration`] is a stack of resources read in order, the way
//! Hadoop's `YarnConfiguration` reads them:
//!
//! 1. built-in core defaults (`core-default-subset.xml`, Hadoop 3.3 values),
//! 2. `core-site.xml` from the configuration directory, if present,
//! 3. built-in YARN defaults (`yarn-default-subset.xml`, Hadoop 3.3 values),
//! 4. `yarn-site.xml` from the configuration directory, if present,
//!
//! then any resource added with [`Configuration::add_resource`], and on top
//! of all of them the values set from code with [`Configuration::set`].
//!
//! Hadoop's rules apply:
//! * a later resource overrides an earlier one, unless an earlier one marked
//!   the key `<final>true</final>`; then later values are ignored with a
//!   warning;
//! * values set from code override every resource, whenever it was added;
//! * `${name}` in a value is expanded when the value is read: first against
//!   `env.NAME` (environment, with `${env.NAME:-fallback}` and
//!   `${env.NAME-fallback}`), then against Java-like system properties
//!   (`user.name`, `user.home`, `java.io.tmpdir`, `yarn.log.dir`, ... see
//!   [`Configuration::system_property`]), then against other keys;
//!   expansion is recursive with at most [`MAX_SUBSTITUTIONS`] steps;
//! * typed getters trim the value, as Hadoop's `getInt`/`getBoolean` do.
//!
//! Every value remembers the file and line it came from, and every error a
//! typed getter returns names them:
//! `/etc/spindle/yarn-site.xml:14: property 'yarn.nodemanager.resource.memory-mb': value 'lots' is not an integer`.

pub mod catalog;
mod error;
mod expand;
pub mod keys;
mod parse;
pub mod refuse;
mod system;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use error::{ConfError, Origin};
pub use expand::MAX_SUBSTITUTIONS;
pub use system::current_user;

use expand::{env_reference, expand, SubstitutionLimit};
use parse::{parse_resource, EmptyValue, ParsedProperty};

/// Resource name of the built-in core defaults, as shown in messages.
pub const BUILTIN_CORE_DEFAULTS: &str = "<built-in core-default.xml>";
/// Resource name of the built-in YARN defaults, as shown in messages.
pub const BUILTIN_YARN_DEFAULTS: &str = "<built-in yarn-default.xml>";

/// File names read from the configuration directory, in order.
pub const CORE_SITE: &str = "core-site.xml";
/// See [`CORE_SITE`].
pub const YARN_SITE: &str = "yarn-site.xml";

const CORE_DEFAULTS_XML: &str = include_str!("core-default-subset.xml");
const YARN_DEFAULTS_XML: &str = include_str!("yarn-default-subset.xml");

/// The two built-in defaults resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    Core,
    Yarn,
}

impl Builtin {
    fn name(self) -> &'static str {
        match self {
            Builtin::Core => BUILTIN_CORE_DEFAULTS,
            Builtin::Yarn => BUILTIN_YARN_DEFAULTS,
        }
    }

    /// The parsed properties. The files are part of the source tree and a
    /// unit test parses them, so a failure here is a build defect.
    fn properties(self) -> &'static [ParsedProperty] {
        static CORE: OnceLock<Vec<ParsedProperty>> = OnceLock::new();
        static YARN: OnceLock<Vec<ParsedProperty>> = OnceLock::new();
        let (cell, xml) = match self {
            Builtin::Core => (&CORE, CORE_DEFAULTS_XML),
            Builtin::Yarn => (&YARN, YARN_DEFAULTS_XML),
        };
        cell.get_or_init(
            || match parse_resource(self.name(), xml, EmptyValue::EmptyString) {
                Ok(props) => props,
                Err(e) => panic!("built-in configuration defaults are broken: {e}"),
            },
        )
    }
}

/// The built-in default of `key`, if it has one.
pub fn builtin_default(key: &str) -> Option<&'static str> {
    [Builtin::Yarn, Builtin::Core]
        .into_iter()
        .flat_map(Builtin::properties)
        .find(|p| p.name == key)
        .and_then(|p| p.value.as_deref())
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    value: String,
    origin: Origin,
}

/// A layered, Hadoop-compatible configuration. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Configuration {
    /// Values from resources, after final/override rules.
    props: BTreeMap<String, Entry>,
    /// Values set from code; they win over `props`.
    overlay: BTreeMap<String, Entry>,
    /// Keys marked final, with where they were marked.
    finals: BTreeMap<String, Origin>,
    /// Java-like system properties used in `${...}` expansion.
    system: BTreeMap<String, String>,
    /// Names of the resources applied so far, in order.
    resources: Vec<String>,
}

impl Default for Configuration {
    fn default() -> Self {
        Configuration::with_defaults()
    }
}

impl Configuration {
    /// A configuration with no resources at all (not even defaults). Mostly
    /// useful in tests.
    pub fn empty() -> Configuration {
        Configuration {
            props: BTreeMap::new(),
            overlay: BTreeMap::new(),
            finals: BTreeMap::new(),
            system: system::system_properties(),
            resources: Vec::new(),
        }
    }

    /// The built-in core and YARN defaults, and nothing else.
    pub fn with_defaults() -> Configuration {
        let mut conf = Configuration::empty();
        conf.apply_builtin(Builtin::Core);
        conf.apply_builtin(Builtin::Yarn);
        conf
    }

    /// Loads the defaults and, when `conf_dir` is given, its `core-site.xml`
    /// and `yarn-site.xml` (in Hadoop's order: core defaults, core-site,
    /// YARN defaults, yarn-site).
    ///
    /// Missing site files are skipped. A missing or non-directory
    /// `conf_dir`, an unreadable file or malformed XML is an error.
    pub fn load(conf_dir: Option<&Path>) -> Result<Configuration, ConfError> {
        if let Some(dir) = conf_dir {
            check_conf_dir(dir)?;
        }
        let mut conf = Configuration::empty();
        conf.apply_builtin(Builtin::Core);
        let core_site = conf_dir.map(|d| d.join(CORE_SITE));
        if let Some(path) = &core_site {
            conf.add_resource_if_present(path)?;
        }
        if let Some(path) = &core_site {
            conf.warn_shadowed_by_defaults(&path.display().to_string(), Builtin::Yarn.properties());
        }
        conf.apply_builtin(Builtin::Yarn);
        if let Some(dir) = conf_dir {
            conf.add_resource_if_present(&dir.join(YARN_SITE))?;
        }
        Ok(conf)
    }

    /// Picks the configuration directory: `cli` (a `--conf` flag) if given,
    /// else `$YARN_CONF_DIR`, else `$HADOOP_CONF_DIR`; empty values are
    /// skipped. `None` means "defaults only".
    pub fn resolve_conf_dir(cli: Option<PathBuf>) -> Option<PathBuf> {
        resolve_conf_dir_with(cli, system::env_non_empty)
    }

    /// Reads and applies the XML resource at `path`. The file must exist.
    pub fn add_resource(&mut self, path: &Path) -> Result<(), ConfError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.add_resource_str(&path.display().to_string(), &text)
    }

    /// Parses and applies the XML resource `xml`; `name` identifies it in
    /// messages and [`Configuration::source_of`]. A resource with an error
    /// changes nothing.
    pub fn add_resource_str(&mut self, name: &str, xml: &str) -> Result<(), ConfError> {
        let props = parse_resource(name, xml, EmptyValue::Unset)?;
        self.apply(name, &props);
        Ok(())
    }

    fn add_resource_if_present(&mut self, path: &Path) -> Result<(), ConfError> {
        match std::fs::read_to_string(path) {
            Ok(text) => self.add_resource_str(&path.display().to_string(), &text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                tracing::debug!("{}: not found, skipped", path.display());
                Ok(())
            }
            Err(source) => Err(ConfError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    fn apply_builtin(&mut self, which: Builtin) {
        self.apply(which.name(), which.properties());
    }

    /// Applies parsed properties with Hadoop's final/override rules.
    fn apply(&mut self, resource: &str, props: &[ParsedProperty]) {
        for p in props {
            if let Some(value) = &p.value {
                if let Some(marked_at) = self.finals.get(&p.name) {
                    let current = self.props.get(&p.name);
                    if current.is_some_and(|c| &c.value != value) {
                        tracing::warn!(
                            "{}: ignoring new value of final property '{}' (made final at {})",
                            p.origin,
                            p.name,
                            marked_at
                        );
                    }
                } else {
                    self.props.insert(
                        p.name.clone(),
                        Entry {
                            value: value.clone(),
                            origin: p.origin.clone(),
                        },
                    );
                }
            }
            if p.is_final {
                self.finals
                    .entry(p.name.clone())
                    .or_insert_with(|| p.origin.clone());
            }
        }
        self.resources.push(resource.to_string());
    }

    /// Hadoop reads yarn-default.xml after core-site.xml, so YARN keys put
    /// in core-site.xml are silently replaced by their defaults. Spindle
    /// keeps that order but says so.
    fn warn_shadowed_by_defaults(&self, core_site: &str, defaults: &[ParsedProperty]) {
        for d in defaults.iter().filter(|d| d.value.is_some()) {
            if self.finals.contains_key(&d.name) {
                continue;
            }
            if let Some(entry) = self.props.get(&d.name) {
                if entry.origin.resource() == core_site {
                    tracing::warn!(
                        "{}: '{}' set in {} is replaced by the YARN default, as in Hadoop; set it in {} instead",
                        entry.origin,
                        d.name,
                        CORE_SITE,
                        YARN_SITE
                    );
                }
            }
        }
    }

    // ------------------------------------------------------------------
    // Writing

    /// Sets `key` from code. Such values win over every resource, even
    /// final ones and ones added later; their source is `programmatic`.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.overlay.insert(
            key.trim().to_string(),
            Entry {
                value: value.into(),
                origin: Origin::programmatic(),
            },
        );
    }

    /// Removes `key` from every layer, so that `get` returns `None`.
    pub fn unset(&mut self, key: &str) {
        let key = key.trim();
        self.overlay.remove(key);
        self.props.remove(key);
    }

    /// Sets a Java-like system property used in `${...}` expansion
    /// (e.g. `yarn.log.dir` from a command-line flag). System properties
    /// take precedence over configuration keys of the same name.
    pub fn set_system_property(&mut self, name: &str, value: impl Into<String>) {
        self.system.insert(name.to_string(), value.into());
    }

    // ------------------------------------------------------------------
    // Reading

    /// A system property as seen by `${...}` expansion.
    ///
    /// Initialised from the process: `user.name` (`$USER`, `$LOGNAME`, or
    /// the password-database name of the process uid), `user.home`,
    /// `user.dir`, `java.io.tmpdir` (`/tmp`), `file.separator`,
    /// `path.separator`, `line.separator`, and `yarn.log.dir` /
    /// `hadoop.log.dir` when `$YARN_LOG_DIR` or `$HADOOP_LOG_DIR` is set.
    pub fn system_property(&self, name: &str) -> Option<&str> {
        self.system.get(name).map(String::as_str)
    }

    fn entry(&self, key: &str) -> Option<&Entry> {
        self.overlay.get(key).or_else(|| self.props.get(key))
    }

    fn resolve_var(&self, var: &str) -> Option<String> {
        // Hadoop's order: environment (for `env.` names) or system
        // properties, then other keys.
        let value = match var.strip_prefix("env.").filter(|spec| !spec.is_empty()) {
            Some(spec) => env_reference(spec, |name| std::env::var(name).ok()),
            None => self.system.get(var).cloned(),
        };
        value.or_else(|| self.entry(var).map(|e| e.value.clone()))
    }

    fn expand_value(&self, raw: &str) -> Result<String, SubstitutionLimit> {
        expand(raw, |var| self.resolve_var(var))
    }

    /// The value of `key` with `${...}` expanded, or `None` if unset.
    ///
    /// A value that needs more than [`MAX_SUBSTITUTIONS`] substitutions
    /// (a reference cycle) is returned unexpanded, with a warning; typed
    /// getters report it as an error instead.
    pub fn get(&self, key: &str) -> Option<String> {
        let key = key.trim();
        let entry = self.entry(key)?;
        match self.expand_value(&entry.value) {
            Ok(v) => Some(v),
            Err(SubstitutionLimit) => {
                tracing::warn!(
                    "{}: property '{}': value '{}' needs more than {} substitutions (reference cycle?); left unexpanded",
                    entry.origin,
                    key,
                    entry.value,
                    MAX_SUBSTITUTIONS
                );
                Some(entry.value.clone())
            }
        }
    }

    /// `raw` with its `${...}` references expanded against this
    /// configuration (left as it is past [`MAX_SUBSTITUTIONS`]).
    pub fn expand(&self, raw: &str) -> String {
        self.expand_value(raw)
            .unwrap_or_else(|SubstitutionLimit| raw.to_string())
    }

    /// The value of `key` exactly as configured, without expansion.
    pub fn get_raw(&self, key: &str) -> Option<&str> {
        self.entry(key.trim()).map(|e| e.value.as_str())
    }

    /// [`get`](Self::get) with surrounding whitespace removed.
    pub fn get_trimmed(&self, key: &str) -> Option<String> {
        self.get(key).map(|v| v.trim().to_string())
    }

    /// The value of `key`, or `default` (itself expanded) if unset.
    pub fn get_or(&self, key: &str, default: &str) -> String {
        self.get(key).unwrap_or_else(|| {
            self.expand_value(default)
                .unwrap_or_else(|SubstitutionLimit| default.to_string())
        })
    }

    /// `key` as a signed 64-bit integer. Decimal or `0x` hexadecimal, with
    /// an optional sign, surrounding whitespace ignored.
    pub fn get_i64(&self, key: &str) -> Result<i64, ConfError> {
        let tv = self.typed(key)?;
        let n = tv.integer()?;
        i64::try_from(n).map_err(|_| tv.error("is out of range for a 64-bit integer"))
    }

    /// `key` as a signed 32-bit integer (see [`get_i64`](Self::get_i64)).
    pub fn get_i32(&self, key: &str) -> Result<i32, ConfError> {
        let tv = self.typed(key)?;
        let n = tv.integer()?;
        i32::try_from(n).map_err(|_| {
            tv.error(&format!(
                "is out of range for a 32-bit integer ({}..={})",
                i32::MIN,
                i32::MAX
            ))
        })
    }

    /// `key` as a non-negative 64-bit integer (see [`get_i64`](Self::get_i64)).
    pub fn get_u64(&self, key: &str) -> Result<u64, ConfError> {
        let tv = self.typed(key)?;
        let n = tv.integer()?;
        if n < 0 {
            return Err(tv.error("must not be negative"));
        }
        u64::try_from(n).map_err(|_| tv.error(&format!("is too large (at most {})", u64::MAX)))
    }

    /// `key` as a floating-point number. Java's optional `f`/`d` suffix is
    /// accepted.
    pub fn get_f64(&self, key: &str) -> Result<f64, ConfError> {
        let tv = self.typed(key)?;
        let text = tv.value.as_str();
        let parsed = text.parse::<f64>().ok().or_else(|| {
            text.strip_suffix(['f', 'F', 'd', 'D'])
                .filter(|rest| rest.ends_with(|c: char| c.is_ascii_digit() || c == '.'))
                .and_then(|rest| rest.parse::<f64>().ok())
        });
        parsed.ok_or_else(|| tv.error("is not a number"))
    }

    /// `key` as a boolean: `true` or `false` in any letter case. An empty
    /// value means the built-in default, as in Hadoop; anything else is an
    /// error (Hadoop would silently use the default).
    pub fn get_bool(&self, key: &str) -> Result<bool, ConfError> {
        let tv = self.typed(key)?;
        let parse = |s: &str| {
            if s.eq_ignore_ascii_case("true") {
                Some(true)
            } else if s.eq_ignore_ascii_case("false") {
                Some(false)
            } else {
                None
            }
        };
        if tv.value.is_empty() {
            return builtin_default(tv.key)
                .and_then(|d| parse(d.trim()))
                .ok_or_else(|| tv.error("is empty; expected true or false"));
        }
        parse(&tv.value).ok_or_else(|| tv.error("is not a boolean (expected true or false)"))
    }

    /// `key` as a list: split at commas and newlines, items trimmed, empty
    /// items dropped. An unset key is an empty list.
    pub fn get_strings(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| {
                v.split([',', '\n'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `key` as a `host:port` socket address (see [`parse_host_port`]).
    pub fn get_socket_addr(&self, key: &str) -> Result<(String, u16), ConfError> {
        let tv = self.typed(key)?;
        parse_host_port(&tv.value)
            .map_err(|problem| tv.error(&format!("is not a host:port address: {problem}")))
    }

    /// The address a server should listen on, as Hadoop computes it: the
    /// host and port of `address_key`, with the host replaced by the value
    /// of `bind_host_key` when that is set and not empty (e.g.
    /// `yarn.resourcemanager.bind-host` with `yarn.resourcemanager.address`).
    pub fn get_bind_addr(
        &self,
        bind_host_key: &str,
        address_key: &str,
    ) -> Result<(String, u16), ConfError> {
        let (host, port) = self.get_socket_addr(address_key)?;
        match self.get_trimmed(bind_host_key).filter(|h| !h.is_empty()) {
            Some(bind) => {
                let bind = bind
                    .strip_prefix('[')
                    .and_then(|b| b.strip_suffix(']'))
                    .map(str::to_string)
                    .unwrap_or(bind);
                Ok((bind, port))
            }
            None => Ok((host, port)),
        }
    }

    /// Where the current value of `key` came from, e.g.
    /// `/etc/hadoop/yarn-site.xml:14`, `<built-in yarn-default.xml>:52` or
    /// `programmatic`.
    pub fn source_of(&self, key: &str) -> Option<String> {
        self.origin_of(key).map(Origin::to_string)
    }

    /// Like [`source_of`](Self::source_of), structured.
    pub fn origin_of(&self, key: &str) -> Option<&Origin> {
        self.entry(key.trim()).map(|e| &e.origin)
    }

    /// Whether a resource marked `key` final.
    pub fn is_final(&self, key: &str) -> bool {
        self.finals.contains_key(key.trim())
    }

    /// All keys that have a value, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        let keys: BTreeSet<&str> = self
            .props
            .keys()
            .chain(self.overlay.keys())
            .map(String::as_str)
            .collect();
        keys.into_iter()
    }

    /// Names of the resources applied so far, in order (built-in defaults
    /// included; site files that were absent are not listed).
    pub fn loaded_resources(&self) -> &[String] {
        &self.resources
    }

    /// An error about the current value of `key`, for checks done by the
    /// caller (e.g. "must be positive"). `problem` completes the sentence
    /// "value '...' ...". If `key` is unset, the error says so.
    pub fn invalid_value(&self, key: &str, problem: &str) -> ConfError {
        match self.typed(key) {
            Ok(tv) => tv.error(problem),
            Err(e) => e,
        }
    }

    fn typed<'a>(&'a self, key: &'a str) -> Result<TypedValue<'a>, ConfError> {
        let key = key.trim();
        let entry = self.entry(key).ok_or_else(|| ConfError::Missing {
            key: key.to_string(),
        })?;
        match self.expand_value(&entry.value) {
            Ok(expanded) => Ok(TypedValue {
                key,
                raw: &entry.value,
                value: expanded.trim().to_string(),
                origin: &entry.origin,
            }),
            Err(SubstitutionLimit) => Err(ConfError::InvalidValue {
                origin: entry.origin.clone(),
                key: key.to_string(),
                value: entry.value.clone(),
                problem: format!(
                    "cannot be expanded: it needs more than {MAX_SUBSTITUTIONS} substitutions (is there a ${{...}} reference cycle?)"
                ),
            }),
        }
    }
}

/// A value being converted by a typed getter.
struct TypedValue<'a> {
    key: &'a str,
    raw: &'a str,
    /// Expanded and trimmed.
    value: String,
    origin: &'a Origin,
}

impl TypedValue<'_> {
    fn error(&self, problem: &str) -> ConfError {
        let problem = if self.raw.trim() != self.value {
            format!("{problem} (expanded from '{}')", self.raw.trim())
        } else {
            problem.to_string()
        };
        ConfError::InvalidValue {
            origin: self.origin.clone(),
            key: self.key.to_string(),
            value: self.value.clone(),
            problem,
        }
    }

    fn integer(&self) -> Result<i128, ConfError> {
        match parse_integer(&self.value) {
            Ok(n) => Ok(n),
            Err(IntError::NotInteger) => Err(self.error("is not an integer")),
            Err(IntError::TooLarge) => Err(self.error("is out of range for a 64-bit integer")),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum IntError {
    NotInteger,
    TooLarge,
}

/// Parses what Hadoop's `getInt`/`getLong` accept: an optional sign, then
/// decimal digits or `0x`/`0X` and hexadecimal digits.
fn parse_integer(text: &str) -> Result<i128, IntError> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (radix, digits) = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) => (16, hex),
        None => (10, unsigned),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(IntError::NotInteger);
    }
    let magnitude = i128::from_str_radix(digits, radix).map_err(|_| IntError::TooLarge)?;
    Ok(if negative { -magnitude } else { magnitude })
}

/// Splits a `host:port` address. Accepted forms: `host:port`,
/// `[ipv6]:port`, and URIs such as `hdfs://host:port/path` (the scheme and
/// path are ignored). The host is returned without brackets. Returns a
/// description of the problem otherwise.
pub fn parse_host_port(text: &str) -> Result<(String, u16), String> {
    let text = text.trim();
    let authority = match text.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest),
        None => text,
    };
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| "missing ']' after an IPv6 address".to_string())?;
        let port = after
            .strip_prefix(':')
            .ok_or_else(|| "no port after the IPv6 address".to_string())?;
        (host, port)
    } else {
        let (host, port) = authority
            .rsplit_once(':')
            .ok_or_else(|| "no port (expected host:port)".to_string())?;
        if host.contains(':') {
            return Err("IPv6 addresses must be written as [address]:port".to_string());
        }
        (host, port)
    };
    if host.is_empty() {
        return Err("no host (expected host:port)".to_string());
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| format!("port '{port}' is not a number between 0 and 65535"))?;
    Ok((host.to_string(), port))
}

fn check_conf_dir(dir: &Path) -> Result<(), ConfError> {
    let reason = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => "not a directory".to_string(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => "no such directory".to_string(),
        Err(e) => e.to_string(),
    };
    Err(ConfError::ConfDir {
        path: dir.to_path_buf(),
        reason,
    })
}

fn resolve_conf_dir_with(
    cli: Option<PathBuf>,
    getenv: impl Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    cli.filter(|p| !p.as_os_str().is_empty())
        .or_else(|| {
            getenv("YARN_CONF_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            getenv("HADOOP_CONF_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
}

#[cfg(test)]
mod tests;
