//! Hadoop's resource forms in the allocation file: `1024 mb, 2 vcores`,
//! percentages, and `memory-mb=…, vcores=…`.

use spindle_common::Resource;
use spindle_scheduler::ResourceBound;

/// Whether a resource string is a minimum or a maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    /// `minResources`: absolute amounts only; unnamed resources are 0.
    Min,
    /// `maxResources` and `queueMaxResourcesDefault`: unnamed resources
    /// are unbounded (100% in the percentage forms).
    Max,
}

const UNBOUNDED: Resource = Resource {
    memory_mb: i64::MAX,
    vcores: i32::MAX,
};

/// Parses Hadoop's resource forms: `1024 mb, 2 vcores`,
/// `X% memory, Y% cpu`, `50%`, `memory-mb=1024, vcores=2` and
/// `memory-mb=50%, vcores=25%`.
pub(super) fn resource(text: &str, bound: Bound) -> Result<ResourceBound, String> {
    let parsed = if text.contains('=') {
        new_style(text, bound)?
    } else if text.contains('%') {
        let lower = text.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split(',').collect();
        let (memory, vcores) = if parts.len() == 1 {
            let p = percentage(&lower, "")?;
            (p, p)
        } else {
            (percentage(&lower, "memory")?, percentage(&lower, "cpu")?)
        };
        ResourceBound::Percent {
            memory: memory.min(100.0),
            vcores: vcores.min(100.0),
        }
    } else {
        let lower = text.to_ascii_lowercase();
        let memory = amount(&lower, "mb")?;
        let vcores = amount(&lower, "vcores")?;
        ResourceBound::Absolute(Resource::new(memory, vcores_i32(vcores, text)?))
    };
    if bound == Bound::Min && matches!(parsed, ResourceBound::Percent { .. }) {
        return Err(format!(
            "value '{text}': a minimum must be an absolute amount such as \
             '1024 mb, 2 vcores' or 'memory-mb=1024, vcores=2'"
        ));
    }
    Ok(parsed)
}

fn vcores_i32(v: i64, text: &str) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("value '{text}': {v} vcores is out of range"))
}

