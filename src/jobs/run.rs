//! Running a chain, as `chainsmith run` and the editor's Run both do: a program whose calls cannot
//! run (an untrusted workspace, a tool the workspace does not have) is refused before anything
//! starts, a mock of the APIs stands in for them when asked, and the program runs under the
//! runtime until it ends or is cancelled. The front ends say where its output goes and how the
//! outcome reads to their user.

use std::sync::Arc;

use crate::diagnostic::Diagnostic;
use crate::mock::MockServer;
use crate::runtime::{self, Cancel, RunObserver, RunOutcome, RunRequest};

/// Why a run did not start.
#[derive(Debug)]
pub enum Refused {
    /// Calls that cannot run, located in the program (or the workspace, when it is not trusted).
    Calls(Vec<Diagnostic>),
    /// The mock asked for did not start.
    Mock(std::io::Error),
}

/// A run ready to go: its request, and the mock it talks to, kept for as long as the run.
pub struct Ready {
    pub request: RunRequest,
    mock: Option<MockServer>,
}

/// `request` checked against the workspace, and with `mock` pointed at a mock of its HTTP APIs.
/// `text` is the program as it will run (the request's source, or the file's content).
pub fn prepare(mut request: RunRequest, text: &str, mock: bool) -> Result<Ready, Refused> {
    let refused = runtime::unrunnable_calls(&request.program, text, &request.config, &request.catalog);
    if !refused.is_empty() {
        return Err(Refused::Calls(refused));
    }
    let mock = match mock {
        false => None,
        true => {
            let mock = MockServer::start(request.catalog.clone(), ([127, 0, 0, 1], 0).into()).map_err(Refused::Mock)?;
            request.upstream = mock.upstream();
            Some(mock)
        }
    };
    Ok(Ready { request, mock })
}

impl Ready {
    /// Whether the run reaches the APIs themselves: only then is its trace a record of them that a
    /// re-run may take answers from.
    pub fn against_the_apis(&self) -> bool {
        self.request.upstream.is_empty()
    }

    /// Runs the program to its end or until `cancel`, its output and calls going to `observer`.
    pub fn run(self, observer: Arc<dyn RunObserver>, cancel: &Cancel) -> RunOutcome {
        let outcome = runtime::run(self.request, observer, cancel);
        drop(self.mock);
        outcome
    }
}
