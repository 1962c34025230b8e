//! `synlab net up|down|status` and the hidden `synlab router`.

/// Flags of `synlab net`.
#[derive(Debug, clap::Args)]
pub struct NetArgs {
    #[command(subcommand)]
    pub cmd: NetCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum NetCmd {
    /// Bring a scenario's topology up and leave it up (for debugging with `ip netns exec`).
    Up { scenario: Option<std::path::PathBuf> },
    /// Remove every synlab namespace and link on this machine (leftovers of crashed runs).
    Down,
    /// List synlab's namespaces and links on this machine.
    Status,
}

pub fn net_main(_args: NetArgs) -> anyhow::Result<()> {
    anyhow::bail!("the network lab is not built yet")
}

/// Runs the delay router (hidden subcommand) from its JSON configuration.
pub fn router_main(_config_json: &str) -> anyhow::Result<()> {
    anyhow::bail!("the delay router is not built yet")
}
