//! `synlab worker` (hidden): a load worker started by the controller.

/// Runs a worker from its JSON configuration until Stop, stdin EOF or its duration bound.
pub fn worker_main(config_json: &str) -> anyhow::Result<()> {
    let _cfg: super::protocol::WorkerConfig = serde_json::from_str(config_json)?;
    anyhow::bail!("the load worker is not built yet")
}
