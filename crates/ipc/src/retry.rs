//! Hadoop's retry rules, as data.
//!
//! A Hadoop client decides what to do after a failed call in two layers, and
//! [`crate::RpcProxy`] has the same two:
//!
//! - the connection layer (`org.apache.hadoop.ipc.Client`): while a TCP
//!   connection cannot be opened, it tries again up to
//!   `ipc.client.connect.max.retries` times, `ipc.client.connect.retry.interval`
//!   apart, and up to `ipc.client.connect.max.retries.on.timeouts` times after
//!   connect timeouts ([`ConnectRetry`]);
//! - the call layer (`org.apache.hadoop.io.retry.RetryInvocationHandler`): a
//!   [`RetryPolicy`] looks at what went wrong ([`Failure`]), at how often the
//!   call was retried and failed over, and at whether the method may run twice
//!   ([`Idempotence`]), and answers with a [`Decision`]: fail, retry the same
//!   server, or fail over to the next one and retry.
//!
//! The policies are those of Hadoop's `RetryPolicies` that YARN's proxies
//! build (`RMProxy`, `ServerRMProxy`, `NMProxy`; see [`crate::yarn_conf`]).

use std::time::Duration;

use rand::Rng;

use crate::error::{class, CloseCause, IpcError};

/// What went wrong in one attempt, named after the Java exception Hadoop's
/// client would have seen: Hadoop's retry policies decide by exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// No connection: refused, unreachable, unknown host
    /// (`ConnectException`, `NoRouteToHostException`, `UnknownHostException`).
    /// The server never saw the call.
    Connect,
    /// No connection within the connect timeout
    /// (`org.apache.hadoop.net.ConnectTimeoutException`). The server never saw
    /// the call.
    ConnectTimeout,
    /// The server ended the stream while the call waited (`EOFException`).
    /// Hadoop treats this like a connection failure: the server went away.
    Eof,
    /// The connection broke while the call waited (`SocketException`): the
    /// server may have acted on the call.
    Socket,
    /// No answer within the call timeout (`SocketTimeoutException`): the server
    /// may have acted on the call.
    CallTimeout,
    /// `org.apache.hadoop.ipc.StandbyException`: the server is not the active one.
    Standby,
    /// `org.apache.hadoop.ipc.RetriableException`: the server asks to be asked again.
    Retriable,
    /// Authentication failed or access was denied (a SASL failure,
    /// `AccessControlException`, `SecretManager$InvalidToken`).
    Denied,
    /// The server answered with another exception.
    Remote,
    /// The peer sent something this client cannot read.
    Protocol,
}

/// `SecretManager$InvalidToken`, which Hadoop's policies never retry.
const INVALID_TOKEN: &str = "org.apache.hadoop.security.token.SecretManager$InvalidToken";

impl Failure {
    /// Classifies a failed attempt.
    pub fn of(e: &IpcError) -> Failure {
        match e {
            IpcError::Io { source, .. } => {
                if source.kind() == std::io::ErrorKind::TimedOut {
                    Failure::ConnectTimeout
                } else {
                    Failure::Connect
                }
            }
            IpcError::Closed { cause, .. } => match cause {
                // A call that never left behaves as if the connection had
                // just been refused.
                CloseCause::NotSent => Failure::Connect,
                CloseCause::Eof => Failure::Eof,
                CloseCause::Broken => Failure::Socket,
            },
            IpcError::Timeout { .. } => Failure::CallTimeout,
            IpcError::Protocol { .. } => Failure::Protocol,
            IpcError::Remote { class_name, .. } => match class_name.as_str() {
                class::STANDBY => Failure::Standby,
                class::RETRIABLE => Failure::Retriable,
                class::ACCESS_CONTROL | class::AUTHORIZATION | INVALID_TOKEN => Failure::Denied,
                _ => Failure::Remote,
            },
        }
    }

    /// True when the call may have reached the server and been acted on, so
    /// that only a method safe to run twice may be sent again.
    pub fn maybe_invoked(self) -> bool {
        matches!(self, Failure::Socket | Failure::CallTimeout)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Failure::Connect => "connection failed",
            Failure::ConnectTimeout => "connect timed out",
            Failure::Eof => "connection closed by the server",
            Failure::Socket => "connection broken",
            Failure::CallTimeout => "no answer in time",
            Failure::Standby => "server is standby",
            Failure::Retriable => "server asks to retry",
            Failure::Denied => "access denied",
            Failure::Remote => "remote exception",
            Failure::Protocol => "protocol error",
        })
    }
}

