//! Hadoop's `/conf` (`ConfServlet`): the daemon's configuration as XML (by
//! default) or JSON (`format=json`, or an `Accept` preferring it), all of it
//! or one key (`name=`), with sensitive values redacted as Hadoop's
//! `ConfigRedactor` does (`hadoop.security.sensitive-config-keys`).

use regex::Regex;
use serde_json::{json, Value};
use spindle_common::markup;

/// One property as the daemon has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    pub key: String,
    pub value: String,
    pub is_final: bool,
    /// Where it was set (`yarn-site.xml`, `yarn-default.xml`, `programmatic`).
    pub resource: String,
}

/// The default of `hadoop.security.sensitive-config-keys` (Hadoop 3.3).
pub const DEFAULT_SENSITIVE_KEYS: &str = "secret$,password$,ssl.keystore.pass$,\
fs.s3.*[Ss]ecret.?[Kk]ey,fs.s3a.*.server-side-encryption.key,fs.azure.account.key.*,\
credential$,oauth.*secret,oauth.*password,oauth.*token,hadoop.security.sensitive-config-keys";

/// What a redacted value reads.
pub const REDACTED: &str = "<redacted>";

/// Hadoop's `ConfigRedactor`: keys matching (anywhere, as `find`) one of
/// the comma-separated patterns have their values hidden.
pub struct Redactor {
    patterns: Vec<Regex>,
}

impl Redactor {
    /// From the value of `hadoop.security.sensitive-config-keys`; a pattern
    /// that does not compile is left out.
    pub fn new(sensitive_keys: &str) -> Redactor {
        Redactor {
            patterns: sensitive_keys
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .filter_map(|p| Regex::new(p).ok())
                .collect(),
        }
    }

    pub fn is_sensitive(&self, key: &str) -> bool {
        self.patterns.iter().any(|p| p.is_match(key))
    }

    pub fn redact(&self, key: &str, value: &str) -> String {
        if self.is_sensitive(key) {
            REDACTED.to_string()
        } else {
            value.to_string()
        }
    }
}

/// The representation `/conf` answers in: `format` wins, then `Accept`
/// (JSON only when it asks for JSON), else XML. `Err` for an unknown
/// `format` (Hadoop's 400 "Bad format: ...").
pub fn wants_json(format: Option<&str>, accept: Option<&str>) -> Result<bool, String> {
    match format.map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) if f.eq_ignore_ascii_case("json") => Ok(true),
        Some(f) if f.eq_ignore_ascii_case("xml") => Ok(false),
        Some(f) => Err(format!("Bad format: {f}")),
        None => Ok(accept.is_some_and(|a| a.contains("application/json"))),
    }
}

/// `props` (already redacted) in `Configuration.writeXml`'s shape.
pub fn to_xml(props: &[Property]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?><configuration>\n",
    );
    for p in props {
        out.push_str(&format!(
            "<property><name>{}</name><value>{}</value><final>{}</final><source>{}</source></property>\n",
            markup::escape_xml(&p.key),
            markup::escape_xml(&p.value),
            p.is_final,
            markup::escape_xml(&p.resource)
        ));
    }
    out.push_str("</configuration>\n");
    out
}

fn prop_json(p: &Property) -> Value {
    json!({"key": p.key, "value": p.value, "isFinal": p.is_final, "resource": p.resource})
}

/// `Configuration.dumpConfiguration`'s JSON: `{"properties": [...]}`, or
/// for one key `{"property": {...}}`.
pub fn to_json(props: &[Property], one: bool) -> Value {
    if one {
        json!({"property": props.first().map(prop_json)})
    } else {
        json!({"properties": props.iter().map(prop_json).collect::<Vec<_>>()})
    }
}

/// Hadoop's `ConfServlet` answer: the properties `select` gives for the
/// request's `name` (every one when `None`), as JSON or XML by `format`
/// and `Accept`; 400 for an unknown format, 404 (Hadoop's text) when
/// `name` matches nothing.
pub fn respond(
    headers: &axum::http::HeaderMap,
    format: Option<&str>,
    name: Option<&str>,
    select: impl FnOnce(Option<&str>) -> Vec<Property>,
) -> axum::response::Response {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let json = match wants_json(format, accept) {
        Ok(j) => j,
        Err(m) => return (StatusCode::BAD_REQUEST, m).into_response(),
    };
    let name = name.filter(|n| !n.is_empty());
    let props = select(name);
    if let Some(n) = name {
        if props.is_empty() {
            return (StatusCode::NOT_FOUND, format!("Property {n} not found")).into_response();
        }
    }
    if json {
        crate::jmx::json_response(StatusCode::OK, &to_json(&props, name.is_some()))
    } else {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
            to_xml(&props),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_as_hadoop() {
        let r = Redactor::new(DEFAULT_SENSITIVE_KEYS);
        for key in [
            "ssl.server.keystore.password",
            "fs.s3a.secret.key",
            "fs.azure.account.key.acct.blob.core.windows.net",
            "dfs.webhdfs.oauth2.access.token.credential",
            "yarn.my.secret",
            "hadoop.security.sensitive-config-keys",
        ] {
            assert!(r.is_sensitive(key), "{key}");
            assert_eq!(r.redact(key, "x"), REDACTED);
        }
        for key in [
            "yarn.resourcemanager.address",
            "yarn.nodemanager.local-dirs",
            "passwords.file",
        ] {
            assert!(!r.is_sensitive(key), "{key}");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(wants_json(None, None), Ok(false));
        assert_eq!(wants_json(Some("json"), None), Ok(true));
        assert_eq!(wants_json(None, Some("application/json")), Ok(true));
        assert_eq!(wants_json(Some("xml"), Some("application/json")), Ok(false));
        assert!(wants_json(Some("yaml"), None).is_err());
        let p = vec![Property {
            key: "a<b".into(),
            value: "1&2".into(),
            is_final: true,
            resource: "yarn-site.xml".into(),
        }];
        assert!(to_xml(&p).contains(
            "<property><name>a&lt;b</name><value>1&amp;2</value><final>true</final><source>yarn-site.xml</source></property>"
        ));
        assert_eq!(to_json(&p, true)["property"]["isFinal"], true);
        assert_eq!(to_json(&p, false)["properties"][0]["key"], "a<b");
    }
}
