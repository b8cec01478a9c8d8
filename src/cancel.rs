//! A cancellation flag shared between whoever asks for work to stop (the editor's Cancel, a
//! signal) and the work itself (a run's process tree, an LLM request in flight).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Cancels work from another thread (the editor's cancel button): a run stops its program's whole
/// process tree, an LLM request is dropped.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Resolves once cancelled, for racing against work that cannot poll the flag itself (an HTTP
    /// request). The flag is looked at every 50 ms: it is set from any thread, runtime or not, and
    /// a user waits for nothing they could notice.
    pub async fn cancelled(&self) {
        while !self.is_cancelled() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
