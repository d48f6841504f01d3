//! The distributed-shell client: submits the ApplicationMaster and waits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use spindle_common::conf::{keys, Configuration};
use spindle_common::{ApplicationId, Resource};
use tracing::warn;

use super::{AM_SUBCOMMAND, APP_TYPE};
use crate::error::AmError;
use crate::launch::{quote_for_launch, LaunchContext, LOG_DIR, PASSED_ENV};
use crate::records::{AppReport, AppState, FinalStatus};
use crate::yarn_client::{conf_addr, ApplicationSubmission, YarnClient};

/// Arguments of `distributed-shell`.
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArgs {
    /// How many containers run the command.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub num_containers: u32,
    /// The shell command to run in each container (with `/bin/bash -c`).
    #[arg(long)]
    pub command: String,
    /// Memory of each container, in MB.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(i64).range(1..))]
    pub container_memory: i64,
    /// Virtual cores of each container.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub container_vcores: i32,
    /// Memory of the ApplicationMaster's container, in MB.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(i64).range(1..))]
    pub master_memory: i64,
    /// Virtual cores of the ApplicationMaster's container.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub master_vcores: i32,
    /// The queue to submit to.
    #[arg(long, default_value = "default")]
    pub queue: String,
    /// The application name.
    #[arg(long, default_value = "DistributedShell")]
    pub name: String,
    /// Priority of the container requests (lower is served first).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..))]
    pub priority: i32,
    /// Kill the application if it has not finished after this many seconds.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
    /// How often to ask the ResourceManager for the application's state, in ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..), hide = true)]
    pub poll_interval_ms: u64,
    /// The ApplicationMaster's heartbeat interval, in ms.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..), hide = true)]
    pub am_heartbeat_ms: u64,
    /// The executable the ApplicationMaster runs (`<exe> distributed-shell-am
    /// …`); this process's own executable unless set. Must be an absolute
    /// path valid on the NodeManagers.
    #[arg(long, hide = true)]
    pub am_executable: Option<PathBuf>,
}

/// How the application ended, as the client saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOutcome {
    pub app: ApplicationId,
    /// The last report (final unless the client gave up waiting).
    pub report: AppReport,
    /// The client killed the application because it ran too long.
    pub timed_out: bool,
}

impl ClientOutcome {
    /// FINISHED with SUCCEEDED.
    pub fn succeeded(&self) -> bool {
        self.report.state == AppState::Finished
            && self.report.final_status == FinalStatus::Succeeded
    }

    /// The process exit code: 0 only when the application succeeded.
    pub fn exit_code(&self) -> u8 {
        if self.succeeded() {
            0
        } else {
            1
        }
    }
}

/// The ApplicationMaster's launch command.
fn am_command(args: &ClientArgs, exe: &str, scheduler: &str) -> String {
    let words: Vec<String> = vec![
        exe.to_string(),
        AM_SUBCOMMAND.to_string(),
        "--scheduler-address".into(),
        scheduler.to_string(),
        "--num-containers".into(),
        args.num_containers.to_string(),
        "--command".into(),
        args.command.clone(),
        "--container-memory".into(),
        args.container_memory.to_string(),
        "--container-vcores".into(),
        args.container_vcores.to_string(),
        "--priority".into(),
        args.priority.to_string(),
        "--heartbeat-ms".into(),
        args.am_heartbeat_ms.to_string(),
        "--log-dir".into(),
        LOG_DIR.to_string(),
    ];
    let quoted: Vec<String> = words.iter().map(|w| quote_for_launch(w)).collect();
    format!(
        "{} 1>{LOG_DIR}/AppMaster.stdout 2>{LOG_DIR}/AppMaster.stderr",
        quoted.join(" ")
    )
}

fn executable(args: &ClientArgs) -> Result<String, AmError> {
    let exe = match &args.am_executable {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|source| AmError::File {
            path: "the current executable".into(),
            source,
        })?,
    };
    if !exe.is_absolute() {
        return Err(AmError::InvalidRequest(format!(
            "the ApplicationMaster executable {} is not an absolute path",
            exe.display()
        )));
    }
    exe.to_str().map(str::to_string).ok_or_else(|| {
        AmError::InvalidRequest(format!(
            "the ApplicationMaster executable {} is not valid UTF-8",
            exe.display()
        ))
    })
}

fn print_report(report: &AppReport) {
    println!(
        "Application {} ended: state {}, final status {}",
        report.id, report.state, report.final_status
    );
    let diagnostics = report.diagnostics.trim();
    if !diagnostics.is_empty() {
        for line in diagnostics.lines() {
            println!("  {line}");
        }
    }
}

