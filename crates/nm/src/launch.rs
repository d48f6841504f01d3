//! What a container process sees: its directories, its environment and the
//! `launch_container.sh` script that starts it.
//!
//! The contract is Hadoop's (`ContainerLaunch` and the Unix script builder):
//!
//! - commands and environment values go through [`expand`]: `<LOG_DIR>`
//!   becomes the container's log dir, `<CPS>` the class-path separator `:`,
//!   `{{` becomes `$` and `}}` disappears, so `{{PWD}}/x` reaches bash as
//!   `$PWD/x`;
//! - the node sets `CONTAINER_ID`, `NM_HOST`, `NM_PORT`, `NM_HTTP_PORT`,
//!   `LOCAL_DIRS`, `LOCAL_USER_DIRS`, `LOG_DIRS`, `USER`, `LOGNAME`, `HOME`,
//!   `PWD`, `LOCALIZATION_COUNTERS`, `JVM_PID` (`$$`) and
//!   `HADOOP_TOKEN_FILE_LOCATION`, overriding the container's own values; then
//!   the admin environment is forced in; whitelisted variables of the
//!   node's own environment are offered with `${VAR:-"value"}` when the
//!   container did not set them;
//! - the script sends its own output to `prelaunch.out`/`prelaunch.err`,
//!   exports the environment (values inside double quotes, unescaped, so
//!   `$VAR` references expand), links the localized resources into the work
//!   dir (creating parent dirs of nested link names), and finally
//!   `exec /bin/bash -c "<commands joined by spaces>"` — the context Spark
//!   escapes its arguments for.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use spindle_common::{ContainerId, NodeId};

/// File name of the launch script in the work dir.
pub const LAUNCH_SCRIPT: &str = "launch_container.sh";
/// File name of the container's credentials in the work dir.
pub const TOKENS_FILE: &str = "container_tokens";
/// Output of the script before it execs the command.
pub const PRELAUNCH_OUT: &str = "prelaunch.out";
pub const PRELAUNCH_ERR: &str = "prelaunch.err";
/// An empty Hadoop credentials file (`HDTS`, WRITABLE format, no tokens, no secrets).
pub const EMPTY_CREDENTIALS: &[u8] = b"HDTS\x00\x00\x00";

/// The expansion markers of Hadoop's `ApplicationConstants`.
pub const LOG_DIR_MARKER: &str = "<LOG_DIR>";
pub const CLASS_PATH_SEPARATOR_MARKER: &str = "<CPS>";
pub const EXPANSION_LEFT: &str = "{{";
pub const EXPANSION_RIGHT: &str = "}}";
/// Hadoop 3.4's marker for JDK 17 module flags; Spindle expands it to nothing.
pub const ADD_OPENS_MARKER: &str = "<ADD_OPENS>";

/// Applies the NodeManager's expansion conventions to a command or an
/// environment value.
pub fn expand(text: &str, log_dir: &Path) -> String {
    text.replace(LOG_DIR_MARKER, &log_dir.to_string_lossy())
        .replace(CLASS_PATH_SEPARATOR_MARKER, ":")
        .replace(ADD_OPENS_MARKER, "")
        .replace(EXPANSION_LEFT, "$")
        .replace(EXPANSION_RIGHT, "")
}

/// Where a container lives on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerPaths {
    /// `<local-dir>/usercache/<user>/appcache/<app>/<container>`: `PWD`.
    pub work_dir: PathBuf,
    /// The log dir `<LOG_DIR>` expands to: `<log-dir>/<app>/<container>`.
    pub log_dir: PathBuf,
    /// The container's log dir on every log dir (`LOG_DIRS`).
    pub log_dirs: Vec<PathBuf>,
    /// The application dir on every local dir (`LOCAL_DIRS`).
    pub app_dirs: Vec<PathBuf>,
    /// `<local-dir>/usercache/<user>/` on every local dir (`LOCAL_USER_DIRS`).
    pub user_dirs: Vec<PathBuf>,
}

