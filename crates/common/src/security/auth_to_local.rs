//! Hadoop's `hadoop.security.auth_to_local`: the rules that map a Kerberos
//! principal to a short user name (Hadoop's `KerberosName`).
//!
//! A rule set is a list, tried in order until one applies:
//!
//! - `DEFAULT`: a principal of the default realm maps to its first
//!   component (`nm/host@REALM` → `nm`);
//! - `RULE:[n:format](match)s/pattern/replacement/g/L`: applies to
//!   principals of `n` components; `format` builds a string from the realm
//!   (`$0`) and the components (`$1`, `$2`); the optional `(match)` regex must
//!   match all of it; the optional sed-style substitution (first match, or
//!   every one with `g`) gives the short name, lower-cased with `/L`.
//!
//! Under `hadoop.security.auth_to_local.mechanism=hadoop` (the default) a
//! result that still holds `@` or `/` is an error; under `MIT` it is kept.
//! No rule applying is an error, "No rules applied to …", as Hadoop's.

use regex::Regex;

/// One parsed rule.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Rule {
        components: usize,
        format: String,
        matching: Option<Regex>,
        substitution: Option<(Regex, String, bool)>,
        lower: bool,
    },
}

/// Which of Hadoop's two mechanisms checks the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// `hadoop`: a short name may not contain `@` or `/`.
    Hadoop,
    /// `MIT`: any result is kept.
    Mit,
}

/// A parsed rule set with the realm `DEFAULT` stands for.
#[derive(Debug, Clone)]
pub struct AuthToLocal {
    rules: Vec<Rule>,
    default_realm: String,
    mechanism: Mechanism,
}

impl AuthToLocal {
    /// Parses `rules` (the key's value; empty means `DEFAULT`). A rule
    /// Hadoop would not parse is an error naming it.
    pub fn parse(
        rules: &str,
        default_realm: &str,
        mechanism: Mechanism,
    ) -> Result<AuthToLocal, String> {
        let mut parsed = Vec::new();
        let mut rest = rules.trim_start();
        while !rest.is_empty() {
            let (rule, after) = parse_rule(rest)?;
            parsed.push(rule);
            rest = after.trim_start();
        }
        if parsed.is_empty() {
            parsed.push(Rule::Default);
        }
        Ok(AuthToLocal {
            rules: parsed,
            default_realm: default_realm.to_string(),
            mechanism,
        })
    }

    /// The short name of `principal` (`primary[/instance]@REALM`, or a name
    /// without a realm, which Hadoop takes as is).
    pub fn short_name(&self, principal: &str) -> Result<String, String> {
        let (name, realm) = match principal.rsplit_once('@') {
            Some((n, r)) => (n, Some(r)),
            None => (principal, None),
        };
        let Some(realm) = realm else {
            // Hadoop: a name without a realm is its own short name.
            return Ok(principal.to_string());
        };
        let components: Vec<&str> = name.split('/').collect();
        for rule in &self.rules {
            let Some(result) = self.apply(rule, realm, &components)? else {
                continue;
            };
            if self.mechanism == Mechanism::Hadoop && result.contains(['@', '/']) {
                return Err(format!(
                    "Non-simple name {result} after auth_to_local rule {}",
                    rule_text(rule)
                ));
            }
            return Ok(result);
        }
        Err(format!("No rules applied to {principal}"))
    }

    fn apply(
        &self,
        rule: &Rule,
        realm: &str,
        components: &[&str],
    ) -> Result<Option<String>, String> {
        match rule {
            Rule::Default => Ok((realm == self.default_realm).then(|| components[0].to_string())),
            Rule::Rule {
                components: n,
                format,
                matching,
                substitution,
                lower,
            } => {
                if *n != components.len() {
                    return Ok(None);
                }
                let built = replace_parameters(format, realm, components)?;
                if matching.as_ref().is_some_and(|m| !m.is_match(&built)) {
                    return Ok(None);
                }
                let mut result = match substitution {
                    None => built,
                    Some((pattern, replacement, true)) => pattern
                        .replace_all(&built, replacement.as_str())
                        .into_owned(),
                    Some((pattern, replacement, false)) => {
                        pattern.replace(&built, replacement.as_str()).into_owned()
                    }
                };
                if *lower {
                    result = result.to_lowercase();
                }
                Ok(Some(result))
            }
        }
    }
}

/// `$0` is the realm, `$1`… the components; a number past them is an
/// error, as Hadoop's "index … from … is outside of the valid range".
fn replace_parameters(format: &str, realm: &str, components: &[&str]) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        if digits.is_empty() {
            out.push('$');
            continue;
        }
        let index: usize = digits
            .parse()
            .map_err(|_| format!("bad parameter ${digits} in {format}"))?;
        match index {
            0 => out.push_str(realm),
            i if i <= components.len() => out.push_str(components[i - 1]),
            i => {
                return Err(format!(
                    "index {i} from {format} is outside of the valid range 0 to {}",
                    components.len()
                ))
            }
        }
    }
    Ok(out)
}

