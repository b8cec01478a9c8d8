//! Running a chain, as `chainsmith run` and the editor's Run both do: a program whose calls cannot
//! run (an untrusted workspace, a tool the workspace does not have) is refused before anything
//! starts, a mock of the APIs stands in for them when asked, and the program runs under the
//! runtime until it ends or is cancelled. The front ends say where its output goes and how the
//! outcome reads to their user.

use std::sync::Arc;

use crate::diagnostic::Diagnostic;
use crate::mock::MockServer;
use crate::runtime::{self, Cancel, RunObserver, RunOutcome, RunRequest};
use crate::text::ByteRange;

/// A run ready to go: its request, and the mock it talks to (when started), kept for as long as
/// the run.
pub struct Ready {
    request: RunRequest,
    mock: Option<MockServer>,
}

/// Why a run against the mock did not start: the mock did not (the diagnostic's code).
pub const MOCK_FAILED: &str = "mock-failed";

/// `request` checked against the workspace: the calls that cannot run (located diagnostics), if
/// any. The text checked is the request's source, or `file_text` (the program file's content).
/// With `mock`, the run's HTTP calls go to a mock of their APIs, built from the protocols, started
/// now and stopped when the run ends: they carry no key, so sending one needs no trust.
pub fn prepare(mut request: RunRequest, file_text: &str, mock: bool) -> Result<Ready, Vec<Diagnostic>> {
    let mock = match mock.then(|| MockServer::start(request.catalog.clone(), ([127, 0, 0, 1], 0).into())) {
        None => None,
        Some(Ok(mock)) => Some(mock),
        Some(Err(e)) => {
            let why = format!("the mock did not start: {e}");
            return Err(vec![Diagnostic::error(&request.program, ByteRange::default(), MOCK_FAILED, why)]);
        }
    };
    if let Some(mock) = &mock {
        request.upstream = mock.upstream();
    }
    let text = request.source.as_deref().unwrap_or(file_text);
    let refused =
        runtime::unrunnable_calls(&request.program, text, &request.config, &request.catalog, &request.upstream);
    if !refused.is_empty() {
        return Err(refused);
    }
    Ok(Ready { request, mock })
}

impl Ready {
    /// The program file the run stands for.
    pub fn program(&self) -> &std::path::Path {
        &self.request.program
    }

    /// Answers the program's calls from `trace` where they are the same calls (all of them, or
    /// only those before the call with id `before`, and none after it). The program and its
    /// source stay those `prepare` checked.
    pub fn replay(&mut self, trace: runtime::trace::Trace, before: Option<u32>) {
        self.request.replay = Some(trace);
        self.request.replay_before = before;
    }

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
