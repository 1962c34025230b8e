//! `synlab probe`: the probes alone against any server on this host.

/// Flags of `synlab probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The server's listening port.
    #[arg(long)]
    pub port: Option<u16>,
}

pub fn probe_main(_args: ProbeArgs) -> anyhow::Result<()> {
    anyhow::bail!("the probes are not built yet")
}
