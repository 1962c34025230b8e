//! `synlab serve`: the built-in server on its own, or started by the lab with a JSON config.

/// Flags of `synlab serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Full configuration as JSON (used by the lab; overrides the other flags).
    #[arg(long, hide = true)]
    pub config_json: Option<String>,
}

pub fn serve_main(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("the built-in server is not built yet")
}