/// What a protocol declares about running one of its methods twice, as
/// Hadoop's `@Idempotent` and `@AtMostOnce` annotations do. A call whose
/// connection broke after it was sent ([`Failure::maybe_invoked`]) is sent
/// again only when it is [`Idempotence::retry_safe`]. Each method of the
/// table ([`crate::methods`]) carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotence {
    /// Hadoop's `@Idempotent`: running it twice has the effect of running it
    /// once.
    Idempotent,
    /// Hadoop's `@AtMostOnce`: the server recognises a repeat and answers it
    /// without acting again (e.g. `allocate` by its response id).
    AtMostOnce,
    /// Neither annotation: never sent again once it may have run.
    NotIdempotent,
}

impl Idempotence {
    /// True when the call may be sent again after it may have reached the
    /// server.
    pub const fn retry_safe(self) -> bool {
        matches!(self, Idempotence::Idempotent | Idempotence::AtMostOnce)
    }
}

/// Connection-level retries, as `org.apache.hadoop.ipc.Client` makes them
/// while opening a connection (before the call-level [`RetryPolicy`] sees a
/// failure). NMProxy, and RMProxy with RM HA, set both counts to 0 so that
/// the call level decides alone (`yarn.client.failover-retries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectRetry {
    /// `ipc.client.connect.max.retries` (10): further attempts after a
    /// refused or unreachable connection.
    pub max_retries: u32,
    /// `ipc.client.connect.retry.interval` (1000 ms): the pause before each.
    pub retry_interval: Duration,
    /// `ipc.client.connect.max.retries.on.timeouts` (45): further attempts
    /// after connect timeouts, without a pause (the timeout was the wait).
    pub max_retries_on_timeouts: u32,
}

impl ConnectRetry {
    /// One connection attempt, no retries.
    pub const NONE: ConnectRetry = ConnectRetry {
        max_retries: 0,
        retry_interval: Duration::ZERO,
        max_retries_on_timeouts: 0,
    };
}

impl Default for ConnectRetry {
    /// Hadoop's defaults (core-default.xml).
    fn default() -> Self {
        ConnectRetry {
            max_retries: 10,
            retry_interval: Duration::from_millis(1000),
            max_retries_on_timeouts: 45,
        }
    }
}

/// The pause before a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// The same pause every time (Hadoop's `...WithFixedSleep` policies).
    Fixed(Duration),
    /// `first`, then twice the previous pause, never more than `max`.
    Doubling { first: Duration, max: Duration },
}

impl Sleep {
    /// The pause before retry number `retries + 1`.
    pub fn before_retry(self, retries: u32) -> Duration {
        match self {
            Sleep::Fixed(d) => d,
            Sleep::Doubling { first, max } => first
                .checked_mul(1u32 << retries.min(20))
                .unwrap_or(max)
                .min(max),
        }
    }
}

/// How long a [`RetryPolicy::OnNetworkFailures`] keeps retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// At most this many retries (`retryUpToMaximumCountWithFixedSleep`).
    Count(u32),
    /// While the next attempt would start within this time of the first
    /// (`retryUpToMaximumTimeWithFixedSleep`). Hadoop turns the time into
    /// `max_time / sleep` retries, which is the same limit when attempts fail
    /// at once; counting the time itself keeps the promise of the setting's
    /// name when attempts are slow (connect timeouts, lost answers).
    Time(Duration),
    /// No limit (`retryForeverWithFixedSleep`: a max-wait of -1).
    Forever,
}

/// Where a call stands when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attempts {
    /// Retries so far, failovers included (Hadoop's `retries` counter).
    pub retries: u32,
    /// Failovers so far.
    pub failovers: u32,
    /// Time since the first attempt started.
    pub elapsed: Duration,
}

/// What a [`RetryPolicy`] answers (Hadoop's `RetryAction`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Give up. The reason is set when retries ran out or were refused for a
    /// failure that is otherwise retried.
    Fail(Option<String>),
    /// Try the same server again after the pause.
    Retry(Duration),
    /// Move to the next server and try again after the pause.
    FailoverAndRetry(Duration),
}