/// `name=value` pairs, all absolute or all percentages.
fn new_style(text: &str, bound: Bound) -> Result<ResourceBound, String> {
    let invalid = |why: String| format!("invalid resource definition '{text}': {why}");
    let as_percent = text.contains('%');
    let mut memory: Option<f64> = None;
    let mut vcores: Option<f64> = None;
    for item in text.split(',') {
        let parts: Vec<&str> = item.split('=').collect();
        let [name, value] = parts.as_slice() else {
            return Err(invalid(
                "every resource must be of the form name=value".into(),
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        let v = if as_percent {
            percentage(value, "").map_err(|_| {
                invalid(format!(
                    "the values must all be percentages; '{value}' is not a non-negative \
                     number followed by %"
                ))
            })?
        } else {
            let n: i64 = value.parse().map_err(|_| {
                invalid(format!(
                    "the values must all be integers; '{value}' is not one"
                ))
            })?;
            if n < 0 {
                return Err(invalid(format!("{name} must not be negative")));
            }
            n as f64
        };
        let slot = match name {
            "memory-mb" => &mut memory,
            "vcores" => &mut vcores,
            other => {
                return Err(invalid(format!(
                    "the resource name '{other}' is not recognized; Spindle schedules \
                     memory-mb and vcores"
                )))
            }
        };
        *slot = Some(v);
    }
    if as_percent {
        return Ok(ResourceBound::Percent {
            memory: memory.unwrap_or(100.0).min(100.0),
            vcores: vcores.unwrap_or(100.0).min(100.0),
        });
    }
    let missing = match bound {
        Bound::Min => Resource::ZERO,
        Bound::Max => UNBOUNDED,
    };
    let memory_mb = memory.map_or(missing.memory_mb, |m| m as i64);
    let vcores = match vcores {
        Some(v) => vcores_i32(v as i64, text)?,
        None => missing.vcores,
    };
    Ok(ResourceBound::Absolute(Resource::new(memory_mb, vcores)))
}

/// The number written right before `%` (then optional whitespace and
/// `unit`), as a percentage; Hadoop's `(-?\d+(\.\d*)?)\s*%\s*<unit>`.
fn percentage(text: &str, unit: &str) -> Result<f64, String> {
    for (at, _) in text.match_indices('%') {
        let after = text[at + 1..].trim_start();
        if !after.starts_with(unit) {
            continue;
        }
        let Some(number) = number_before(&text[..at], true) else {
            continue;
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("invalid percentage '{number}'"))?;
        if value < 0.0 {
            return Err(format!(
                "invalid percentage in '{text}': a percentage must not be negative"
            ));
        }
        return Ok(value);
    }
    if unit.is_empty() {
        Err(format!("invalid percentage: '{text}'"))
    } else {
        Err(format!("value '{text}': missing resource: {unit}"))
    }
}

/// The integer written right before `unit`; Hadoop's
/// `(-?\d+)(\.\d*)?\s*<unit>` (a fraction is ignored).
fn amount(text: &str, unit: &str) -> Result<i64, String> {
    for (at, _) in text.match_indices(unit) {
        let Some(number) = number_before(&text[..at], true) else {
            continue;
        };
        let whole = number.split('.').next().unwrap_or(number);
        let value: i64 = whole
            .parse()
            .map_err(|_| format!("value '{text}': {whole} {unit} is out of range"))?;
        if value < 0 {
            return Err(format!(
                "value '{text}': invalid value of {unit}: {value}, it must not be negative"
            ));
        }
        return Ok(value);
    }
    Err(format!(
        "value '{text}': missing resource: {unit} (expected e.g. '1024 mb, 2 vcores')"
    ))
}

/// The number (`-?digits(.digits*)?`) that `before` ends with, after
/// trailing whitespace.
fn number_before(before: &str, allow_fraction: bool) -> Option<&str> {
    let trimmed = before.trim_end();
    let bytes = trimmed.as_bytes();
    let mut start = bytes.len();
    while start > 0
        && (bytes[start - 1].is_ascii_digit() || (allow_fraction && bytes[start - 1] == b'.'))
    {
        start -= 1;
    }
    let mut candidate = &trimmed[start..];
    // The number must start with a digit: `.5` is not one.
    while candidate.starts_with('.') {
        candidate = &candidate[1..];
        start += 1;
    }
    if candidate.is_empty() || candidate.matches('.').count() > 1 {
        return None;
    }
    if start > 0 && bytes[start - 1] == b'-' {
        return Some(&trimmed[start - 1..]);
    }
    Some(candidate)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{absolute, percent};
    use super::*;

    #[test]
    fn resource_forms() {
        let max = |t: &str| resource(t, Bound::Max).unwrap_or_else(|e| panic!("{t}: {e}"));
        let min = |t: &str| resource(t, Bound::Min).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(Some(max("1024 mb, 2 vcores")), absolute(1024, 2));
        assert_eq!(Some(max("2vcores,1024MB")), absolute(1024, 2));
        assert_eq!(Some(max("1024.7 mb, 3 vcores")), absolute(1024, 3));
        assert_eq!(Some(max("50%")), percent(50.0, 50.0));
        assert_eq!(Some(max("12.5 %")), percent(12.5, 12.5));
        assert_eq!(Some(max("20% cpu, 30% memory")), percent(30.0, 20.0));
        assert_eq!(Some(max("30.5% memory, 20% cpu")), percent(30.5, 20.0));
        assert_eq!(Some(max("150%")), percent(100.0, 100.0));
        // One percentage without a unit applies to every resource.
        assert_eq!(Some(max("20% cpu")), percent(20.0, 20.0));
        assert_eq!(Some(max("vcores=2, memory-mb=1024")), absolute(1024, 2));
        assert_eq!(Some(max("memory-mb=1024")), absolute(1024, i32::MAX));
        assert_eq!(Some(min("memory-mb=1024")), absolute(1024, 0));
        assert_eq!(Some(max("vcores=50%, memory-mb=25%")), percent(25.0, 50.0));
        assert_eq!(Some(max("vcores=50%")), percent(100.0, 50.0));
        for bad in [
            "",
            "lots",
            "1024 mb",
            "2 vcores",
            "-1024 mb, 2 vcores",
            "-5%",
            "vcores=2, memory-mb",
            "vcores=two",
            "vcores=-2",
            "gpus=1, vcores=2",
            "vcores=50%, memory-mb=1024",
            "1024 mb, 99999999999 vcores",
        ] {
            assert!(resource(bad, Bound::Max).is_err(), "accepted {bad:?}");
        }
        let e = resource("50%", Bound::Min).expect_err("percent minimum");
        assert!(e.contains("absolute amount"), "{e}");
    }
}
