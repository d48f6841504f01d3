//! Replies in the representation the client asked for, as Hadoop's
//! Jersey resources give them: JSON unless the `Accept` header prefers
//! XML; the XML is what JAXB writes for the same DAO.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use spindle_common::markup;

/// The representation of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Xml,
}

impl Format {
    /// What the request's `Accept` header prefers among the two. Hadoop's
    /// resources list JSON first, so JSON wins ties and a missing or
    /// wildcard `Accept`; a browser's (`application/xml;q=0.9, */*;q=0.8`)
    /// gets XML, as it does from Hadoop.
    pub fn of(headers: &HeaderMap) -> Format {
        let mut json = 0.0_f32;
        let mut xml = 0.0_f32;
        for value in headers.get_all(header::ACCEPT) {
            let Ok(text) = value.to_str() else { continue };
            for item in text.split(',') {
                let mut parts = item.split(';');
                let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
                let q = parts
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                match media.as_str() {
                    "application/json" => json = json.max(q),
                    "application/xml" | "text/xml" => xml = xml.max(q),
                    _ => {}
                }
            }
        }
        if xml > json {
            Format::Xml
        } else {
            Format::Json
        }
    }

    /// The `Content-Type` of a reply in this format.
    pub fn content_type(self) -> HeaderValue {
        match self {
            Format::Json => HeaderValue::from_static("application/json;charset=utf-8"),
            Format::Xml => HeaderValue::from_static("application/xml;charset=utf-8"),
        }
    }

    /// `body` (a JSON object with one member, the DAO's root element) in
    /// this format.
    pub fn render(self, body: &Value) -> String {
        match self {
            Format::Json => body.to_string(),
            Format::Xml => json_to_xml(body),
        }
    }
}

/// A 200 reply of `body` (an object with one member named after the root
/// element, e.g. `{"clusterInfo": {...}}`) in the format `headers` ask for.
pub fn reply(headers: &HeaderMap, body: &Value) -> Response {
    respond(StatusCode::OK, Format::of(headers), body)
}

pub(crate) fn respond(status: StatusCode, format: Format, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, format.content_type())],
        format.render(body),
    )
        .into_response()
}

/// The XML JAXB writes for a DAO whose JSON form is `body`: each member an
/// element, an array as the element repeated, `null` left out.
pub fn json_to_xml(body: &Value) -> String {
    let mut out = String::from(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#);
    match body {
        Value::Object(members) => {
            for (name, value) in members {
                element(&mut out, name, value);
            }
        }
        other => element(&mut out, "value", other),
    }
    out
}

fn element(out: &mut String, name: &str, value: &Value) {
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for item in items {
                element(out, name, item);
            }
        }
        Value::Object(members) => {
            open(out, name);
            for (child, v) in members {
                element(out, child, v);
            }
            close(out, name);
        }
        Value::String(s) => {
            open(out, name);
            markup::escape_xml_into(out, s);
            close(out, name);
        }
        Value::Bool(_) | Value::Number(_) => {
            open(out, name);
            out.push_str(&value.to_string());
            close(out, name);
        }
    }
}

fn open(out: &mut String, name: &str) {
    out.push('<');
    out.push_str(name);
    out.push('>');
}

fn close(out: &mut String, name: &str) {
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
        h
    }

    #[test]
    fn json_unless_xml_is_preferred() {
        assert_eq!(Format::of(&HeaderMap::new()), Format::Json);
        assert_eq!(Format::of(&accept("*/*")), Format::Json);
        assert_eq!(Format::of(&accept("application/xml")), Format::Xml);
        assert_eq!(
            Format::of(&accept("application/json, application/xml")),
            Format::Json
        );
        assert_eq!(
            Format::of(&accept(
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
            )),
            Format::Xml
        );
        assert_eq!(
            Format::of(&accept("application/xml;q=0.5, application/json")),
            Format::Json
        );
    }

    #[test]
    fn xml_repeats_arrays_and_escapes_text() {
        let body = json!({"apps": {"app": [
            {"id": "application_1_0001", "name": "a<b>&\"c\"", "progress": 10.5},
            {"id": "application_1_0002", "diagnostics": null, "ok": true}
        ]}});
        assert_eq!(
            json_to_xml(&body),
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><apps><app><id>application_1_0001</id><name>a&lt;b&gt;&amp;&quot;c&quot;</name><progress>10.5</progress></app><app><id>application_1_0002</id><ok>true</ok></app></apps>"#
        );
        assert!(json_to_xml(&json!({"a": "x\u{1}y"})).contains("x\\u0001y"));
    }
}