/// A call-level retry policy, one of those Hadoop's YARN proxies build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryPolicy {
    /// `RetryPolicies.TRY_ONCE_THEN_FAIL`.
    TryOnceThenFail,
    /// `RetryPolicies.retryByException(TRY_ONCE_THEN_FAIL, map)`, as RMProxy
    /// (without HA) and NMProxy build it: the failures in `on` are retried
    /// within `limit`, anything else fails at once. Unlike Hadoop's maps, a
    /// failure after which the server may have acted
    /// ([`Failure::maybe_invoked`]) is retried only for a retry-safe
    /// method ([`Idempotence::retry_safe`]), the rule Hadoop applies with HA: a method that must not
    /// run twice never does.
    OnNetworkFailures {
        on: &'static [Failure],
        limit: Limit,
        sleep: Sleep,
    },
    /// `RetryPolicies.FailoverOnNetworkExceptionRetry`, as RMProxy builds it
    /// with RM HA (fallback `TRY_ONCE_THEN_FAIL`):
    /// - fail when `failovers >= max_failovers`, or when the retries on the
    ///   same server (`retries - failovers`) exceed `max_retries`;
    /// - fail on authentication failures and denied access;
    /// - fail over on connection failures, connect timeouts, EOF and
    ///   `StandbyException`: at once the first time, then after
    ///   `sleep_base × 2^failovers` (capped at `sleep_max`) × a random factor
    ///   in [0.5, 1.5);
    /// - retry the same server on `RetriableException`;
    /// - after a broken connection or a lost answer, fail over and retry a
    ///   retry-safe method, and fail any other ("the invoked method is not
    ///   idempotent, and unable to determine whether it was invoked");
    /// - fail on anything else.
    FailoverOnNetworkException {
        max_failovers: u32,
        max_retries: u32,
        sleep_base: Duration,
        sleep_max: Duration,
    },
}

/// The failures RMProxy retries without HA (its exception map: EOF,
/// connect failures and timeouts, `RetriableException`, socket errors and
/// timeouts, `StandbyException`).
pub const RM_PROXY_RETRIED: &[Failure] = &[
    Failure::Eof,
    Failure::Connect,
    Failure::ConnectTimeout,
    Failure::Retriable,
    Failure::Socket,
    Failure::CallTimeout,
    Failure::Standby,
];

/// The failures NMProxy retries (`ServerProxy.createRetryPolicy`: EOF,
/// connect failures and timeouts, `RetriableException`, socket errors; not a
/// lost answer).
pub const NM_PROXY_RETRIED: &[Failure] = &[
    Failure::Eof,
    Failure::Connect,
    Failure::ConnectTimeout,
    Failure::Retriable,
    Failure::Socket,
];

const NOT_IDEMPOTENT: &str =
    "the invoked method is not idempotent, and unable to determine whether it was invoked";

impl RetryPolicy {
    /// Decides after `failure` of a call to a method declared `idempotence`.
    pub fn decide(&self, failure: Failure, idempotence: Idempotence, at: Attempts) -> Decision {
        match self {
            RetryPolicy::TryOnceThenFail => Decision::Fail(None),
            RetryPolicy::OnNetworkFailures { on, limit, sleep } => {
                if !on.contains(&failure) {
                    return Decision::Fail(None);
                }
                if failure.maybe_invoked() && !idempotence.retry_safe() {
                    return Decision::Fail(Some(NOT_IDEMPOTENT.to_string()));
                }
                let pause = sleep.before_retry(at.retries);
                match *limit {
                    Limit::Count(max) if at.retries >= max => {
                        Decision::Fail(Some(format!("gave up after {max} retries")))
                    }
                    Limit::Time(max) if at.elapsed + pause >= max => Decision::Fail(Some(format!(
                        "gave up after {} ms of retrying",
                        max.as_millis()
                    ))),
                    _ => Decision::Retry(pause),
                }
            }
            RetryPolicy::FailoverOnNetworkException {
                max_failovers,
                max_retries,
                sleep_base,
                sleep_max,
            } => {
                if at.failovers >= *max_failovers {
                    return Decision::Fail(Some(format!(
                        "failovers ({}) exceeded maximum allowed ({max_failovers})",
                        at.failovers
                    )));
                }
                let same_server = at.retries.saturating_sub(at.failovers);
                if same_server > *max_retries {
                    return Decision::Fail(Some(format!(
                        "retries ({}) exceeded maximum allowed ({max_retries})",
                        at.retries
                    )));
                }
                let pause = |times: u32| failover_sleep(times, *sleep_base, *sleep_max);
                match failure {
                    Failure::Connect
                    | Failure::ConnectTimeout
                    | Failure::Eof
                    | Failure::Standby => Decision::FailoverAndRetry(pause(at.failovers)),
                    Failure::Retriable => Decision::Retry(pause(at.retries)),
                    Failure::Denied => Decision::Fail(None),
                    Failure::Socket | Failure::CallTimeout if idempotence.retry_safe() => {
                        Decision::FailoverAndRetry(pause(at.retries))
                    }
                    Failure::Socket | Failure::CallTimeout => {
                        Decision::Fail(Some(NOT_IDEMPOTENT.to_string()))
                    }
                    Failure::Remote | Failure::Protocol => Decision::Fail(None),
                }
            }
        }
    }
}

