//! Who a container runs as under the LinuxContainerExecutor, with the checks
//! of Hadoop's `LinuxContainerExecutor` (`verifyUsernamePattern`,
//! `getRunAsUser`) and of `container-executor.c` (`check_user`), and their
//! messages.

use std::ffi::CString;

use nix::unistd::{Gid, User};

use super::ExecutorConfig;

/// The user a container's processes run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    /// The user's primary group.
    pub gid: u32,
    /// Every group of the user (`initgroups`), primary included.
    pub groups: Vec<u32>,
}

/// Why a user may not run containers, in Hadoop's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRefusal {
    /// The message, or everything Hadoop's container-executor would have
    /// printed (its preamble, then the reason).
    pub message: String,
    /// The check was container-executor's (its output, exit code 255), not
    /// the Java side's user-name pattern.
    pub by_container_executor: bool,
}

impl UserRefusal {
    /// The container's diagnostics, as Hadoop's localizer start reports a
    /// failed container-executor.
    pub fn diagnostics(&self, app: &spindle_common::ApplicationId) -> String {
        if self.by_container_executor {
            format!(
                "Application {app} initialization failed (exitCode=255) with output: {}\n",
                self.message
            )
        } else {
            self.message.clone()
        }
    }

    /// The reason alone (the last line).
    pub fn reason(&self) -> &str {
        self.message.lines().last().unwrap_or_default()
    }
}

impl ExecutorConfig {
    /// The user `app_user`'s containers run as: the application's user when
    /// `limit-users` is false, else the configured local user; checked as
    /// Hadoop checks it. Looks users up in the system's user database, so
    /// it may block.
    pub fn run_as(&self, app_user: &str) -> Result<RunAs, UserRefusal> {
        // Under Kerberos the nonsecure-mode keys stop applying: every
        // container runs as its application's user, with no pattern check
        // (Hadoop's LinuxContainerExecutor.getRunAsUser and
        // verifyUsernamePattern).
        if self.secure {
            return self.checked_run_as(app_user, app_user);
        }
        let pattern = regex::Regex::new(&format!("^(?:{})$", self.user_pattern)).map_err(|e| {
            UserRefusal {
                message: format!("the user pattern does not compile: {e}"),
                by_container_executor: false,
            }
        })?;
        if !pattern.is_match(app_user) {
            return Err(UserRefusal {
                message: format!(
                    "Invalid user name '{app_user}', it must match '{}'",
                    self.user_pattern
                ),
                by_container_executor: false,
            });
        }
        let run_as = if self.limit_users {
            self.local_user.as_str()
        } else {
            app_user
        };
        self.checked_run_as(run_as, app_user)
    }

    /// `run_as` for `app_user`, checked as container-executor checks it.
    fn checked_run_as(&self, run_as: &str, app_user: &str) -> Result<RunAs, UserRefusal> {
        // What container-executor prints before it checks the user.
        let preamble = format!(
            "main : command provided 0\nmain : run as user is {run_as}\n\
             main : requested yarn user is {app_user}\n"
        );
        let refuse = |why: String| UserRefusal {
            message: format!("{preamble}{why}"),
            by_container_executor: true,
        };
        if run_as == "root" {
            return Err(refuse("Running as root is not allowed".into()));
        }
        let user = match User::from_name(run_as) {
            Ok(Some(u)) => u,
            Ok(None) => return Err(refuse(format!("User {run_as} not found"))),
            Err(e) => {
                return Err(refuse(format!(
                    "Can't get user information {run_as} - {}",
                    e.desc()
                )))
            }
        };
        let uid = user.uid.as_raw();
        if uid < self.min_user_id && !self.allowed_system_users.iter().any(|u| u == run_as) {
            return Err(refuse(format!(
                "Requested user {run_as} is not whitelisted and has id {uid},which is below the \
                 minimum allowed {}",
                self.min_user_id
            )));
        }
        if self.banned_users.iter().any(|u| u == run_as) {
            return Err(refuse(format!("Requested user {run_as} is banned")));
        }
        let gid = user.gid.as_raw();
        let groups = CString::new(run_as)
            .ok()
            .and_then(|name| nix::unistd::getgrouplist(&name, Gid::from_raw(gid)).ok())
            .map(|gs| gs.into_iter().map(Gid::as_raw).collect())
            .unwrap_or_else(|| vec![gid]);
        Ok(RunAs {
            name: run_as.to_string(),
            uid,
            gid,
            groups,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::Configuration;

    fn lce(tune: &[(&str, &str)]) -> ExecutorConfig {
        let mut conf = Configuration::with_defaults();
        conf.set(
            spindle_common::conf::keys::NM_CONTAINER_EXECUTOR_CLASS,
            "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
        );
        for (k, v) in tune {
            conf.set(k, *v);
        }
        ExecutorConfig::from_conf(&conf).expect("valid")
    }

    #[test]
    fn limit_users_maps_everyone_to_the_local_user() {
        let e = lce(&[]);
        let r = e.run_as("alice").expect("nobody may run containers");
        assert_eq!(r.name, "nobody");
        let nobody = User::from_name("nobody")
            .expect("lookup")
            .expect("nobody exists");
        assert_eq!(r.uid, nobody.uid.as_raw());
        assert!(r.groups.contains(&r.gid));
    }

    #[test]
    fn under_kerberos_containers_run_as_their_applications_user() {
        // limit-users (true by default) and the user pattern stop applying.
        let e = lce(&[
            ("hadoop.security.authentication", "kerberos"),
            (super::super::keys::USER_PATTERN, "^zzz$"),
        ]);
        let r = e.run_as("nobody").expect("the application's own user");
        assert_eq!(r.name, "nobody");
        // container-executor's own checks still hold.
        let root = e.run_as("root").expect_err("root").message;
        assert!(root.ends_with("\nRunning as root is not allowed"), "{root}");
        let missing = e.run_as("no-such-user-here").expect_err("missing").message;
        assert!(
            missing.ends_with("\nUser no-such-user-here not found"),
            "{missing}"
        );
    }

    #[test]
    fn hadoops_checks_and_messages() {
        let off = [(super::super::keys::LIMIT_USERS, "false")];
        let e = lce(&off);
        let msg = |user: &str| e.run_as(user).expect_err("refused").message;
        assert!(msg("root").ends_with("\nRunning as root is not allowed"));
        assert!(msg("no-such-user-here").ends_with("\nUser no-such-user-here not found"));
        let daemon = msg("daemon");
        assert!(
            daemon.ends_with(
                "\nRequested user daemon is not whitelisted and has id 1,which is below the \
                 minimum allowed 1000"
            ),
            "{daemon}"
        );
        assert!(daemon.starts_with(
            "main : command provided 0\nmain : run as user is daemon\n\
             main : requested yarn user is daemon\n"
        ));
        assert_eq!(
            msg("../etc"),
            format!(
                "Invalid user name '../etc', it must match '{}'",
                super::super::DEFAULT_USER_PATTERN
            )
        );
        // Banned users are refused even above the minimum id.
        let banned = lce(&[(super::super::keys::BANNED_USERS, "nobody")]);
        assert!(banned
            .run_as("alice")
            .expect_err("banned")
            .message
            .ends_with("\nRequested user nobody is banned"));
        // The whitelist lets a system user through.
        let allowed = lce(&[
            (super::super::keys::LIMIT_USERS, "false"),
            (super::super::keys::ALLOWED_SYSTEM_USERS, "daemon"),
        ]);
        assert_eq!(allowed.run_as("daemon").expect("whitelisted").uid, 1);
    }
}
