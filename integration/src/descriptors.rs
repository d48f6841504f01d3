//! Normalized one-line-per-element views of protobuf schemas, used to check Spindle's
//! `.proto` files against the descriptors compiled into the Hadoop client jars.
//!
//! The line format is the one `integration/java/DumpDescriptors.java` prints:
//!
//! ```text
//! message <full message name>
//! field <full message name>.<field> <number> <label> <type> <type name or -> [default=<v>]
//! enum <full enum name>
//! value <full enum name>.<VALUE> <number>
//! service <full service name>
//! rpc <full service name>.<method> <input type> <output type>
//! ```
//!
//! Labels are `optional`, `required` or `repeated`; types are descriptor.proto's names in
//! lower case without `TYPE_`; type names have no leading dot. A declared default is
//! written only when it differs from the implicit one (zero, false, empty, the enum's
//! first value); string and bytes defaults are double-quoted.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Context as _};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};

/// One schema element, and the `.proto` file that declares it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SchemaLine {
    /// The `.proto` file name as compiled (only for messages: files may be split
    /// differently without changing the wire format).
    pub file: String,
    /// The normalized element line.
    pub line: String,
}

/// Parses `DumpDescriptors` output: `<file>\t<line>` per line.
pub fn parse_dump(text: &str) -> anyhow::Result<Vec<SchemaLine>> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let Some((file, line)) = raw.split_once('\t') else {
            bail!("line {} of the descriptor dump has no tab: {raw:?}", n + 1);
        };
        element_key(line).with_context(|| format!("line {} of the descriptor dump", n + 1))?;
        out.push(SchemaLine {
            file: file.to_owned(),
            line: line.to_owned(),
        });
    }
    Ok(out)
}

/// The schema lines of every file in `set`, sorted.
pub fn schema_lines(set: &FileDescriptorSet) -> Vec<SchemaLine> {
    // First value of every enum, for the implicit-default rule.
    let mut first_values = HashMap::new();
    for file in &set.file {
        let package = file.package();
        for e in &file.enum_type {
            record_first_value(&qualify(package, e.name()), e, &mut first_values);
        }
        for m in &file.message_type {
            collect_enums(&qualify(package, m.name()), m, &mut first_values);
        }
    }

    let mut lines = Vec::new();
    for file in &set.file {
        let package = file.package();
        let mut push = |line: String| {
            lines.push(SchemaLine {
                file: file.name().to_owned(),
                line,
            })
        };
        for m in &file.message_type {
            message_lines(&qualify(package, m.name()), m, &first_values, &mut push);
        }
        for e in &file.enum_type {
            enum_lines(&qualify(package, e.name()), e, &mut push);
        }
        for s in &file.service {
            let service = qualify(package, s.name());
            push(format!("service {service}"));
            for m in &s.method {
                push(format!(
                    "rpc {service}.{} {} {}",
                    m.name(),
                    strip_dot(m.input_type()),
                    strip_dot(m.output_type())
                ));
            }
        }
    }
    lines.sort();
    lines
}