impl ContainerPaths {
    /// The paths of `container` of `user`, with the work dir on
    /// `local_dirs[work_index]` and `<LOG_DIR>` on `log_dirs[log_index]`.
    pub fn new(
        local_dirs: &[PathBuf],
        log_dirs: &[PathBuf],
        user: &str,
        container: &ContainerId,
        work_index: usize,
        log_index: usize,
    ) -> ContainerPaths {
        let app = container.app().to_string();
        let user_dirs: Vec<PathBuf> = local_dirs
            .iter()
            .map(|d| d.join("usercache").join(user))
            .collect();
        let app_dirs: Vec<PathBuf> = user_dirs
            .iter()
            .map(|d| d.join("appcache").join(&app))
            .collect();
        let container_logs: Vec<PathBuf> = log_dirs
            .iter()
            .map(|d| d.join(&app).join(container.to_string()))
            .collect();
        let work_dir = app_dirs
            .get(work_index % app_dirs.len().max(1))
            .map(|d| d.join(container.to_string()))
            .unwrap_or_default();
        let log_dir = container_logs
            .get(log_index % container_logs.len().max(1))
            .cloned()
            .unwrap_or_default();
        ContainerPaths {
            work_dir,
            log_dir,
            log_dirs: container_logs,
            app_dirs,
            user_dirs,
        }
    }

    pub fn tokens_file(&self) -> PathBuf {
        self.work_dir.join(TOKENS_FILE)
    }

    pub fn script(&self) -> PathBuf {
        self.work_dir.join(LAUNCH_SCRIPT)
    }
}

/// Node-level inputs of the environment.
#[derive(Debug, Clone)]
pub struct NodeEnv<'a> {
    pub node_id: &'a NodeId,
    pub http_port: i32,
    /// `yarn.nodemanager.user-home-dir`.
    pub user_home_dir: &'a str,
    /// `yarn.nodemanager.env-whitelist`.
    pub whitelist: &'a [String],
    /// `yarn.nodemanager.admin-env` as `(name, value)` pairs.
    pub admin_env: &'a [(String, String)],
    /// The node's own environment.
    pub nm_env: &'a BTreeMap<String, String>,
    /// The auxiliary services' meta data, `(name, base64)`: exported as
    /// `NM_AUX_SERVICE_<name>` (Hadoop's `AuxiliaryServiceHelper`).
    pub aux_meta: &'a [(String, String)],
}

/// The environment of one container, in the three blocks the script writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchEnv {
    /// Whitelisted node variables the container did not set, exported as
    /// `export K=${K:-"v"}`.
    pub whitelisted: Vec<(String, String)>,
    /// Variables set by the node, in the order it set them.
    pub node: Vec<(String, String)>,
    /// The container's own variables, each after those it refers to.
    pub container: Vec<(String, String)>,
}

impl LaunchEnv {
    /// The variables as a map (what the process is started with; the
    /// script exports them again with shell expansion).
    pub fn as_map(&self) -> BTreeMap<String, String> {
        self.node.iter().chain(&self.container).cloned().collect()
    }

