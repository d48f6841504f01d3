//! `spindle worker`: a DAG ContainerWorker (started by the DAG AM in a YARN container).

/// Arguments of `spindle worker`.
pub use spindle_dag_am::worker::WorkerArgs;

pub async fn run(args: WorkerArgs) -> Result<u8, String> {
    spindle_dag_am::worker::worker_main(&args).await
}
