//! Bounds on what peers send the RM and on what the RM keeps of it, so that
//! no submission or AM can make the RM's memory, or its answers to everyone
//! else, grow without end.
//!
//! Hadoop's own limits, with its keys and defaults (read at start-up):
//!
//! - `yarn.resourcemanager.application.max-tags` (10) and
//!   `yarn.resourcemanager.application.max-tag.length` (100): a submission
//!   with more or longer tags, or a tag that is not printable ASCII, is refused
//!   with Hadoop's messages (`ClientRMService.checkTags`);
//! - `yarn.resourcemanager.delegation-token.max-conf-size-bytes` (12800): the
//!   launch context's `tokens_conf`;
//! - the application type is cut to [`APPLICATION_TYPE_LENGTH`] characters
//!   (`YarnConfiguration.APPLICATION_TYPE_LENGTH`), not refused;
//! - `yarn.app.attempt.diagnostics.limit.kc` (64): attempt and application
//!   diagnostics keep their last `64 × 1024` characters behind Hadoop's
//!   `BoundedAppender` header.
//!
//! Spindle's own, where Hadoop has none (a submission past one is refused
//! with a YarnException naming the field, its size and the limit):
//! [`MAX_APPLICATION_NAME_CHARS`], [`MAX_QUEUE_NAME_CHARS`],
//! [`MAX_USER_NAME_CHARS`], [`MAX_ENVIRONMENT_BYTES`], [`MAX_COMMAND_BYTES`],
//! [`MAX_LOCAL_RESOURCES`], [`MAX_LAUNCH_CONTEXT_BYTES`]; an AM's host and
//! tracking URL are bounded by [`MAX_AM_HOST_CHARS`] and
//! [`MAX_TRACKING_URL_CHARS`]. A reply that lists applications is kept
//! under the client's `ipc.maximum.response.length` as
//! `client_service::fit_reports` describes.

use spindle_common::conf::{ConfError, Configuration};

use crate::model::launch::AmLaunchContext;
use crate::model::submission::Submission;

/// Hadoop's `YarnConfiguration.APPLICATION_TYPE_LENGTH`: longer types are cut.
pub const APPLICATION_TYPE_LENGTH: usize = 20;
/// Application names (characters).
pub const MAX_APPLICATION_NAME_CHARS: usize = 4096;
/// The queue a submission names (characters).
pub const MAX_QUEUE_NAME_CHARS: usize = 1024;
/// The submitting user's name (characters; SIMPLE authentication lets the
/// client choose it).
pub const MAX_USER_NAME_CHARS: usize = 256;
/// The AM's environment: every name and value together (bytes).
pub const MAX_ENVIRONMENT_BYTES: usize = 1 << 20;
/// The AM's command line: every argument together (bytes).
pub const MAX_COMMAND_BYTES: usize = 1 << 20;
/// Local resources of the AM's launch context.
pub const MAX_LOCAL_RESOURCES: usize = 10_000;
/// The whole AM launch context as submitted, encoded (bytes): what the RM
/// keeps for each application until it ends.
pub const MAX_LAUNCH_CONTEXT_BYTES: usize = 16 << 20;
/// The host an AM registers with (characters).
pub const MAX_AM_HOST_CHARS: usize = 1024;
/// The tracking URL an AM registers or unregisters with (characters).
pub const MAX_TRACKING_URL_CHARS: usize = 4096;

/// A submission (or AM call) field past its bound, in domain terms; the
/// message is `convert::refusal_to_rpc`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitExceeded {
    /// Hadoop: more tags than `yarn.resourcemanager.application.max-tags`.
    TooManyTags { max: usize },
    /// Hadoop: a tag longer than `…application.max-tag.length` (the tag is
    /// kept only up to [`SHOWN_TAG_CHARS`] for the message).
    TagTooLong { tag: String, max: usize },
    /// Hadoop: a tag with characters other than printable ASCII.
    TagNotAscii { tag: String },
    /// Hadoop: `tokens_conf` above `…delegation-token.max-conf-size-bytes`.
    TokensConfTooLarge { max: usize, actual: usize },
    /// One of Spindle's own bounds.
    Field {
        field: &'static str,
        unit: &'static str,
        max: usize,
        actual: usize,
    },
}