/// Runs the distributed-shell client (see [`crate::dshell`]): submits the
/// ApplicationMaster, prints state changes while it waits, then the final
/// state and the AM's per-container report. Kills the application after
/// `timeout_secs`.
pub async fn client_main(
    args: &ClientArgs,
    conf: &Configuration,
) -> Result<ClientOutcome, AmError> {
    if args.command.trim().is_empty() {
        return Err(AmError::InvalidRequest("the command is empty".into()));
    }
    let exe = executable(args)?;
    let scheduler = conf_addr(conf, keys::RM_SCHEDULER_ADDRESS)?;
    let yarn = YarnClient::connect(conf).await?;
    let (app, max) = yarn.create_application().await?;
    let am_resource = Resource::new(args.master_memory, args.master_vcores);
    let task_resource = Resource::new(args.container_memory, args.container_vcores);
    for (what, r) in [
        ("ApplicationMaster", am_resource),
        ("container", task_resource),
    ] {
        if !r.fits_in(&max) {
            return Err(AmError::InvalidRequest(format!(
                "the {what} resource {r} exceeds the cluster's maximum allocation {max}"
            )));
        }
    }

    let am = LaunchContext::command(am_command(args, &exe, &scheduler)).pass_env(&PASSED_ENV);
    let mut submission = ApplicationSubmission::new(args.name.clone(), am_resource, am);
    submission.queue = args.queue.clone();
    submission.app_type = APP_TYPE.to_string();
    submission.max_attempts = Some(1);
    println!("Submitting application {app} to queue {}", args.queue);
    let mut report = yarn.submit(app, &submission).await?;
    println!("Application {app} is {}", report.state);

    let poll = Duration::from_millis(args.poll_interval_ms);
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    let mut last_state = report.state;
    let mut timed_out = false;
    while !report.state.is_final() {
        if Instant::now() >= deadline {
            warn!(%app, "the application did not finish within {} s; killing it", args.timeout_secs);
            println!(
                "Application {app} did not finish within {} s; killing it",
                args.timeout_secs
            );
            yarn.kill(
                app,
                Some(&format!(
                    "the distributed shell client timed out after {} s",
                    args.timeout_secs
                )),
            )
            .await?;
            timed_out = true;
            report = yarn.report(app).await?;
            break;
        }
        tokio::time::sleep(poll).await;
        report = yarn.report(app).await?;
        if report.state != last_state {
            last_state = report.state;
            if report.state == AppState::Running {
                println!(
                    "Application {app} is RUNNING (ApplicationMaster on {})",
                    report.host
                );
            } else {
                println!("Application {app} is {}", report.state);
            }
        }
    }
    print_report(&report);
    let outcome = ClientOutcome {
        app,
        report,
        timed_out,
    };
    println!(
        "Distributed shell {}",
        if outcome.succeeded() {
            "succeeded"
        } else {
            "failed"
        }
    );
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ClientArgs,
    }

    #[derive(Parser)]
    struct AmCli {
        #[command(flatten)]
        args: super::super::AmArgs,
    }

    #[test]
    fn the_am_command_parses_back_into_the_am_arguments() {
        let cli = Cli::try_parse_from([
            "dshell",
            "--num-containers",
            "3",
            "--command",
            "echo 'it''s' \"$HOME\"",
            "--container-memory",
            "128",
        ])
        .expect("valid arguments");
        let cmd = am_command(&cli.args, "/opt/spindle/bin/spindle", "127.0.0.1:8030");
        assert!(cmd.ends_with(" 1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr"));

        // What the NodeManager's launch script runs: <LOG_DIR> expanded, then
        // `exec /bin/bash -c "<cmd>"`. Echo the words instead of running them.
        let expanded = cmd
            .replace(LOG_DIR, "/tmp/x")
            .replace("'/opt/spindle/bin/spindle'", "printf '%s\\n'");
        let words_part = expanded
            .split(" 1>/tmp/x/AppMaster.stdout")
            .next()
            .expect("command words");
        let out = std::process::Command::new("/bin/bash")
            .arg("-c")
            .arg(format!("exec /bin/bash -c \"{words_part}\""))
            .output()
            .expect("bash");
        assert!(out.status.success(), "{out:?}");
        let words: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        let am = AmCli::try_parse_from(
            std::iter::once("am".to_string()).chain(words.into_iter().skip(1)),
        )
        .expect("the AM understands its command");
        assert_eq!(am.args.num_containers, 3);
        assert_eq!(am.args.command, "echo 'it''s' \"$HOME\"");
        assert_eq!(am.args.container_memory, 128);
        assert_eq!(am.args.scheduler_address.as_deref(), Some("127.0.0.1:8030"));
        assert_eq!(am.args.log_dir, Some(PathBuf::from("/tmp/x")));
    }

    #[test]
    fn arguments_are_checked() {
        assert!(Cli::try_parse_from(["d", "--command", "x", "--num-containers", "0"]).is_err());
        assert!(Cli::try_parse_from(["d", "--command", "x", "--container-memory", "-1"]).is_err());
        assert!(
            Cli::try_parse_from(["d"]).is_err(),
            "the command is required"
        );
        let ok = Cli::try_parse_from(["d", "--command", "x"]).expect("defaults");
        assert_eq!(ok.args.num_containers, 1);
        assert_eq!(ok.args.queue, "default");
        let relative = ClientArgs {
            am_executable: Some(PathBuf::from("bin/spindle")),
            ..ok.args
        };
        assert!(executable(&relative).is_err());
    }
}