fn qualify(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

fn strip_dot(name: &str) -> &str {
    name.strip_prefix('.').unwrap_or(name)
}

fn record_first_value(full: &str, e: &EnumDescriptorProto, out: &mut HashMap<String, String>) {
    if let Some(v) = e.value.first() {
        out.insert(full.to_owned(), v.name().to_owned());
    }
}

fn collect_enums(scope: &str, m: &DescriptorProto, out: &mut HashMap<String, String>) {
    for e in &m.enum_type {
        record_first_value(&qualify(scope, e.name()), e, out);
    }
    for nested in &m.nested_type {
        collect_enums(&qualify(scope, nested.name()), nested, out);
    }
}

fn message_lines(
    full: &str,
    m: &DescriptorProto,
    first_values: &HashMap<String, String>,
    push: &mut impl FnMut(String),
) {
    push(format!("message {full}"));
    for f in &m.field {
        let ty = f.r#type();
        let type_name = if f.type_name().is_empty() {
            "-"
        } else {
            strip_dot(f.type_name())
        };
        let mut line = format!(
            "field {full}.{} {} {} {} {type_name}",
            f.name(),
            f.number(),
            label_name(f.label()),
            type_label(ty)
        );
        if let Some(default) = f.default_value.as_deref() {
            let implicit = match ty {
                Type::Bool => default == "false",
                Type::String | Type::Bytes => default.is_empty(),
                Type::Enum => first_values.get(type_name).is_some_and(|v| v == default),
                Type::Float | Type::Double => default.parse::<f64>().is_ok_and(|v| v == 0.0),
                Type::Group | Type::Message => false,
                _ => default == "0" || default == "-0",
            };
            if !implicit {
                if matches!(ty, Type::String | Type::Bytes) {
                    line.push_str(&format!(" default=\"{default}\""));
                } else {
                    line.push_str(&format!(" default={default}"));
                }
            }
        }
        push(line);
    }
    for nested in &m.nested_type {
        message_lines(&qualify(full, nested.name()), nested, first_values, push);
    }
    for e in &m.enum_type {
        enum_lines(&qualify(full, e.name()), e, push);
    }
}

fn enum_lines(full: &str, e: &EnumDescriptorProto, push: &mut impl FnMut(String)) {
    push(format!("enum {full}"));
    for v in &e.value {
        push(format!("value {full}.{} {}", v.name(), v.number()));
    }
}

fn label_name(label: Label) -> &'static str {
    match label {
        Label::Required => "required",
        Label::Repeated => "repeated",
        Label::Optional => "optional",
    }
}

fn type_label(ty: Type) -> String {
    ty.as_str_name()
        .trim_start_matches("TYPE_")
        .to_ascii_lowercase()
}

/// The identity of an element line, so that a changed field shows up as one
/// difference rather than as one missing and one extra line. Fields are identified by
/// message and number (the wire identity); everything else by kind and name.
pub fn element_key(line: &str) -> anyhow::Result<String> {
    let mut tokens = line.split(' ');
    let (Some(kind), Some(name)) = (tokens.next(), tokens.next()) else {
        bail!("malformed schema line {line:?}");
    };
    match kind {
        "field" => {
            let number = tokens
                .next()
                .with_context(|| format!("field line without a number: {line:?}"))?;
            let (message, _) = name
                .rsplit_once('.')
                .with_context(|| format!("field name without a message: {line:?}"))?;
            Ok(format!("field {message} #{number}"))
        }
        "message" | "enum" | "value" | "service" | "rpc" => Ok(format!("{kind} {name}")),
        other => bail!("unknown element kind {other:?} in {line:?}"),
    }
}

