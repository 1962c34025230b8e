//! Kernel probes of the server's namespace: parsers of /proc text and sock_diag replies, rate
//! maths, cross-checks, and `synlab probe`.

pub mod cli;
