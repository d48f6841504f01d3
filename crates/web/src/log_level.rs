//! Hadoop's `/logLevel` (`LogLevel.Servlet`) over `tracing`: `?log=<name>`
//! shows the level in force for a logger name (a `tracing` target, e.g.
//! `spindle_rm::state`), `&level=<LEVEL>` sets it at run time by adding a
//! `<name>=<level>` directive to the process's filter. The process installs
//! the way to replace its filter once ([`install`]); without it the
//! endpoint says the level cannot be changed.

use std::sync::{Mutex, OnceLock};

type Apply = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

struct Control {
    directives: Mutex<String>,
    apply: Apply,
}

static CONTROL: OnceLock<Control> = OnceLock::new();

/// Installs the process's filter: its current directives (`SPINDLE_LOG`'s
/// syntax) and the function that puts new ones in force.
pub fn install(directives: &str, apply: Apply) {
    let _ = CONTROL.set(Control {
        directives: Mutex::new(directives.to_string()),
        apply,
    });
}

/// Hadoop's level names to `tracing`'s (`FATAL` is `error`, `ALL` is
/// `trace`); `None` for a name Hadoop does not know.
pub fn tracing_level(hadoop: &str) -> Option<&'static str> {
    match hadoop.trim().to_ascii_uppercase().as_str() {
        "ALL" | "TRACE" => Some("trace"),
        "DEBUG" => Some("debug"),
        "INFO" => Some("info"),
        "WARN" => Some("warn"),
        "ERROR" | "FATAL" => Some("error"),
        "OFF" => Some("off"),
        _ => None,
    }
}

/// Whether `name` may be a target in a directive.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '-'))
}

/// The level `directives` give `name`: the directive with the longest
/// target that is a prefix of it, else the default (a directive without a
/// target), else `error` (tracing's default filter).
pub fn effective_level(directives: &str, name: &str) -> String {
    let mut best: Option<(usize, String)> = None;
    let mut default = None;
    for d in directives
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        match d.split_once('=') {
            Some((target, level)) => {
                if name.starts_with(target)
                    && best.as_ref().is_none_or(|(len, _)| target.len() >= *len)
                {
                    best = Some((target.len(), level.to_ascii_uppercase()));
                }
            }
            None if tracing_level(d).is_some() => default = Some(d.to_ascii_uppercase()),
            None => {
                // A bare target: everything at trace.
                if name.starts_with(d) && best.as_ref().is_none_or(|(len, _)| d.len() >= *len) {
                    best = Some((d.len(), "TRACE".to_string()));
                }
            }
        }
    }
    best.map(|(_, l)| l)
        .or(default)
        .unwrap_or_else(|| "ERROR".to_string())
}

/// `directives` with `name` at `level`: an earlier directive for the same
/// target is replaced.
pub fn with_level(directives: &str, name: &str, level: &str) -> String {
    let mut kept: Vec<String> = directives
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter(|d| d.split_once('=').map_or(*d, |(t, _)| t) != name)
        .map(str::to_string)
        .collect();
    kept.push(format!("{name}={level}"));
    kept.join(",")
}

/// The level in force for `name`, if the filter is installed.
pub fn get(name: &str) -> Option<String> {
    let c = CONTROL.get()?;
    let d = c.directives.lock().unwrap_or_else(|p| p.into_inner());
    Some(effective_level(&d, name))
}

/// Sets `name` to Hadoop level `level`; returns the level now in force.
pub fn set(name: &str, level: &str) -> Result<String, String> {
    let c = CONTROL
        .get()
        .ok_or_else(|| "this process cannot change its log levels".to_string())?;
    let lvl = tracing_level(level).ok_or_else(|| format!("Bad level : {level}"))?;
    let mut d = c.directives.lock().unwrap_or_else(|p| p.into_inner());
    let next = with_level(&d, name, lvl);
    (c.apply)(&next)?;
    *d = next;
    Ok(effective_level(&d, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_directives() {
        assert_eq!(tracing_level("fatal"), Some("error"));
        assert_eq!(tracing_level("DEBUG"), Some("debug"));
        assert_eq!(tracing_level("LOUD"), None);
        assert_eq!(effective_level("info", "spindle_rm::state"), "INFO");
        assert_eq!(
            effective_level(
                "info,spindle_rm=debug,spindle_rm::state=warn",
                "spindle_rm::state::x"
            ),
            "WARN"
        );
        assert_eq!(
            effective_level("info,spindle_rm=debug", "spindle_rm::web"),
            "DEBUG"
        );
        assert_eq!(effective_level("", "x"), "ERROR");
        assert_eq!(
            with_level("info,spindle_rm=debug", "spindle_rm", "trace"),
            "info,spindle_rm=trace"
        );
        assert!(valid_name("spindle_rm::web"));
        assert!(!valid_name("a=b,c"));
        assert!(!valid_name(""));
    }
}
