//! The lifecycle states YARN reports for applications and their attempts, and
//! the outcome an ApplicationMaster gives: one definition shared by the RM
//! (which keeps them) and every client (which reads them from reports).
//!
//! Names are Hadoop's (`YarnApplicationState`, `FinalApplicationStatus`,
//! `YarnApplicationAttemptState`); conversions to and from the protobuf
//! enums live in [`crate::proto`].

use std::fmt;
use std::str::FromStr;

/// `YarnApplicationState`: where an application is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AppState {
    New,
    NewSaving,
    Submitted,
    Accepted,
    Running,
    Finished,
    Failed,
    Killed,
}

impl AppState {
    /// Every state, in Hadoop's order (what `-appStates ALL` means).
    pub const ALL: [AppState; 8] = [
        AppState::New,
        AppState::NewSaving,
        AppState::Submitted,
        AppState::Accepted,
        AppState::Running,
        AppState::Finished,
        AppState::Failed,
        AppState::Killed,
    ];

    /// FINISHED, FAILED or KILLED: the application will not run again.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            AppState::Finished | AppState::Failed | AppState::Killed
        )
    }

    /// Hadoop's name (`RUNNING`, `NEW_SAVING`, ...), as its messages and
    /// CLIs print it.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::New => "NEW",
            AppState::NewSaving => "NEW_SAVING",
            AppState::Submitted => "SUBMITTED",
            AppState::Accepted => "ACCEPTED",
            AppState::Running => "RUNNING",
            AppState::Finished => "FINISHED",
            AppState::Failed => "FAILED",
            AppState::Killed => "KILLED",
        }
    }
}

impl fmt::Display for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AppState {
    type Err = String;

    /// Hadoop's names, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AppState::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown application state '{s}' (expected one of {})",
                    AppState::ALL.map(AppState::as_str).join(", ")
                )
            })
    }
}

/// `FinalApplicationStatus`: the outcome an ApplicationMaster reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FinalStatus {
    /// Not finished yet (or the AM never said).
    Undefined,
    Succeeded,
    Failed,
    Killed,
    /// Finished without a success/failure verdict (long-running services).
    Ended,
}

impl FinalStatus {
    /// Every status, in Hadoop's order.
    pub const ALL: [FinalStatus; 5] = [
        FinalStatus::Undefined,
        FinalStatus::Succeeded,
        FinalStatus::Failed,
        FinalStatus::Killed,
        FinalStatus::Ended,
    ];

    /// Hadoop's name (`SUCCEEDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Undefined => "UNDEFINED",
            FinalStatus::Succeeded => "SUCCEEDED",
            FinalStatus::Failed => "FAILED",
            FinalStatus::Killed => "KILLED",
            FinalStatus::Ended => "ENDED",
        }
    }
}

impl fmt::Display for FinalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FinalStatus {
    type Err = String;

    /// Hadoop's names, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FinalStatus::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown final application status '{s}' (expected one of {})",
                    FinalStatus::ALL.map(FinalStatus::as_str).join(", ")
                )
            })
    }
}

/// `YarnApplicationAttemptState` (without the `APP_ATTEMPT_` prefix) as the
/// RM reports it. An attempt is SCHEDULED until the scheduler grants its AM
/// container, ALLOCATED until the NodeManager has started it, LAUNCHED until
/// the AM registers, RUNNING while it heartbeats, FINISHING once it has
/// unregistered (until its container exits) and then FINISHED; FAILED and
/// KILLED end it early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttemptState {
    Scheduled,
    Allocated,
    Launched,
    Running,
    Finishing,
    Finished,
    Failed,
    Killed,
}

impl AttemptState {
    /// FINISHED, FAILED or KILLED.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            AttemptState::Finished | AttemptState::Failed | AttemptState::Killed
        )
    }

    /// Hadoop's name without the prefix (`RUNNING`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptState::Scheduled => "SCHEDULED",
            AttemptState::Allocated => "ALLOCATED",
            AttemptState::Launched => "LAUNCHED",
            AttemptState::Running => "RUNNING",
            AttemptState::Finishing => "FINISHING",
            AttemptState::Finished => "FINISHED",
            AttemptState::Failed => "FAILED",
            AttemptState::Killed => "KILLED",
        }
    }
}

impl fmt::Display for AttemptState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_case_insensitively() {
        for s in AppState::ALL {
            assert_eq!(s.as_str().to_lowercase().parse::<AppState>(), Ok(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        for s in FinalStatus::ALL {
            assert_eq!(format!(" {} ", s.as_str()).parse::<FinalStatus>(), Ok(s));
        }
        let err = "RUNING".parse::<AppState>().expect_err("typo");
        assert!(err.contains("NEW_SAVING"), "{err}");
    }

    #[test]
    fn final_states() {
        let finals: Vec<_> = AppState::ALL.into_iter().filter(|s| s.is_final()).collect();
        assert_eq!(
            finals,
            [AppState::Finished, AppState::Failed, AppState::Killed]
        );
        assert!(AttemptState::Killed.is_final());
        assert!(!AttemptState::Finishing.is_final());
    }
}
