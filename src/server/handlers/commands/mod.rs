//! `workspace/executeCommand`, one file per command. The editor commands are advertised so
//! clients can bind them: `chainsmith.run` runs the program ([`run`]), `chainsmith.generate` and
//! `chainsmith.fix` generate and fix chains ([`generate`]), `chainsmith.plan` inserts the planner's
//! chain for a task ([`plan`]), `chainsmith.probe`/`probeAll` probe
//! tools ([`probe`]), `chainsmith.graph` answers with ToolNet's graph ([`graph`]),
//! `chainsmith.trustWorkspace` trusts the workspace and reloads it ([`trust`]),
//! `chainsmith.acceptObserved` takes a response a run observed as the tool's schema ([`observed`]),
//! `chainsmith.writeStubs` writes `.pyi` stubs for Python language servers ([`stubs`]). The long ones
//! answer at once and go on as tasks (`server::task`). What each command takes as arguments is
//! written once, in [`arguments`].

pub mod arguments;
pub mod generate;
pub mod graph;
pub mod observed;
pub mod plan;
pub mod probe;
pub mod run;
pub mod stubs;
pub mod trust;

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types as lsp;

pub use crate::server::command_names::{self as names, COMMANDS};
use crate::server::context::Context;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `chainsmith.run`: run the program named by the arguments in the background.
    Run,
    /// `chainsmith.generate`: generate a chain for the document's task in the background.
    Generate,
    /// `chainsmith.fix`: run the document, reflect on its failure and fix it in the background.
    Fix,
    /// `chainsmith.plan`: insert the planner's best chain for the document's task, no model asked.
    Plan,
    /// `chainsmith.probe` (tool ids as arguments) / `chainsmith.probeAll`: probing in the background.
    Probe { all: bool },
    /// `chainsmith.graph`: the ToolNet graph as text, DOT and an SVG picture (from a tool id, when
    /// one is given; around the tools of the document, when its URI is given).
    Graph { from: Option<String>, document: Option<lsp::Uri> },
    /// `chainsmith.trustWorkspace`: record trust for the workspace and reload it.
    TrustWorkspace,
    /// `chainsmith.acceptObserved`: take the response a run observed as the tool's schema.
    AcceptObserved,
    /// `chainsmith.writeStubs`: `.pyi` stubs of the toolset modules in `typings/`.
    WriteStubs,
    /// A chainsmith command this build cannot carry out: tell the user, answer `null`.
    Unavailable { message: String },
    /// Not a chainsmith command: an `InvalidParams` error.
    Unknown { message: String },
}

pub async fn execute_command(ctx: &Context, params: lsp::ExecuteCommandParams) -> Result<Option<Value>> {
    match outcome(&params) {
        Outcome::Run => run::execute(ctx, params).await,
        Outcome::Generate => generate::execute(ctx, params, false).await,
        Outcome::Fix => generate::execute(ctx, params, true).await,
        Outcome::Plan => plan::execute(ctx, params).await,
        Outcome::Probe { all } => probe::execute(ctx, params, all).await,
        Outcome::Graph { from, document } => graph::execute(ctx, from, document).await,
        Outcome::TrustWorkspace => trust::execute(ctx).await,
        Outcome::AcceptObserved => observed::execute(ctx, params).await,
        Outcome::WriteStubs => stubs::execute(ctx).await,
        Outcome::Unavailable { message } => {
            ctx.client.show_message(lsp::MessageType::WARNING, message).await;
            Ok(None)
        }
        Outcome::Unknown { message } => Err(Error::invalid_params(message)),
    }
}

/// Which command `params` names, with its parsed arguments where they are simple.
pub fn outcome(params: &lsp::ExecuteCommandParams) -> Outcome {
    let command = params.command.as_str();
    match command {
        names::RUN => Outcome::Run,
        names::GENERATE => Outcome::Generate,
        names::FIX => Outcome::Fix,
        names::PLAN => Outcome::Plan,
        names::PROBE => Outcome::Probe { all: false },
        names::PROBE_ALL => Outcome::Probe { all: true },
        names::GRAPH => {
            let from = arguments::tool(&params.arguments);
            let document = arguments::document(&params.arguments);
            Outcome::Graph { from, document }
        }
        names::TRUST_WORKSPACE => Outcome::TrustWorkspace,
        names::ACCEPT_OBSERVED => Outcome::AcceptObserved,
        names::WRITE_STUBS => Outcome::WriteStubs,
        _ if COMMANDS.contains(&command) => Outcome::Unavailable {
            message: format!("chainsmith: the command `{command}` is not available in this build"),
        },
        _ => Outcome::Unknown {
            message: format!("unknown command `{command}`; chainsmith provides {}", COMMANDS.join(", ")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_advertised_command_is_carried_out() {
        for command in COMMANDS {
            let params = lsp::ExecuteCommandParams {
                command: command.to_string(),
                arguments: Vec::new(),
                work_done_progress_params: Default::default(),
            };
            let outcome = outcome(&params);
            assert!(
                !matches!(outcome, Outcome::Unavailable { .. } | Outcome::Unknown { .. }),
                "{command}: {outcome:?}"
            );
        }
        let distinct: std::collections::HashSet<&str> = COMMANDS.into_iter().collect();
        assert_eq!(distinct.len(), COMMANDS.len());
    }
}
