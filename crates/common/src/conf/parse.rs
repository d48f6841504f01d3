//! Parsing of Hadoop configuration resources
//! (`<configuration><property><name/><value/><final/></property>...`).
//!
//! The reader follows Hadoop's own parser where it matters for existing
//! files:
//! * `<property>` elements are taken wherever they appear below the root;
//!   `name`, `value` and `final` may be given as child elements or as
//!   attributes of `<property>` (children win);
//! * `<description>`, `<source>`, `<tag>` and unknown elements are ignored;
//! * the name is trimmed, the value is kept as written (getters trim where
//!   Hadoop does);
//! * in site files an empty `<value></value>` sets nothing (Hadoop treats it
//!   as "no value"), while `final` still applies;
//! * `<xi:include>` is rejected with an error instead of being followed.

use std::sync::Arc;

use roxmltree::{Document, Node, ParsingOptions};

use super::error::{ConfError, Origin};

/// What an element `<value></value>` with no text means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmptyValue {
    /// Hadoop's rule for every resource: no text, no value.
    Unset,
    /// Used for Spindle's built-in defaults, where an empty element
    /// documents that the default is the empty string.
    EmptyString,
}

/// One `<property>` of a resource, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParsedProperty {
    pub(crate) name: String,
    /// `None` when the property carries no value (it may still be final).
    pub(crate) value: Option<String>,
    pub(crate) is_final: bool,
    /// Position of the `<value>` element, or of `<property>` when the value
    /// is an attribute or absent.
    pub(crate) origin: Origin,
}

/// Parses the resource `resource` (a file path or descriptive name used in
/// messages) whose text is `xml`.
pub(crate) fn parse_resource(
    resource: &str,
    xml: &str,
    empty_value: EmptyValue,
) -> Result<Vec<ParsedProperty>, ConfError> {
    let options = ParsingOptions {
        // Some hand-written configuration files carry a DOCTYPE; roxmltree
        // still guards against entity-expansion attacks.
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(xml, options).map_err(|e| xml_error(resource, &e))?;
    let name: Arc<str> = Arc::from(resource);
    let root = doc.root_element();
    if root.tag_name().name() != "configuration" {
        let pos = doc.text_pos_at(root.range().start);
        tracing::warn!(
            "{}:{}: root element is <{}>, expected <configuration>; reading its properties anyway",
            resource,
            pos.row,
            root.tag_name().name()
        );
    }

    let mut properties = Vec::new();
    for node in root.descendants().filter(Node::is_element) {
        match node.tag_name().name() {
            "include" => {
                let pos = doc.text_pos_at(node.range().start);
                return Err(ConfError::Unsupported {
                    resource: resource.to_string(),
                    line: pos.row,
                    column: pos.col,
                    feature: "XInclude (<include>)".to_string(),
                });
            }
            "property" => {
                if let Some(p) = parse_property(&doc, node, &name, empty_value) {
                    properties.push(p);
                }
            }
            _ => {}
        }
    }
    Ok(properties)
}

fn parse_property(
    doc: &Document<'_>,
    node: Node<'_, '_>,
    resource: &Arc<str>,
    empty_value: EmptyValue,
) -> Option<ParsedProperty> {
    let mut name = node
        .attribute("name")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    let mut value = node.attribute("value").map(str::to_string);
    let mut is_final = node.attribute("final").is_some_and(|f| f.trim() == "true");
    let mut value_pos = None;

    for child in node.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "name" => {
                let text = element_text(child);
                let text = text.trim();
                if !text.is_empty() {
                    name = Some(text.to_string());
                }
            }
            "value" => {
                value_pos = Some(child.range().start);
                let text = element_text(child);
                if !text.is_empty() {
                    value = Some(text);
                } else if empty_value == EmptyValue::EmptyString {
                    value = Some(String::new());
                }
            }
            "final" => is_final = element_text(child).trim() == "true",
            _ => {}
        }
    }

    let pos = doc.text_pos_at(value_pos.unwrap_or(node.range().start));
    let origin = Origin::new(Arc::clone(resource), pos.row, pos.col);
    let Some(name) = name else {
        tracing::warn!("{}: <property> without a <name> ignored", origin);
        return None;
    };
    Some(ParsedProperty {
        name,
        value,
        is_final,
        origin,
    })
}

