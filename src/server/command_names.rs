//! The names of the commands the server carries out (`workspace/executeCommand`), written once:
//! the code lenses and code actions that carry them, the dispatch that reads them, the task layer
//! that titles its progress with them and the capabilities that advertise them must agree, and
//! the editors (`editors/`) send these exact strings (a test compares their lists with
//! [`COMMANDS`]). It sits at the bottom of `server/` so every part of the server can name them.

pub const RUN: &str = "chainsmith.run";
pub const GENERATE: &str = "chainsmith.generate";
pub const FIX: &str = "chainsmith.fix";
pub const PLAN: &str = "chainsmith.plan";
pub const PROBE: &str = "chainsmith.probe";
pub const PROBE_ALL: &str = "chainsmith.probeAll";
pub const GRAPH: &str = "chainsmith.graph";
pub const TRUST_WORKSPACE: &str = "chainsmith.trustWorkspace";
pub const ACCEPT_OBSERVED: &str = "chainsmith.acceptObserved";

/// Every command, as `initialize` advertises them.
pub const COMMANDS: [&str; 9] = [RUN, GENERATE, FIX, PLAN, PROBE, PROBE_ALL, GRAPH, TRUST_WORKSPACE, ACCEPT_OBSERVED];
