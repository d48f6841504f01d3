//! `${...}` variable expansion with Hadoop's rules.
//!
//! * The first complete reference is replaced, then the search starts again
//!   on the result, so references nested in names (`${a.${b}}`) and
//!   references inside substituted values are expanded too.
//! * A variable name runs to the next `}` and must not contain a space or
//!   `$`; anything else is left as literal text.
//! * A reference that cannot be resolved stops expansion and stays in the
//!   value literally.
//! * A value that refers to itself (`a = x${a}`) is returned unexpanded.
//! * At most [`MAX_SUBSTITUTIONS`] replacements are made; a value that needs
//!   more (typically a reference cycle such as `a=${b}`, `b=${a}`) is an
//!   error the caller reports.

/// Hadoop's limit on replacements per value.
pub const MAX_SUBSTITUTIONS: usize = 20;

/// Expansion needed more than [`MAX_SUBSTITUTIONS`] replacements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SubstitutionLimit;

/// Expands `expr`, asking `resolve` for the value of each variable name.
pub(crate) fn expand(
    expr: &str,
    mut resolve: impl FnMut(&str) -> Option<String>,
) -> Result<String, SubstitutionLimit> {
    let mut eval = expr.to_string();
    for _ in 0..MAX_SUBSTITUTIONS {
        let Some((start, end)) = find_variable(&eval) else {
            return Ok(eval);
        };
        let Some(value) = resolve(&eval[start..end]) else {
            return Ok(eval);
        };
        // `start - 2` is the `$` of `${`, `end` is the closing brace.
        let reference = &eval[start - 2..=end];
        if value.contains(reference) {
            return Ok(expr.to_string());
        }
        eval = format!("{}{}{}", &eval[..start - 2], value, &eval[end + 1..]);
    }
    if find_variable(&eval).is_none() {
        Ok(eval)
    } else {
        Err(SubstitutionLimit)
    }
}

/// Finds the first complete `${name}` in `s` and returns the byte range of
/// `name`. Scanning restarts after any space, `$` or empty `${}`, so in
/// `${a${b}}` the inner `${b}` is found first.
fn find_variable(s: &str) -> Option<(usize, usize)> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(offset) = s.get(from..).and_then(|rest| rest.find("${")) {
        let start = from + offset + 2;
        let mut i = start;
        loop {
            match bytes.get(i) {
                None => return None,
                Some(b'}') if i > start => return Some((start, i)),
                Some(b'}') | Some(b' ') => {
                    from = i + 1;
                    break;
                }
                // A `$` may start the next reference itself.
                Some(b'$') => {
                    from = i;
                    break;
                }
                Some(_) => i += 1,
            }
        }
    }
    None
}

/// Resolves the part after `env.` of an `${env.SPEC}` reference:
/// `NAME`, `NAME:-fallback` (fallback when unset or empty) or
/// `NAME-fallback` (fallback when unset).
pub(crate) fn env_reference(spec: &str, getenv: impl Fn(&str) -> Option<String>) -> Option<String> {
    let bytes = spec.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b':' && bytes.get(i + 1) == Some(&b'-') {
            return match getenv(&spec[..i]) {
                Some(v) if !v.is_empty() => Some(v),
                _ => Some(spec[i + 2..].to_string()),
            };
        }
        if b == b'-' {
            return getenv(&spec[..i]).or_else(|| Some(spec[i + 1..].to_string()));
        }
    }
    getenv(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn exp(expr: &str, map: &HashMap<String, String>) -> Result<String, SubstitutionLimit> {
        expand(expr, |v| map.get(v).cloned())
    }

    #[test]
    fn finds_variables_like_hadoop() {
        assert_eq!(find_variable("${a}"), Some((2, 3)));
        assert_eq!(find_variable("x${ab}y"), Some((3, 5)));
        assert_eq!(find_variable("${}"), None);
        assert_eq!(find_variable("${a b}"), None);
        assert_eq!(find_variable("${a b}${c}"), Some((8, 9)));
        assert_eq!(find_variable("${a${b}}"), Some((5, 6)));
        assert_eq!(find_variable("$${a}"), Some((3, 4)));
        assert_eq!(find_variable("${unterminated"), None);
        assert_eq!(find_variable("{a}"), None);
        assert_eq!(find_variable("$a"), None);
    }

    #[test]
    fn expands_recursively_and_nested() {
        let m = vars(&[
            ("host", "rm1"),
            ("addr", "${host}:8032"),
            ("which", "host"),
            ("é", "ü"),
        ]);
        assert_eq!(exp("${addr}", &m), Ok("rm1:8032".into()));
        assert_eq!(exp("${${which}}", &m), Ok("rm1".into()));
        assert_eq!(exp("a-${é}-b", &m), Ok("a-ü-b".into()));
        assert_eq!(exp("no vars", &m), Ok("no vars".into()));
    }

    #[test]
    fn unknown_variable_stays_literal() {
        let m = vars(&[("a", "1")]);
        assert_eq!(exp("${a}/${nope}/${a}", &m), Ok("1/${nope}/${a}".into()));
    }

    #[test]
    fn self_reference_returns_original() {
        let m = vars(&[("a", "x${a}")]);
        assert_eq!(exp("pre ${a}", &m), Ok("pre ${a}".into()));
    }

    #[test]
    fn cycle_hits_the_limit() {
        let m = vars(&[("a", "${b}"), ("b", "${a}")]);
        assert_eq!(exp("${a}", &m), Err(SubstitutionLimit));
    }

    #[test]
    fn exactly_the_limit_is_fine() {
        let m = vars(&[("v", "x")]);
        let expr = "${v}".repeat(MAX_SUBSTITUTIONS);
        assert_eq!(exp(&expr, &m), Ok("x".repeat(MAX_SUBSTITUTIONS)));
        let expr = "${v}".repeat(MAX_SUBSTITUTIONS + 1);
        assert_eq!(exp(&expr, &m), Err(SubstitutionLimit));
    }

    #[test]
    fn env_reference_forms() {
        let env = |n: &str| match n {
            "SET" => Some("value".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        assert_eq!(env_reference("SET", env), Some("value".into()));
        assert_eq!(env_reference("UNSET", env), None);
        assert_eq!(env_reference("UNSET:-dflt", env), Some("dflt".into()));
        assert_eq!(env_reference("EMPTY:-dflt", env), Some("dflt".into()));
        assert_eq!(env_reference("SET:-dflt", env), Some("value".into()));
        assert_eq!(env_reference("UNSET-dflt", env), Some("dflt".into()));
        assert_eq!(env_reference("EMPTY-dflt", env), Some(String::new()));
        assert_eq!(env_reference("UNSET:-a-b", env), Some("a-b".into()));
    }
}
