//! `spindle dag session|submit|status|kill`: the DAG ApplicationMaster's client side,
//! and the hidden `spindle dag am` the session's container runs.

use spindle_dag_am::client::{KillArgs, SessionStartArgs, SessionStopArgs, StatusArgs, SubmitArgs};

use crate::ConfArgs;

/// The DAG AM commands (all but `sim`).
#[derive(clap::Subcommand)]
pub enum DagAmCommand {
    /// Start or stop a DAG session (a long-running DAG AM on YARN).
    #[command(subcommand)]
    Session(SessionCommand),
    /// Submit a DAG file (YAML or JSON) to a session.
    Submit {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: SubmitArgs,
    },
    /// Show a session's queues, workers and DAGs, or one DAG.
    Status {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: StatusArgs,
    },
    /// Kill a DAG.
    Kill {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: KillArgs,
    },
    /// The DAG session's ApplicationMaster (started by YARN, not by hand).
    #[command(hide = true)]
    Am {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: spindle_dag_am::am::AmArgs,
    },
}

/// `spindle dag session …`.
#[derive(clap::Subcommand)]
pub enum SessionCommand {
    /// Submit a session AM to YARN and print its application id.
    Start {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: SessionStartArgs,
    },
    /// Stop a session: its workers exit and the AM unregisters.
    Stop {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: SessionStopArgs,
    },
}

pub async fn run(command: DagAmCommand) -> Result<u8, String> {
    match command {
        DagAmCommand::Session(SessionCommand::Start { conf, args }) => {
            let (conf, _) = conf.load()?;
            spindle_dag_am::client::session_start(&args, &conf).await
        }
        DagAmCommand::Session(SessionCommand::Stop { conf, args }) => {
            let (conf, _) = conf.load()?;
            spindle_dag_am::client::session_stop(&args, &conf).await
        }
        DagAmCommand::Submit { conf, args } => {
            let (conf, _) = conf.load()?;
            spindle_dag_am::client::submit(&args, &conf).await
        }
        DagAmCommand::Status { conf, args } => {
            let (conf, _) = conf.load()?;
            spindle_dag_am::client::status(&args, &conf).await
        }
        DagAmCommand::Kill { conf, args } => {
            let (conf, _) = conf.load()?;
            spindle_dag_am::client::kill(&args, &conf).await
        }
        DagAmCommand::Am { conf, args } => {
            let (conf, _) = conf.load()?;
            spindle_dag_am::am::am_main(&args, &conf).await
        }
    }
}
