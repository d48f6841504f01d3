//! The jars of a Java component the tests run, as `integration/setup-maven.sh <name>` copies
//! them (a pom under `integration/maven/<name>/`): `$SPINDLE_<NAME>_JARS`, else
//! `${SPINDLE_MAVEN_CACHE:-$HOME/.cache/spindle-maven}/<name>`.
//!
//! [`MavenJars::for_tests`] is the skip policy, as for the Hadoop clients: without the jars
//! a test prints `SKIP:` and returns, except under CI where it fails.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use crate::clients::running_in_ci;

/// The folder of one component's jars.
#[derive(Debug, Clone)]
pub struct MavenJars {
    name: &'static str,
    dir: PathBuf,
}

fn non_empty_env(key: &str) -> Option<OsString> {
    std::env::var_os(key).filter(|v| !v.is_empty())
}

impl MavenJars {
    /// Finds the jars of `name`, checking that a jar whose file name starts with
    /// `main_jar` is among them; fails with the command to run when they are missing.
    pub fn locate(name: &'static str, main_jar: &str) -> anyhow::Result<Self> {
        let env_key = format!("SPINDLE_{}_JARS", name.to_ascii_uppercase());
        let dir = match non_empty_env(&env_key) {
            Some(dir) => PathBuf::from(dir),
            None => {
                let cache = match non_empty_env("SPINDLE_MAVEN_CACHE") {
                    Some(dir) => PathBuf::from(dir),
                    None => PathBuf::from(non_empty_env("HOME").context(
                        "neither SPINDLE_MAVEN_CACHE nor HOME is set: cannot find the Maven cache",
                    )?)
                    .join(".cache")
                    .join("spindle-maven"),
                };
                cache.join(name)
            }
        };
        let jars = Self { name, dir };
        let found = jars.classpath_entries().unwrap_or_default();
        if !found.iter().any(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(main_jar) && n.ends_with(".jar"))
        }) {
            bail!(
                "no {main_jar}*.jar in {}: run integration/setup-maven.sh {name}",
                jars.dir.display()
            );
        }
        Ok(jars)
    }

    /// The skip policy: the jars when installed; under CI a panic when they are not;
    /// elsewhere a `SKIP:` line and `None`.
    #[track_caller]
    pub fn for_tests(name: &'static str, main_jar: &str) -> Option<Self> {
        match Self::locate(name, main_jar) {
            Ok(jars) => Some(jars),
            Err(e) if running_in_ci() => panic!("the {name} jars are required under CI: {e:#}"),
            Err(e) => {
                eprintln!("SKIP: run integration/setup-maven.sh {name} ({e:#})");
                None
            }
        }
    }

    /// The jars of `name` in `dir`, taken as they are (no check that any jar is there).
    pub fn for_dir(name: &'static str, dir: impl Into<PathBuf>) -> Self {
        Self {
            name,
            dir: dir.into(),
        }
    }

    /// The folder holding the jars.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every jar of the folder, sorted.
    pub fn classpath_entries(&self) -> anyhow::Result<Vec<PathBuf>> {
        let mut jars: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .with_context(|| format!("listing {}", self.dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jar"))
            .collect();
        jars.sort();
        Ok(jars)
    }

    /// The classpath of every jar.
    pub fn classpath(&self) -> anyhow::Result<OsString> {
        std::env::join_paths(self.classpath_entries()?)
            .with_context(|| format!("joining the {} classpath", self.name))
    }
}