/// Every element of `hadoop` that `ours` lacks or declares differently, as readable
/// problem lines (empty when `ours` covers `hadoop`). Elements only `ours` has are
/// fine: newer Hadoop releases add fields and messages.
pub fn missing_or_different(
    hadoop: &[SchemaLine],
    ours: &[SchemaLine],
) -> anyhow::Result<Vec<String>> {
    let mut ours_by_key: BTreeMap<String, &SchemaLine> = BTreeMap::new();
    for l in ours {
        ours_by_key.insert(element_key(&l.line)?, l);
    }
    let mut problems = Vec::new();
    for h in hadoop {
        let key = element_key(&h.line)?;
        match ours_by_key.get(&key) {
            Some(o) if o.line == h.line => {}
            Some(o) => problems.push(format!(
                "DIFFERS  {key}\n    hadoop ({}): {}\n    ours   ({}): {}",
                h.file, h.line, o.file, o.line
            )),
            None => problems.push(format!("MISSING  {}  [hadoop file {}]", h.line, h.file)),
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::{
        EnumValueDescriptorProto, FieldDescriptorProto, FileDescriptorProto, MethodDescriptorProto,
        ServiceDescriptorProto,
    };

    fn field(
        name: &str,
        number: i32,
        label: Label,
        ty: Type,
        type_name: Option<&str>,
        default: Option<&str>,
    ) -> FieldDescriptorProto {
        FieldDescriptorProto {
            name: Some(name.into()),
            number: Some(number),
            label: Some(label as i32),
            r#type: Some(ty as i32),
            type_name: type_name.map(Into::into),
            default_value: default.map(Into::into),
            ..Default::default()
        }
    }

    fn sample() -> FileDescriptorSet {
        let state = EnumDescriptorProto {
            name: Some("StateProto".into()),
            value: vec![
                EnumValueDescriptorProto {
                    name: Some("S_NEW".into()),
                    number: Some(1),
                    ..Default::default()
                },
                EnumValueDescriptorProto {
                    name: Some("S_DONE".into()),
                    number: Some(2),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let inner = DescriptorProto {
            name: Some("Inner".into()),
            field: vec![field(
                "x",
                1,
                Label::Required,
                Type::Sint32,
                None,
                Some("-1"),
            )],
            ..Default::default()
        };
        let outer = DescriptorProto {
            name: Some("OuterProto".into()),
            field: vec![
                field(
                    "state",
                    1,
                    Label::Optional,
                    Type::Enum,
                    Some(".p.StateProto"),
                    Some("S_NEW"),
                ),
                field(
                    "later",
                    2,
                    Label::Optional,
                    Type::Enum,
                    Some(".p.StateProto"),
                    Some("S_DONE"),
                ),
                field(
                    "inner",
                    3,
                    Label::Repeated,
                    Type::Message,
                    Some(".p.OuterProto.Inner"),
                    None,
                ),
                field("name", 4, Label::Optional, Type::String, None, Some("N/A")),
                field("flag", 5, Label::Optional, Type::Bool, None, Some("false")),
                field("count", 6, Label::Optional, Type::Int64, None, Some("0")),
            ],
            nested_type: vec![inner],
            ..Default::default()
        };
        let service = ServiceDescriptorProto {
            name: Some("Svc".into()),
            method: vec![MethodDescriptorProto {
                name: Some("call".into()),
                input_type: Some(".p.OuterProto".into()),
                output_type: Some(".p.OuterProto.Inner".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        FileDescriptorSet {
            file: vec![FileDescriptorProto {
                name: Some("p.proto".into()),
                package: Some("p".into()),
                message_type: vec![outer],
                enum_type: vec![state],
                service: vec![service],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn renders_the_dump_format() {
        let lines: Vec<String> = schema_lines(&sample())
            .into_iter()
            .map(|l| l.line)
            .collect();
        let expected = [
            "enum p.StateProto",
            "field p.OuterProto.count 6 optional int64 -",
            "field p.OuterProto.flag 5 optional bool -",
            "field p.OuterProto.inner 3 repeated message p.OuterProto.Inner",
            "field p.OuterProto.later 2 optional enum p.StateProto default=S_DONE",
            "field p.OuterProto.name 4 optional string - default=\"N/A\"",
            "field p.OuterProto.state 1 optional enum p.StateProto",
            "field p.OuterProto.Inner.x 1 required sint32 - default=-1",
            "message p.OuterProto",
            "message p.OuterProto.Inner",
            "rpc p.Svc.call p.OuterProto p.OuterProto.Inner",
            "service p.Svc",
            "value p.StateProto.S_DONE 2",
            "value p.StateProto.S_NEW 1",
        ];
        let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(lines, expected);
    }

    #[test]
    fn reports_missing_and_different_elements() -> anyhow::Result<()> {
        let ours = schema_lines(&sample());
        let hadoop = parse_dump(
            "p.proto\tfield p.OuterProto.count 6 optional int64 -\n\
             p.proto\tfield p.OuterProto.flag 5 required bool -\n\
             p.proto\tvalue p.StateProto.S_GONE 3\n\
             p.proto\tmessage p.OuterProto\n",
        )?;
        let problems = missing_or_different(&hadoop, &ours)?;
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].starts_with("DIFFERS  field p.OuterProto #5"));
        assert!(problems[1].starts_with("MISSING  value p.StateProto.S_GONE 3"));
        Ok(())
    }

    #[test]
    fn dump_lines_must_be_well_formed() {
        assert!(parse_dump("no tab here\n").is_err());
        assert!(parse_dump("f.proto\tbogus x\n").is_err());
        assert!(parse_dump("f.proto\tfield NoDot 1 optional int32 -\n").is_err());
    }
}