/// A full match, as Java's `Matcher.matches`.
fn anchored(pattern: &str, rule: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| format!("Invalid rule: {rule}: bad regular expression: {e}"))
}

/// Java's replacement syntax (`$1`) is the regex crate's, once a `$` that
/// is not followed by a digit is escaped.
fn replacement(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                out.push_str(&format!("${{{digits}}}"));
            }
            '$' => out.push_str("$$"),
            '\\' => {
                if let Some(next) = chars.next() {
                    if next == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(next);
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// One rule from the front of `text`, and what follows it.
fn parse_rule(text: &str) -> Result<(Rule, &str), String> {
    let bad = || {
        let shown: String = text.split_whitespace().next().unwrap_or(text).to_string();
        format!("Invalid rule: {shown}")
    };
    if let Some(rest) = text.strip_prefix("DEFAULT") {
        return Ok((Rule::Default, rest));
    }
    let rest = text.strip_prefix("RULE:[").ok_or_else(bad)?;
    let (head, mut rest) = rest.split_once(']').ok_or_else(bad)?;
    let (n, format) = head.split_once(':').ok_or_else(bad)?;
    let components: usize = n.parse().map_err(|_| bad())?;
    let whole = &text[..text.len() - rest.len()];
    let mut matching = None;
    if let Some(after) = rest.strip_prefix('(') {
        let (pattern, after) = after.split_once(')').ok_or_else(bad)?;
        matching = Some(anchored(pattern, whole)?);
        rest = after;
    }
    let mut substitution = None;
    if let Some(after) = rest.strip_prefix("s/") {
        let (pattern, after) = after.split_once('/').ok_or_else(bad)?;
        let (to, after) = after.split_once('/').ok_or_else(bad)?;
        let (global, after) = match after.strip_prefix('g') {
            Some(a) => (true, a),
            None => (false, after),
        };
        let regex = Regex::new(pattern)
            .map_err(|e| format!("Invalid rule: {whole}: bad regular expression: {e}"))?;
        substitution = Some((regex, replacement(to), global));
        rest = after;
    }
    // Hadoop's grammar ends a rule with an optional `/` and an optional `L`.
    let after_slash = rest.strip_prefix('/').unwrap_or(rest);
    let (lower, rest) = match after_slash.strip_prefix('L') {
        Some(a) => (true, a),
        None => (false, after_slash),
    };
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return Err(bad());
    }
    Ok((
        Rule::Rule {
            components,
            format: format.to_string(),
            matching,
            substitution,
            lower,
        },
        rest,
    ))
}

fn rule_text(rule: &Rule) -> String {
    match rule {
        Rule::Default => "DEFAULT".into(),
        Rule::Rule {
            components, format, ..
        } => format!("RULE:[{components}:{format}]…"),
    }
}

/// The default realm of MIT's configuration: `default_realm` in the
/// `[libdefaults]` of the first file of `KRB5_CONFIG` (colon-separated) that
/// has one, else of `/etc/krb5.conf`; `None` when there is none.
pub fn default_realm_from(krb5_config: Option<&str>) -> Option<String> {
    let files: Vec<String> = match krb5_config {
        Some(list) if !list.is_empty() => list.split(':').map(str::to_string).collect(),
        _ => vec!["/etc/krb5.conf".to_string()],
    };
    files.iter().find_map(|f| {
        let text = std::fs::read_to_string(f).ok()?;
        realm_in(&text)
    })
}

fn realm_in(text: &str) -> Option<String> {
    let mut in_libdefaults = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_libdefaults = line == "[libdefaults]";
            continue;
        }
        if !in_libdefaults {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            if k.trim() == "default_realm" {
                return Some(v.trim().to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules of a usual secure core-site.xml.
    const SHOP: &str = "
      RULE:[2:$1/$2@$0]([ndj]n/.*@EXAMPLE.COM)s/.*/hdfs/
      RULE:[2:$1/$2@$0]([rn]m/.*@EXAMPLE.COM)s/.*/yarn/
      RULE:[2:$1/$2@$0](jhs/.*@EXAMPLE.COM)s/.*/mapred/
      DEFAULT
    ";

    fn rules(text: &str) -> AuthToLocal {
        AuthToLocal::parse(text, "EXAMPLE.COM", Mechanism::Hadoop).expect("rules parse")
    }

    #[test]
    fn a_shops_rules_map_services_and_users() {
        let r = rules(SHOP);
        assert_eq!(
            r.short_name("rm/rm1.example.com@EXAMPLE.COM").as_deref(),
            Ok("yarn")
        );
        assert_eq!(
            r.short_name("nm/host7.example.com@EXAMPLE.COM").as_deref(),
            Ok("yarn")
        );
        assert_eq!(
            r.short_name("nn/nn1.example.com@EXAMPLE.COM").as_deref(),
            Ok("hdfs")
        );
        assert_eq!(r.short_name("jhs/h@EXAMPLE.COM").as_deref(), Ok("mapred"));
        assert_eq!(r.short_name("alice@EXAMPLE.COM").as_deref(), Ok("alice"));
        // DEFAULT: the first component of any principal of the default realm.
        assert_eq!(r.short_name("HTTP/h@EXAMPLE.COM").as_deref(), Ok("HTTP"));
        assert_eq!(
            r.short_name("alice@OTHER.ORG"),
            Err("No rules applied to alice@OTHER.ORG".into())
        );
    }

    #[test]
    fn empty_means_default() {
        let r = rules("  ");
        assert_eq!(r.short_name("nm/h@EXAMPLE.COM").as_deref(), Ok("nm"));
        assert!(r.short_name("nm/h@ELSEWHERE").is_err());
        // A name without a realm is its own short name.
        assert_eq!(r.short_name("bob").as_deref(), Ok("bob"));
    }

    #[test]
    fn formats_matches_substitutions_and_lower_case() {
        // A foreign realm's users, by realm.
        let r = rules("RULE:[1:$1@$0](.*@CORP.EXAMPLE.COM)s/@.*// DEFAULT");
        assert_eq!(
            r.short_name("carol@CORP.EXAMPLE.COM").as_deref(),
            Ok("carol")
        );
        // Only the first match without g; every one with it.
        let first = rules("RULE:[1:$1]s/a/x/");
        assert_eq!(first.short_name("banana@R").as_deref(), Ok("bxnana"));
        let all = rules("RULE:[1:$1]s/a/x/g");
        assert_eq!(all.short_name("banana@R").as_deref(), Ok("bxnxnx"));
        // Groups in the replacement, and /L.
        let groups = rules("RULE:[2:$1-$2]s/(.*)-(.*)/$2_$1/ RULE:[1:$1]/L");
        let lower_after = rules("RULE:[1:$1]s/X/y/L");
        assert_eq!(lower_after.short_name("AXB@R").as_deref(), Ok("ayb"));
        assert_eq!(groups.short_name("svc/Host@R").as_deref(), Ok("Host_svc"));
        assert_eq!(groups.short_name("MixedCase@R").as_deref(), Ok("mixedcase"));
        // The match is a whole-string match, as Java's matches().
        let anchored = rules("RULE:[1:$1](ali)");
        assert!(anchored.short_name("alice@R").is_err());
        // The component count must be equal.
        let two = rules("RULE:[2:$1]");
        assert!(two.short_name("alice@R").is_err());
    }

    #[test]
    fn a_non_simple_result_is_an_error_unless_mit() {
        let text = "RULE:[2:$1/$2]";
        let hadoop = rules(text);
        let err = hadoop.short_name("svc/h@R").expect_err("not simple");
        assert!(
            err.starts_with("Non-simple name svc/h after auth_to_local rule"),
            "{err}"
        );
        let mit = AuthToLocal::parse(text, "R", Mechanism::Mit).expect("parse");
        assert_eq!(mit.short_name("svc/h@R").as_deref(), Ok("svc/h"));
    }

    #[test]
    fn malformed_rules_are_named() {
        for bad in [
            "RULE:[x:$1]",
            "RULE:[1$1]",
            "RULE:[1:$1",
            "RULE:[1:$1](unclosed",
            "RULE:[1:$1]s/a/b",
            "RULE:[1:$1]junk",
            "NOTARULE",
            "RULE:[1:$1]([)",
        ] {
            let err = AuthToLocal::parse(bad, "R", Mechanism::Hadoop).expect_err(bad);
            assert!(err.starts_with("Invalid rule:"), "{bad}: {err}");
        }
        // A parameter past the components.
        let r = rules("RULE:[1:$2]");
        let err = r.short_name("a@R").expect_err("index");
        assert!(err.contains("outside of the valid range"), "{err}");
    }

    #[test]
    fn the_default_realm_comes_from_libdefaults() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.conf");
        let b = dir.path().join("b.conf");
        std::fs::write(&a, "[realms]\n default_realm = NOT.THIS\n").expect("write");
        std::fs::write(
            &b,
            "[libdefaults]\n  dns_lookup_kdc = false\n  default_realm = EXAMPLE.COM\n",
        )
        .expect("write");
        let list = format!("{}:{}", a.display(), b.display());
        assert_eq!(
            default_realm_from(Some(&list)).as_deref(),
            Some("EXAMPLE.COM")
        );
        assert_eq!(default_realm_from(Some(&a.display().to_string())), None);
    }
}
