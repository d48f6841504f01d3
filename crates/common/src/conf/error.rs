//! Configuration errors and the [`Origin`] of a configured value.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Resource name used for values set through [`Configuration::set`](super::Configuration::set).
pub const PROGRAMMATIC: &str = "programmatic";

/// Where a configured value came from: a resource (file path, built-in
/// defaults, or "programmatic") and, when known, the line and column of the
/// XML element that set it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    resource: Arc<str>,
    line: Option<u32>,
    column: Option<u32>,
}

impl Origin {
    /// An origin inside a parsed resource.
    pub fn new(resource: impl Into<Arc<str>>, line: u32, column: u32) -> Origin {
        Origin {
            resource: resource.into(),
            line: Some(line),
            column: Some(column),
        }
    }

    /// The origin of values set from code rather than from a file.
    pub fn programmatic() -> Origin {
        Origin {
            resource: Arc::from(PROGRAMMATIC),
            line: None,
            column: None,
        }
    }

    /// The resource name: a file path as given, `<built-in ...>`, or `programmatic`.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// 1-based line of the element that set the value, if known.
    pub fn line(&self) -> Option<u32> {
        self.line
    }

    /// 1-based column of the element that set the value, if known.
    pub fn column(&self) -> Option<u32> {
        self.column
    }

    /// True for values set through [`Configuration::set`](super::Configuration::set).
    pub fn is_programmatic(&self) -> bool {
        self.line.is_none() && &*self.resource == PROGRAMMATIC
    }
}

/// Formats as `resource:line` (the column is left out: a line is what a
/// person looks for when fixing a value).
impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}", self.resource, line),
            None => f.write_str(&self.resource),
        }
    }
}

/// Everything that can go wrong while loading or reading a configuration.
///
/// Messages name the file, line and key when they are known, so they can be
/// shown to an operator as they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfError {
    /// A configuration file exists but could not be read.
    #[error("{}: cannot read configuration file: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The configuration directory given on the command line or in the
    /// environment is missing or not a directory.
    #[error("{}: unusable configuration directory: {reason}", path.display())]
    ConfDir { path: PathBuf, reason: String },

    /// The resource is not well-formed XML.
    #[error("{resource}:{line}:{column}: malformed XML: {message}")]
    Xml {
        resource: String,
        line: u32,
        column: u32,
        message: String,
    },

    /// The resource uses a feature Spindle does not implement (XInclude).
    #[error("{resource}:{line}:{column}: {feature} is not supported; inline the included properties instead")]
    Unsupported {
        resource: String,
        line: u32,
        column: u32,
        feature: String,
    },

    /// A typed getter was asked for a key that is neither configured nor
    /// has a built-in default.
    #[error("property '{key}' is not set and has no default")]
    Missing { key: String },

    /// A configured value cannot be used as asked (not a number, not a
    /// host:port address, out of range, ...). `problem` completes the
    /// sentence "value '...' ...".
    #[error("{origin}: property '{key}': value '{value}' {problem}")]
    InvalidValue {
        origin: Origin,
        key: String,
        value: String,
        problem: String,
    },
}

impl ConfError {
    /// The key the error is about, if it concerns one key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfError::Missing { key } | ConfError::InvalidValue { key, .. } => Some(key),
            _ => None,
        }
    }
}