/// How much of an oversized tag a refusal quotes.
pub const SHOWN_TAG_CHARS: usize = 200;

/// The limits read from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// `yarn.resourcemanager.application.max-tags`.
    pub max_tags: usize,
    /// `yarn.resourcemanager.application.max-tag.length`.
    pub max_tag_length: usize,
    /// `yarn.resourcemanager.delegation-token.max-conf-size-bytes`.
    pub max_tokens_conf_bytes: usize,
    /// `yarn.app.attempt.diagnostics.limit.kc` × 1024.
    pub diagnostics_chars: usize,
}

impl Default for Limits {
    /// Hadoop's defaults.
    fn default() -> Limits {
        Limits {
            max_tags: 10,
            max_tag_length: 100,
            max_tokens_conf_bytes: 12_800,
            diagnostics_chars: 64 * 1024,
        }
    }
}

/// `yarn.cluster.max-application-priority`: the highest application
/// priority (default 0), read at start-up and by `refreshClusterMaxPriority`.
/// The error names the key and the value.
pub fn max_application_priority(conf: &Configuration) -> Result<i32, String> {
    let key = spindle_common::conf::keys::YARN_CLUSTER_MAX_APPLICATION_PRIORITY;
    let v = conf.get_i64(key).map_err(|e| e.to_string())?;
    i32::try_from(v).map_err(|_| format!("{key} = {v} is not a 32-bit integer"))
}

/// `key` as a non-negative count, Hadoop's `default` when unset.
fn count(conf: &Configuration, key: &str, default: usize) -> Result<usize, ConfError> {
    if conf.get_trimmed(key).is_none_or(|v| v.is_empty()) {
        return Ok(default);
    }
    Ok(conf.get_i64(key)?.max(0) as usize)
}

impl Limits {
    pub fn from_conf(conf: &Configuration) -> Result<Limits, ConfError> {
        let d = Limits::default();
        Ok(Limits {
            max_tags: count(
                conf,
                "yarn.resourcemanager.application.max-tags",
                d.max_tags,
            )?,
            max_tag_length: count(
                conf,
                "yarn.resourcemanager.application.max-tag.length",
                d.max_tag_length,
            )?,
            max_tokens_conf_bytes: count(
                conf,
                "yarn.resourcemanager.delegation-token.max-conf-size-bytes",
                d.max_tokens_conf_bytes,
            )?,
            diagnostics_chars: count(conf, "yarn.app.attempt.diagnostics.limit.kc", 64)?
                .saturating_mul(1024),
        })
    }

    /// Checks a submission by `user` against every bound; the first field
    /// past its bound is the refusal. Tags come first, as in Hadoop.
    pub fn check_submission(
        &self,
        sub: &Submission,
        user: &str,
        launch: &AmLaunchContext,
    ) -> Result<(), LimitExceeded> {
        if sub.tags.len() > self.max_tags {
            return Err(LimitExceeded::TooManyTags { max: self.max_tags });
        }
        for tag in &sub.tags {
            if tag.chars().count() > self.max_tag_length {
                return Err(LimitExceeded::TagTooLong {
                    tag: tag.chars().take(SHOWN_TAG_CHARS).collect(),
                    max: self.max_tag_length,
                });
            }
            // commons-lang3 isAsciiPrintable: 32..=126 only.
            if !tag.chars().all(|c| (' '..='~').contains(&c)) {
                return Err(LimitExceeded::TagNotAscii { tag: tag.clone() });
            }
        }
        let sizes = launch.sizes;
        if sizes.tokens_conf_bytes > self.max_tokens_conf_bytes {
            return Err(LimitExceeded::TokensConfTooLarge {
                max: self.max_tokens_conf_bytes,
                actual: sizes.tokens_conf_bytes,
            });
        }
        let chars = |s: &str| s.chars().count();
        let environment_bytes: usize = launch
            .environment
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum();
        let checks = [
            (
                "application name",
                "characters",
                MAX_APPLICATION_NAME_CHARS,
                chars(&sub.name),
            ),
            (
                "queue",
                "characters",
                MAX_QUEUE_NAME_CHARS,
                chars(&sub.queue),
            ),
            ("user name", "characters", MAX_USER_NAME_CHARS, chars(user)),
            (
                "AM environment",
                "bytes",
                MAX_ENVIRONMENT_BYTES,
                environment_bytes,
            ),
            (
                "AM command",
                "bytes",
                MAX_COMMAND_BYTES,
                sizes.command_bytes,
            ),
            (
                "AM local resources",
                "entries",
                MAX_LOCAL_RESOURCES,
                sizes.local_resources,
            ),
            (
                "AM launch context",
                "bytes",
                MAX_LAUNCH_CONTEXT_BYTES,
                sizes.encoded_bytes,
            ),
        ];
        for (field, unit, max, actual) in checks {
            if actual > max {
                return Err(LimitExceeded::Field {
                    field,
                    unit,
                    max,
                    actual,
                });
            }
        }
        Ok(())
    }

