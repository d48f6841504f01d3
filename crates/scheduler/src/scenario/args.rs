//! The words of a script line: nodes, containers, `key=value` options,
//! numbers and booleans, with the errors a script author can act on.

use std::collections::BTreeMap;

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId};

use super::DEFAULT_NODE_PORT;

pub(super) fn parse_node(s: &str) -> Result<NodeId, String> {
    if s.contains(':') {
        s.parse().map_err(|e| format!("{e}"))
    } else {
        Ok(NodeId::new(s, DEFAULT_NODE_PORT))
    }
}

pub(super) fn container_arg(
    attempt: ApplicationAttemptId,
    s: &str,
    epoch: i64,
) -> Result<ContainerId, String> {
    let seq = s
        .strip_prefix('c')
        .ok_or_else(|| format!("containers are written cN, not '{s}'"))?;
    Ok(ContainerId::with_epoch(
        attempt,
        epoch,
        number("container", seq)?,
    ))
}

pub(super) fn split_kv(arg: &str) -> Result<(&str, &str), String> {
    arg.split_once('=')
        .ok_or_else(|| format!("expected key=value, got '{arg}'"))
}

pub(super) fn options<'a>(args: &[&'a str]) -> Result<BTreeMap<&'a str, &'a str>, String> {
    args.iter().map(|a| split_kv(a)).collect()
}

pub(super) fn node_and_options<'a>(
    args: &[&'a str],
) -> Result<(NodeId, BTreeMap<&'a str, &'a str>), String> {
    let (node, rest) = args.split_first().ok_or("which node?")?;
    Ok((parse_node(node)?, options(rest)?))
}

pub(super) fn only_keys(opts: &BTreeMap<&str, &str>, allowed: &[&str]) -> Result<(), String> {
    match opts.keys().find(|k| !allowed.contains(k)) {
        Some(k) => Err(format!(
            "unknown option '{k}' (allowed: {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

pub(super) fn required<'a>(opts: &BTreeMap<&str, &'a str>, key: &str) -> Result<&'a str, String> {
    opts.get(key)
        .copied()
        .ok_or_else(|| format!("missing {key}=..."))
}

pub(super) fn optional<T: std::str::FromStr>(
    opts: &BTreeMap<&str, &str>,
    key: &str,
    default: T,
) -> Result<T, String> {
    match opts.get(key) {
        Some(v) => number(key, v),
        None => Ok(default),
    }
}

pub(super) fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{key}: '{value}' is not a valid number"))
}

pub(super) fn boolean(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{key}: expected true or false, got '{value}'")),
    }
}
