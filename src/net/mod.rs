//! The network lab: topology plans (scenario -> operations), shaping models, the delay router.

pub mod cli;