    /// Diagnostics as Hadoop's `BoundedAppender` keeps them: the last
    /// `diagnostics_chars` characters behind a header that says so.
    pub fn bound_diagnostics(&self, diagnostics: String) -> String {
        let limit = self.diagnostics_chars;
        let total = diagnostics.chars().count();
        if total <= limit {
            return diagnostics;
        }
        let tail: String = diagnostics.chars().skip(total - limit).collect();
        format!(
            "Diagnostic messages truncated, showing last {limit} chars out of {total}:\n...{tail}"
        )
    }
}

/// An AM's host and tracking URL against their bounds.
pub fn check_am_address(host: &str, tracking_url: &str) -> Result<(), LimitExceeded> {
    for (field, max, value) in [
        ("AM host", MAX_AM_HOST_CHARS, host),
        ("tracking URL", MAX_TRACKING_URL_CHARS, tracking_url),
    ] {
        let actual = value.chars().count();
        if actual > max {
            return Err(LimitExceeded::Field {
                field,
                unit: "characters",
                max,
                actual,
            });
        }
    }
    Ok(())
}

/// `application_type` as Hadoop keeps it: at most
/// [`APPLICATION_TYPE_LENGTH`] characters.
pub fn cut_application_type(app_type: &mut String) {
    if let Some((i, _)) = app_type.char_indices().nth(APPLICATION_TYPE_LENGTH) {
        app_type.truncate(i);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use spindle_common::ids::ApplicationId;
    use spindle_common::resource::Resource;

    use super::*;

    fn sub() -> Submission {
        Submission {
            id: ApplicationId::new(1, 1),
            name: "job".into(),
            queue: "default".into(),
            app_type: "YARN".into(),
            tags: BTreeSet::new(),
            priority: None,
            am_resource: Resource::new(1024, 1),
            max_attempts: 1,
            unmanaged_am: false,
            keep_containers: false,
        }
    }

    fn check(sub: &Submission) -> Result<(), LimitExceeded> {
        Limits::default().check_submission(sub, "bob", &AmLaunchContext::default())
    }

    #[test]
    fn hadoop_tag_limits() {
        let mut s = sub();
        s.tags = (0..10).map(|i| format!("t{i}")).collect();
        assert_eq!(check(&s), Ok(()));
        s.tags.insert("t10".into());
        assert_eq!(check(&s), Err(LimitExceeded::TooManyTags { max: 10 }));
        let mut s = sub();
        s.tags.insert("x".repeat(101));
        assert_eq!(
            check(&s),
            Err(LimitExceeded::TagTooLong {
                tag: "x".repeat(101),
                max: 100
            })
        );
        let mut s = sub();
        s.tags.insert("é".into());
        assert!(matches!(check(&s), Err(LimitExceeded::TagNotAscii { .. })));
        let mut s = sub();
        s.tags.insert("x".repeat(1 << 20));
        match check(&s) {
            Err(LimitExceeded::TagTooLong { tag, .. }) => assert_eq!(tag.len(), SHOWN_TAG_CHARS),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn spindle_field_limits_name_the_field() {
        let mut s = sub();
        s.name = "n".repeat(MAX_APPLICATION_NAME_CHARS);
        assert_eq!(check(&s), Ok(()));
        s.name.push('n');
        assert_eq!(
            check(&s),
            Err(LimitExceeded::Field {
                field: "application name",
                unit: "characters",
                max: MAX_APPLICATION_NAME_CHARS,
                actual: MAX_APPLICATION_NAME_CHARS + 1
            })
        );
        let s = sub();
        let long_user = "u".repeat(MAX_USER_NAME_CHARS + 1);
        assert!(matches!(
            Limits::default().check_submission(&s, &long_user, &AmLaunchContext::default()),
            Err(LimitExceeded::Field {
                field: "user name",
                ..
            })
        ));
        let launch = AmLaunchContext {
            environment: vec![("BIG".into(), "v".repeat(MAX_ENVIRONMENT_BYTES))],
            ..Default::default()
        };
        assert!(matches!(
            Limits::default().check_submission(&s, "bob", &launch),
            Err(LimitExceeded::Field {
                field: "AM environment",
                ..
            })
        ));
        let mut launch = AmLaunchContext::default();
        launch.sizes.local_resources = MAX_LOCAL_RESOURCES + 1;
        assert!(matches!(
            Limits::default().check_submission(&s, "bob", &launch),
            Err(LimitExceeded::Field {
                field: "AM local resources",
                ..
            })
        ));
        launch.sizes.local_resources = 0;
        launch.sizes.tokens_conf_bytes = 12_801;
        assert_eq!(
            Limits::default().check_submission(&s, "bob", &launch),
            Err(LimitExceeded::TokensConfTooLarge {
                max: 12_800,
                actual: 12_801
            })
        );
    }

    #[test]
    fn diagnostics_keep_their_tail_as_hadoop_does() {
        let limits = Limits {
            diagnostics_chars: 4,
            ..Limits::default()
        };
        assert_eq!(limits.bound_diagnostics("abcd".into()), "abcd");
        assert_eq!(
            limits.bound_diagnostics("abcdefgh".into()),
            "Diagnostic messages truncated, showing last 4 chars out of 8:\n...efgh"
        );
        assert_eq!(Limits::default().diagnostics_chars, 65_536);
    }

    #[test]
    fn application_types_are_cut_at_twenty_characters() {
        let mut t = "MAPREDUCE-WITH-A-VERY-LONG-TYPE".to_string();
        cut_application_type(&mut t);
        assert_eq!(t, "MAPREDUCE-WITH-A-VER");
        let mut short = "SPARK".to_string();
        cut_application_type(&mut short);
        assert_eq!(short, "SPARK");
    }

    #[test]
    fn keys_are_read_with_hadoop_defaults() {
        let mut conf = Configuration::empty();
        assert_eq!(Limits::from_conf(&conf).ok(), Some(Limits::default()));
        conf.set("yarn.resourcemanager.application.max-tags", "3");
        conf.set("yarn.app.attempt.diagnostics.limit.kc", "1");
        let l = Limits::from_conf(&conf).unwrap_or_default();
        assert_eq!((l.max_tags, l.diagnostics_chars), (3, 1024));
        conf.set("yarn.resourcemanager.application.max-tags", "many");
        assert!(Limits::from_conf(&conf).is_err());
    }

    /// `yarn.cluster.max-application-priority` is read at start-up (0 by
    /// default, as in Hadoop); a value that is not an int stops start-up.
    #[test]
    fn max_application_priority_key() {
        let mut conf = Configuration::with_defaults();
        assert_eq!(max_application_priority(&conf).ok(), Some(0));
        conf.set("yarn.cluster.max-application-priority", "10");
        assert_eq!(max_application_priority(&conf).ok(), Some(10));
        conf.set("yarn.cluster.max-application-priority", "99999999999");
        let msg = max_application_priority(&conf)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("yarn.cluster.max-application-priority"),
            "{msg}"
        );
    }
}