/// `FailoverOnNetworkExceptionRetry.getFailoverOrRetrySleepTime`: nothing the
/// first time, then `base × 2^times` capped at `max`, times a random factor in
/// [0.5, 1.5) so that clients do not come back in step.
fn failover_sleep(times: u32, base: Duration, max: Duration) -> Duration {
    if times == 0 {
        return Duration::ZERO;
    }
    let grown = base
        .checked_mul(1u32 << times.min(20))
        .unwrap_or(max)
        .min(max);
    grown.mul_f64(rand::rng().random_range(0.5..1.5))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY_SAFE: Idempotence = Idempotence::Idempotent;
    const UNSAFE: Idempotence = Idempotence::NotIdempotent;

    fn at(retries: u32, failovers: u32) -> Attempts {
        Attempts {
            retries,
            failovers,
            elapsed: Duration::ZERO,
        }
    }

    fn remote(class_name: &str) -> IpcError {
        IpcError::Remote {
            class_name: class_name.into(),
            message: String::new(),
        }
    }

    #[test]
    fn idempotent_and_at_most_once_methods_may_be_sent_again() {
        assert!(Idempotence::Idempotent.retry_safe());
        assert!(Idempotence::AtMostOnce.retry_safe());
        assert!(!Idempotence::NotIdempotent.retry_safe());
    }

    #[test]
    fn failures_are_named_as_hadoop_sees_them() {
        let closed = |cause| IpcError::Closed {
            addr: "a:1".into(),
            detail: String::new(),
            cause,
        };
        let io = |kind| IpcError::Io {
            addr: "a:1".into(),
            source: std::io::Error::from(kind),
        };
        assert_eq!(
            Failure::of(&io(std::io::ErrorKind::ConnectionRefused)),
            Failure::Connect
        );
        assert_eq!(
            Failure::of(&io(std::io::ErrorKind::TimedOut)),
            Failure::ConnectTimeout
        );
        assert_eq!(Failure::of(&closed(CloseCause::NotSent)), Failure::Connect);
        assert_eq!(Failure::of(&closed(CloseCause::Eof)), Failure::Eof);
        assert_eq!(Failure::of(&closed(CloseCause::Broken)), Failure::Socket);
        assert_eq!(Failure::of(&remote(class::STANDBY)), Failure::Standby);
        assert_eq!(Failure::of(&remote(class::RETRIABLE)), Failure::Retriable);
        assert_eq!(Failure::of(&remote(class::ACCESS_CONTROL)), Failure::Denied);
        assert_eq!(Failure::of(&remote(INVALID_TOKEN)), Failure::Denied);
        assert_eq!(Failure::of(&remote(class::YARN)), Failure::Remote);
    }

    #[test]
    fn failover_policy_follows_failover_on_network_exception_retry() {
        let p = RetryPolicy::FailoverOnNetworkException {
            max_failovers: 3,
            max_retries: 0,
            sleep_base: Duration::from_millis(100),
            sleep_max: Duration::from_millis(1000),
        };
        // The first failover is immediate, later ones wait.
        assert_eq!(
            p.decide(Failure::Standby, UNSAFE, at(0, 0)),
            Decision::FailoverAndRetry(Duration::ZERO)
        );
        match p.decide(Failure::Connect, UNSAFE, at(1, 1)) {
            Decision::FailoverAndRetry(d) => {
                assert!(d >= Duration::from_millis(100) && d < Duration::from_millis(300))
            }
            other => panic!("{other:?}"),
        }
        // EOF fails over even for a method that must not run twice.
        assert!(matches!(
            p.decide(Failure::Eof, UNSAFE, at(0, 0)),
            Decision::FailoverAndRetry(_)
        ));
        // A broken connection: only a retry-safe method goes on.
        assert!(matches!(
            p.decide(Failure::Socket, RETRY_SAFE, at(0, 0)),
            Decision::FailoverAndRetry(_)
        ));
        assert_eq!(
            p.decide(Failure::CallTimeout, UNSAFE, at(0, 0)),
            Decision::Fail(Some(NOT_IDEMPOTENT.into()))
        );
        // RetriableException stays on the same server, once (max_retries 0).
        assert_eq!(
            p.decide(Failure::Retriable, UNSAFE, at(0, 0)),
            Decision::Retry(Duration::ZERO)
        );
        assert!(matches!(
            p.decide(Failure::Retriable, UNSAFE, at(1, 0)),
            Decision::Fail(Some(_))
        ));
        // Limits, refusals and other exceptions end the call.
        assert!(matches!(
            p.decide(Failure::Standby, UNSAFE, at(3, 3)),
            Decision::Fail(Some(_))
        ));
        assert_eq!(
            p.decide(Failure::Denied, RETRY_SAFE, at(0, 0)),
            Decision::Fail(None)
        );
        assert_eq!(
            p.decide(Failure::Remote, RETRY_SAFE, at(0, 0)),
            Decision::Fail(None)
        );
    }

    #[test]
    fn network_policy_retries_its_failures_within_its_limit() {
        let count = RetryPolicy::OnNetworkFailures {
            on: NM_PROXY_RETRIED,
            limit: Limit::Count(2),
            sleep: Sleep::Fixed(Duration::from_millis(10)),
        };
        assert_eq!(
            count.decide(Failure::Connect, UNSAFE, at(1, 0)),
            Decision::Retry(Duration::from_millis(10))
        );
        assert!(matches!(
            count.decide(Failure::Connect, UNSAFE, at(2, 0)),
            Decision::Fail(Some(_))
        ));
        // NMProxy does not retry a lost answer; nothing retries a remote exception.
        assert_eq!(
            count.decide(Failure::CallTimeout, RETRY_SAFE, at(0, 0)),
            Decision::Fail(None)
        );
        assert_eq!(
            count.decide(Failure::Remote, RETRY_SAFE, at(0, 0)),
            Decision::Fail(None)
        );
        assert_eq!(
            count.decide(Failure::Socket, UNSAFE, at(0, 0)),
            Decision::Fail(Some(NOT_IDEMPOTENT.into()))
        );

        let time = RetryPolicy::OnNetworkFailures {
            on: RM_PROXY_RETRIED,
            limit: Limit::Time(Duration::from_millis(1000)),
            sleep: Sleep::Doubling {
                first: Duration::from_millis(100),
                max: Duration::from_millis(300),
            },
        };
        let after = |retries, elapsed_ms| Attempts {
            retries,
            failovers: 0,
            elapsed: Duration::from_millis(elapsed_ms),
        };
        assert_eq!(
            time.decide(Failure::CallTimeout, RETRY_SAFE, after(0, 0)),
            Decision::Retry(Duration::from_millis(100))
        );
        assert_eq!(
            time.decide(Failure::Standby, UNSAFE, after(3, 100)),
            Decision::Retry(Duration::from_millis(300))
        );
        assert!(matches!(
            time.decide(Failure::Connect, UNSAFE, after(3, 800)),
            Decision::Fail(Some(_))
        ));
        assert_eq!(
            RetryPolicy::TryOnceThenFail.decide(Failure::Connect, RETRY_SAFE, at(0, 0)),
            Decision::Fail(None)
        );
    }
}