    /// The value the script exports for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.node
            .iter()
            .chain(&self.container)
            .chain(&self.whitelisted)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Builds the container environment from the launch context's variables
/// (in the order given; a repeated name keeps its last value).
pub fn build_env(
    container_env: &[(String, String)],
    container: &ContainerId,
    user: &str,
    paths: &ContainerPaths,
    node: &NodeEnv<'_>,
    localization_counters: &str,
) -> LaunchEnv {
    let mut env = OrderedEnv::default();
    for (k, v) in container_env {
        env.set(k, v.clone());
    }
    let mut nm_vars: Vec<String> = Vec::new();
    let mut set_nm = |env: &mut OrderedEnv, k: &str, v: String| {
        env.set(k, v);
        if !nm_vars.iter().any(|n| n == k) {
            nm_vars.push(k.to_string());
        }
    };
    let join = |dirs: &[PathBuf]| {
        dirs.iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(",")
    };
    let with_slash = |dirs: &[PathBuf]| {
        dirs.iter()
            .map(|d| format!("{}/", d.to_string_lossy().trim_end_matches('/')))
            .collect::<Vec<_>>()
            .join(",")
    };
    set_nm(&mut env, "CONTAINER_ID", container.to_string());
    set_nm(&mut env, "NM_PORT", node.node_id.port.to_string());
    set_nm(&mut env, "NM_HOST", node.node_id.host.to_string());
    set_nm(&mut env, "NM_HTTP_PORT", node.http_port.to_string());
    set_nm(&mut env, "LOCAL_DIRS", join(&paths.app_dirs));
    set_nm(&mut env, "LOCAL_USER_DIRS", with_slash(&paths.user_dirs));
    set_nm(&mut env, "LOG_DIRS", join(&paths.log_dirs));
    set_nm(&mut env, "USER", user.to_string());
    set_nm(&mut env, "LOGNAME", user.to_string());
    set_nm(&mut env, "HOME", node.user_home_dir.to_string());
    set_nm(
        &mut env,
        "PWD",
        paths.work_dir.to_string_lossy().into_owned(),
    );
    set_nm(
        &mut env,
        "LOCALIZATION_COUNTERS",
        localization_counters.to_string(),
    );
    set_nm(&mut env, "JVM_PID", "$$".to_string());
    set_nm(
        &mut env,
        "HADOOP_TOKEN_FILE_LOCATION",
        paths.tokens_file().to_string_lossy().into_owned(),
    );
    for (name, meta) in node.aux_meta {
        set_nm(&mut env, &format!("NM_AUX_SERVICE_{name}"), meta.clone());
    }
    // The admin environment is forced in; `$VAR` in it refers to the
    // container's variables, then the node's, else nothing. Like Hadoop, a
    // variable the container already has gets the value appended. These
    // stay with the container's variables so they can be ordered by what
    // they refer to.
    for (k, v) in node.admin_env {
        let value = substitute_vars(v, |name| {
            env.get(name)
                .map(str::to_string)
                .or_else(|| node.nm_env.get(name).cloned())
        });
        let merged = match env.get(k) {
            Some(existing) => format!("{existing}:{value}"),
            None => value,
        };
        env.set(k, merged);
    }
    for (_, v) in env.entries.iter_mut() {
        *v = expand(v, &paths.log_dir);
    }

    let whitelisted = node
        .whitelist
        .iter()
        .filter(|k| env.get(k).is_none())
        .filter_map(|k| node.nm_env.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    let node_block = nm_vars
        .iter()
        .filter_map(|k| env.get(k).map(|v| (k.clone(), v.to_string())))
        .collect();
    let rest: Vec<(String, String)> = env
        .entries
        .iter()
        .filter(|(k, _)| !nm_vars.contains(k))
        .cloned()
        .collect();
    LaunchEnv {
        whitelisted,
        node: node_block,
        container: order_by_dependencies(rest),
    }
}

/// Insertion-ordered variables; setting an existing name replaces its
/// value in place.
#[derive(Default)]
struct OrderedEnv {
    entries: Vec<(String, String)>,
}

impl OrderedEnv {
    fn set(&mut self, k: &str, v: String) {
        match self.entries.iter_mut().find(|(name, _)| name == k) {
            Some(e) => e.1 = v,
            None => self.entries.push((k.to_string(), v)),
        }
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.as_str())
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names a value refers to with `$NAME` or `${NAME}`.
pub fn referenced_vars(value: &str) -> Vec<String> {
    let mut names = Vec::new();
    let chars: Vec<char> = value.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            let braced = chars.get(i + 1) == Some(&'{');
            let start = if braced { i + 2 } else { i + 1 };
            if chars.get(start).copied().is_some_and(is_name_start) {
                let mut end = start + 1;
                while chars.get(end).copied().is_some_and(is_name_char) {
                    end += 1;
                }
                names.push(chars[start..end].iter().collect());
                i = end;
                continue;
            }
        }
        i += 1;
    }
    names
}

/// Replaces `$NAME` and `${NAME}` with `lookup(NAME)`, or nothing.
fn substitute_vars(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let chars: Vec<char> = value.chars().collect();
    let mut out = String::with_capacity(value.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            let braced = chars.get(i + 1) == Some(&'{');
            let start = if braced { i + 2 } else { i + 1 };
            if chars.get(start).copied().is_some_and(is_name_start) {
                let mut end = start + 1;
                while chars.get(end).copied().is_some_and(is_name_char) {
                    end += 1;
                }
                let closes = !braced || chars.get(end) == Some(&'}');
                if closes {
                    let name: String = chars[start..end].iter().collect();
                    out.push_str(&lookup(&name).unwrap_or_default());
                    i = if braced { end + 1 } else { end };
                    continue;
                }
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Orders variables so that each comes after the variables of the same
/// list it refers to; otherwise the given order is kept. Cycles are left
/// in the given order.
pub fn order_by_dependencies(vars: Vec<(String, String)>) -> Vec<(String, String)> {
    let index: HashMap<&str, usize> = vars
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.as_str(), i))
        .collect();
    let deps: Vec<Vec<usize>> = vars
        .iter()
        .map(|(k, v)| {
            referenced_vars(v)
                .iter()
                .filter(|n| *n != k)
                .filter_map(|n| index.get(n.as_str()).copied())
                .collect()
        })
        .collect();
    let mut done = vec![false; vars.len()];
    let mut visiting = HashSet::new();
    let mut order = Vec::with_capacity(vars.len());
    fn visit(
        i: usize,
        deps: &[Vec<usize>],
        done: &mut [bool],
        visiting: &mut HashSet<usize>,
        order: &mut Vec<usize>,
    ) {
        if done[i] || !visiting.insert(i) {
            return;
        }
        for &d in &deps[i] {
            visit(d, deps, done, visiting, order);
        }
        visiting.remove(&i);
        if !done[i] {
            done[i] = true;
            order.push(i);
        }
    }
    for i in 0..vars.len() {
        visit(i, &deps, &mut done, &mut visiting, &mut order);
    }
    let mut slots: Vec<Option<(String, String)>> = vars.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// A localized resource as linked into the work dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    /// Where the localized copy is.
    pub target: PathBuf,
    /// The link name, relative to the work dir (may contain `/`).
    pub link: String,
}

/// Checks a link name from a launch context: relative, inside the work dir.
pub fn validate_link_name(link: &str) -> Result<(), String> {
    if link.is_empty() {
        return Err("a local resource has an empty name".to_string());
    }
    if link.starts_with('/') {
        return Err(format!(
            "the local resource name '{link}' is an absolute path; it must be relative to the \
             container's working directory"
        ));
    }
    if link.contains('\0') {
        return Err(format!(
            "the local resource name {link:?} contains a NUL byte"
        ));
    }
    if link.split('/').any(|c| c == "..") {
        return Err(format!(
            "the local resource name '{link}' leaves the container's working directory"
        ));
    }
    if link.split('/').all(|c| c.is_empty() || c == ".") {
        return Err(format!(
            "the local resource name '{link}' names the working directory itself"
        ));
    }
    Ok(())
}

/// Quotes `s` for bash as a single literal word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Writes `launch_container.sh`.
pub fn launch_script(
    env: &LaunchEnv,
    links: &[ResourceLink],
    commands: &[String],
    log_dir: &Path,
) -> String {
    let mut s = String::new();
    let log = log_dir.to_string_lossy();
    // `writeln!` into a String cannot fail.
    let _ = writeln!(s, "#!/bin/bash");
    let _ = writeln!(s);
    let _ = writeln!(s, "set -o pipefail -e");
    let _ = writeln!(s, "export PRELAUNCH_OUT=\"{log}/{PRELAUNCH_OUT}\"");
    let _ = writeln!(s, "exec >\"${{PRELAUNCH_OUT}}\"");
    let _ = writeln!(s, "export PRELAUNCH_ERR=\"{log}/{PRELAUNCH_ERR}\"");
    let _ = writeln!(s, "exec 2>\"${{PRELAUNCH_ERR}}\"");
    let _ = writeln!(s, "echo \"Setting up env variables\"");
    for (k, v) in &env.whitelisted {
        let _ = writeln!(s, "export {k}=${{{k}:-\"{v}\"}}");
    }
    for (k, v) in env.node.iter().chain(&env.container) {
        let _ = writeln!(s, "export {k}=\"{v}\"");
    }
    let _ = writeln!(s, "echo \"Setting up job resources\"");
    for l in links {
        let link = l.link.trim_end_matches('/');
        if let Some((parent, _)) = link.rsplit_once('/') {
            if !parent.is_empty() {
                let _ = writeln!(s, "mkdir -p {}", shell_quote(parent));
            }
        }
        let _ = writeln!(
            s,
            "ln -sf -- {} {}",
            shell_quote(&l.target.to_string_lossy()),
            shell_quote(link)
        );
    }
    let _ = writeln!(s, "echo \"Launching container\"");
    let _ = writeln!(s, "exec /bin/bash -c \"{}\"", commands.join(" "));
    s
}

/// `JAVA_HOME` for a node whose environment has none: the installation of
/// the `java` found on `path` (symbolic links resolved, `…/bin/java` →
/// `…`).
pub fn java_home_from_path(path: &str) -> Option<String> {
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join("java"))
        .find(|p| p.is_file())
        .and_then(|java| std::fs::canonicalize(java).ok())
        .and_then(|real| {
            let bin = real.parent()?;
            if bin.file_name()? != "bin" {
                return None;
            }
            Some(bin.parent()?.to_string_lossy().into_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::{ApplicationAttemptId, ApplicationId};

    fn container() -> ContainerId {
        ContainerId::new(
            ApplicationAttemptId::new(ApplicationId::new(1_795_326_004_599, 1), 1),
            2,
        )
    }

    fn paths() -> ContainerPaths {
        ContainerPaths::new(
            &[PathBuf::from("/l1"), PathBuf::from("/l2")],
            &[PathBuf::from("/logs1"), PathBuf::from("/logs2")],
            "alice",
            &container(),
            1,
            0,
        )
    }

    #[test]
    fn expansion_follows_hadoop() {
        let log = Path::new("/logs/app/c");
        assert_eq!(
            expand("{{PWD}}<CPS>{{PWD}}/__spark_libs__/*", log),
            "$PWD:$PWD/__spark_libs__/*"
        );
        assert_eq!(
            expand("-Dspark.yarn.app.container.log.dir=<LOG_DIR>", log),
            "-Dspark.yarn.app.container.log.dir=/logs/app/c"
        );
        assert_eq!(expand("<LOG_DIR>/stdout", log), "/logs/app/c/stdout");
        assert_eq!(expand("java <ADD_OPENS> -cp x", log), "java  -cp x");
        // Each brace pair is replaced on its own, as Hadoop does.
        assert_eq!(expand("a{{b", log), "a$b");
        assert_eq!(expand("a}}b", log), "ab");
        assert_eq!(expand("plain $HOME", log), "plain $HOME");
    }

    #[test]
    fn container_paths_follow_the_layout() {
        let p = paths();
        let c = container().to_string();
        assert_eq!(
            p.work_dir,
            PathBuf::from(format!(
                "/l2/usercache/alice/appcache/application_1795326004599_0001/{c}"
            ))
        );
        assert_eq!(
            p.log_dir,
            PathBuf::from(format!("/logs1/application_1795326004599_0001/{c}"))
        );
        assert_eq!(p.log_dirs.len(), 2);
        assert_eq!(p.tokens_file(), p.work_dir.join("container_tokens"));
    }

    fn node_env<'a>(
        node: &'a NodeId,
        whitelist: &'a [String],
        admin: &'a [(String, String)],
        nm_env: &'a BTreeMap<String, String>,
    ) -> NodeEnv<'a> {
        NodeEnv {
            node_id: node,
            http_port: 8042,
            user_home_dir: "/home/",
            whitelist,
            admin_env: admin,
            nm_env,
            aux_meta: &[],
        }
    }

    #[test]
    fn environment_has_node_variables_whitelist_and_admin_env() {
        let node = NodeId::new("nm1.example", 45454);
        let whitelist: Vec<String> = ["JAVA_HOME", "PATH", "LANG", "HADOOP_CONF_DIR"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let admin = vec![(
            "MALLOC_ARENA_MAX".to_string(),
            "$MALLOC_ARENA_MAX".to_string(),
        )];
        let nm_env: BTreeMap<String, String> = [
            ("JAVA_HOME", "/usr/lib/jvm/java-17"),
            ("PATH", "/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
            ("SECRET", "not for containers"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let clc = vec![
            (
                "CLASSPATH".to_string(),
                "{{PWD}}<CPS>{{PWD}}/__spark_conf__<CPS>{{PWD}}/__spark_libs__/*".to_string(),
            ),
            ("LANG".to_string(), "en_US.UTF-8".to_string()),
            ("USER".to_string(), "mallory".to_string()),
            ("SPARK_USER".to_string(), "alice".to_string()),
        ];
        let p = paths();
        let env = build_env(
            &clc,
            &container(),
            "alice",
            &p,
            &node_env(&node, &whitelist, &admin, &nm_env),
            "0,0,0,0,5",
        );
        // Whitelisted: only what the container did not set and the node has.
        assert_eq!(
            env.whitelisted,
            vec![
                ("JAVA_HOME".to_string(), "/usr/lib/jvm/java-17".to_string()),
                ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ]
        );
        let names: Vec<&str> = env.node.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "CONTAINER_ID",
                "NM_PORT",
                "NM_HOST",
                "NM_HTTP_PORT",
                "LOCAL_DIRS",
                "LOCAL_USER_DIRS",
                "LOG_DIRS",
                "USER",
                "LOGNAME",
                "HOME",
                "PWD",
                "LOCALIZATION_COUNTERS",
                "JVM_PID",
                "HADOOP_TOKEN_FILE_LOCATION",
            ]
        );
        assert_eq!(env.get("USER"), Some("alice"), "the node's USER wins");
        assert_eq!(env.get("NM_PORT"), Some("45454"));
        assert_eq!(env.get("JVM_PID"), Some("$$"));
        assert_eq!(env.get("MALLOC_ARENA_MAX"), Some(""));
        assert_eq!(
            env.get("LOCAL_DIRS"),
            Some(
                "/l1/usercache/alice/appcache/application_1795326004599_0001,\
                 /l2/usercache/alice/appcache/application_1795326004599_0001"
            )
        );
        assert_eq!(
            env.get("LOCAL_USER_DIRS"),
            Some("/l1/usercache/alice/,/l2/usercache/alice/")
        );
        assert_eq!(
            env.get("CLASSPATH"),
            Some("$PWD:$PWD/__spark_conf__:$PWD/__spark_libs__/*")
        );
        assert_eq!(env.get("LANG"), Some("en_US.UTF-8"));
        assert_eq!(env.get("SECRET"), None, "only whitelisted node variables");
    }

    #[test]
    fn admin_env_refers_to_node_values() {
        let node = NodeId::new("h", 1);
        let admin = vec![
            (
                "MALLOC_ARENA_MAX".to_string(),
                "$MALLOC_ARENA_MAX".to_string(),
            ),
            ("EXTRA".to_string(), "${FOO}-x".to_string()),
        ];
        let nm_env: BTreeMap<String, String> = [("MALLOC_ARENA_MAX", "4"), ("FOO", "bar")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let clc = vec![("EXTRA".to_string(), "mine".to_string())];
        let env = build_env(
            &clc,
            &container(),
            "u",
            &paths(),
            &node_env(&node, &[], &admin, &nm_env),
            "",
        );
        assert_eq!(env.get("MALLOC_ARENA_MAX"), Some("4"));
        assert_eq!(env.get("EXTRA"), Some("mine:bar-x"));
    }

    #[test]
    fn variables_come_after_those_they_use() {
        let vars = vec![
            ("B".to_string(), "$A/b".to_string()),
            ("C".to_string(), "plain".to_string()),
            ("A".to_string(), "${C}/a".to_string()),
            ("SELF".to_string(), "$SELF:x".to_string()),
            ("X".to_string(), "$Y".to_string()),
            ("Y".to_string(), "$X".to_string()),
        ];
        let names: Vec<String> = order_by_dependencies(vars)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, vec!["C", "A", "B", "SELF", "Y", "X"]);
        assert_eq!(referenced_vars("$A${B}$1 $ ${C"), vec!["A", "B", "C"]);
    }

    #[test]
    fn launch_script_content() {
        let env = LaunchEnv {
            whitelisted: vec![("JAVA_HOME".into(), "/jdk".into())],
            node: vec![
                ("CONTAINER_ID".into(), "container_1_0001_01_000002".into()),
                ("JVM_PID".into(), "$$".into()),
            ],
            container: vec![("CLASSPATH".into(), "$PWD:$PWD/__spark_libs__/*".into())],
        };
        let links = vec![
            ResourceLink {
                target: PathBuf::from("/cache/10/__spark_libs__123.zip"),
                link: "__spark_libs__".into(),
            },
            ResourceLink {
                target: PathBuf::from("/cache/11/x.jar"),
                link: "__spark_libs__/nested/x.jar".into(),
            },
            ResourceLink {
                target: PathBuf::from("/cache/12/it's.py"),
                link: "it's.py".into(),
            },
        ];
        let commands = vec![
            "{{JAVA_HOME}}/bin/java".to_string(),
            "-Xmx1024m".to_string(),
            "'org.example.Main'".to_string(),
            "1>/logs/c/stdout".to_string(),
            "2>/logs/c/stderr".to_string(),
        ];
        let script = launch_script(&env, &links, &commands, Path::new("/logs/c"));
        let expected = r#"#!/bin/bash

set -o pipefail -e
export PRELAUNCH_OUT="/logs/c/prelaunch.out"
exec >"${PRELAUNCH_OUT}"
export PRELAUNCH_ERR="/logs/c/prelaunch.err"
exec 2>"${PRELAUNCH_ERR}"
echo "Setting up env variables"
export JAVA_HOME=${JAVA_HOME:-"/jdk"}
export CONTAINER_ID="container_1_0001_01_000002"
export JVM_PID="$$"
export CLASSPATH="$PWD:$PWD/__spark_libs__/*"
echo "Setting up job resources"
ln -sf -- '/cache/10/__spark_libs__123.zip' '__spark_libs__'
mkdir -p '__spark_libs__/nested'
ln -sf -- '/cache/11/x.jar' '__spark_libs__/nested/x.jar'
ln -sf -- '/cache/12/it'\''s.py' 'it'\''s.py'
echo "Launching container"
exec /bin/bash -c "{{JAVA_HOME}}/bin/java -Xmx1024m 'org.example.Main' 1>/logs/c/stdout 2>/logs/c/stderr"
"#;
        assert_eq!(script, expected);
    }

    #[test]
    fn link_names_stay_inside_the_work_dir() {
        assert!(validate_link_name("__spark_libs__").is_ok());
        assert!(validate_link_name("__spark_libs__/a.jar").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../../x", ".", "./", "a\0b"] {
            assert!(validate_link_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn java_home_is_derived_from_path() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let jdk = tmp.path().join("jvm/jdk-17");
        std::fs::create_dir_all(jdk.join("bin")).expect("mkdir");
        std::fs::write(jdk.join("bin/java"), "#!/bin/sh\n").expect("write");
        let usr_bin = tmp.path().join("usr/bin");
        std::fs::create_dir_all(&usr_bin).expect("mkdir");
        let alternatives = tmp.path().join("etc/alternatives");
        std::fs::create_dir_all(&alternatives).expect("mkdir");
        std::os::unix::fs::symlink(jdk.join("bin/java"), alternatives.join("java"))
            .expect("symlink");
        std::os::unix::fs::symlink(alternatives.join("java"), usr_bin.join("java"))
            .expect("symlink");
        let path = format!("/nonexistent:{}", usr_bin.display());
        let home = java_home_from_path(&path).expect("found");
        assert_eq!(
            PathBuf::from(home),
            std::fs::canonicalize(&jdk).expect("canonical")
        );
        assert_eq!(java_home_from_path("/nonexistent"), None);
    }
}
