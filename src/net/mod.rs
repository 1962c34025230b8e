//! The network lab: topology plans (scenario -> operations), shaping models, the delay router and its timer lead.

pub mod cli;
pub mod lab;
pub mod loopback;
pub mod plan;
pub mod router;
pub mod shaper;
pub mod spec;
pub mod wake;