/// All text below `node` (text and CDATA; comments and processing
/// instructions are skipped), concatenated.
fn element_text(node: Node<'_, '_>) -> String {
    node.descendants()
        .filter(Node::is_text)
        .filter_map(|n| n.text())
        .collect()
}

fn xml_error(resource: &str, err: &roxmltree::Error) -> ConfError {
    let pos = err.pos();
    let message = err.to_string();
    // roxmltree ends most messages with " at line:col"; the position is
    // already in front of the message.
    let suffix = format!(" at {pos}");
    let message = message
        .strip_suffix(&suffix)
        .map(str::to_string)
        .unwrap_or(message);
    ConfError::Xml {
        resource: resource.to_string(),
        line: pos.row,
        column: pos.col,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(xml: &str) -> Vec<ParsedProperty> {
        match parse_resource("test.xml", xml, EmptyValue::Unset) {
            Ok(p) => p,
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    #[test]
    fn reads_names_values_final_and_lines() {
        let props = parse(
            "<?xml version=\"1.0\"?>\n\
             <configuration>\n\
             <property>\n\
             <name> a.b </name>\n\
             <value> 1 </value>\n\
             <final>true</final>\n\
             <description>ignored</description>\n\
             <source>ignored</source>\n\
             </property>\n\
             <property><name>c</name><value>x<!-- comment -->y</value></property>\n\
             </configuration>\n",
        );
        assert_eq!(props.len(), 2);
        assert_eq!(props[0].name, "a.b");
        assert_eq!(props[0].value.as_deref(), Some(" 1 "));
        assert!(props[0].is_final);
        assert_eq!(props[0].origin.to_string(), "test.xml:5");
        assert_eq!(props[1].name, "c");
        assert_eq!(props[1].value.as_deref(), Some("xy"));
        assert!(!props[1].is_final);
        assert_eq!(props[1].origin.line(), Some(10));
    }

    #[test]
    fn attributes_and_cdata() {
        let props = parse(
            r#"<configuration>
                 <property name="k1" value="v1" final="true"/>
                 <property><name>k2</name><value><![CDATA[<a&b>]]></value></property>
               </configuration>"#,
        );
        assert_eq!(props[0].name, "k1");
        assert_eq!(props[0].value.as_deref(), Some("v1"));
        assert!(props[0].is_final);
        assert_eq!(props[1].value.as_deref(), Some("<a&b>"));
    }

    #[test]
    fn empty_value_depends_on_mode() {
        let xml = "<configuration><property><name>k</name><value></value><final>true</final></property></configuration>";
        let site = parse(xml);
        assert_eq!(site[0].value, None);
        assert!(site[0].is_final);
        let defaults = match parse_resource("d.xml", xml, EmptyValue::EmptyString) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(defaults[0].value.as_deref(), Some(""));
    }

    #[test]
    fn whitespace_value_is_kept() {
        let props = parse(
            "<configuration><property><name>k</name><value>  </value></property></configuration>",
        );
        assert_eq!(props[0].value.as_deref(), Some("  "));
    }

    #[test]
    fn property_without_name_is_skipped() {
        let props = parse("<configuration><property><value>v</value></property></configuration>");
        assert!(props.is_empty());
    }

    #[test]
    fn syntax_error_names_file_line_and_column() {
        let err = parse_resource(
            "/etc/x/yarn-site.xml",
            "<configuration>\n  <property>\n    <name>a</nam>\n  </property>\n</configuration>\n",
            EmptyValue::Unset,
        )
        .err()
        .map(|e| e.to_string());
        let msg = err.unwrap_or_default();
        assert!(msg.starts_with("/etc/x/yarn-site.xml:3:"), "{msg}");
        assert!(msg.contains("malformed XML"), "{msg}");
        assert!(!msg.ends_with(" at 3:"), "{msg}");
    }

    #[test]
    fn not_xml_at_all() {
        let err = parse_resource("f.xml", "memory=4096\n", EmptyValue::Unset);
        assert!(
            matches!(err, Err(ConfError::Xml { line: 1, .. })),
            "{err:?}"
        );
    }

    #[test]
    fn xinclude_is_rejected() {
        let err = parse_resource(
            "f.xml",
            "<configuration xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n  <xi:include href=\"other.xml\"/>\n</configuration>",
            EmptyValue::Unset,
        );
        match err {
            Err(e @ ConfError::Unsupported { line: 2, .. }) => {
                assert!(e.to_string().contains("XInclude"), "{e}");
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
}
