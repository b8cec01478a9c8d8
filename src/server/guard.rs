//! The panic guards every entry point runs under: a panic in a handler or in the core answers an
//! internal error (and a log line) instead of ending the server, which tower-lsp-server would let
//! it do. Also the way off the I/O loop for request work ([`off_loop`]). Kept apart from the
//! context, as the task layer and every handler use them.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::FutureExt;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

/// Runs `f`, turning a panic into an `InternalError` answer (and a log line on stderr).
pub fn guarded<R>(method: &str, f: impl FnOnce() -> R) -> Result<R> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| panic_error(method, panic.as_ref()))
}

/// [`guarded`] for an entry point's whole future (notifications, `initialize`, commands): the
/// framework catches no panic, and one there would end the server.
pub async fn guarded_async<R>(method: &str, future: impl Future<Output = R>) -> Result<R> {
    AssertUnwindSafe(future).catch_unwind().await.map_err(|panic| panic_error(method, panic.as_ref()))
}

/// Runs `work` on the blocking pool, off the I/O loop, so the server keeps reading messages —
/// the next `didChange`, a `$/cancelRequest` — while it works. A request cancelled (its future
/// dropped) before its turn on the pool never starts; one already running finishes unseen.
pub async fn off_loop<R: Send + 'static>(method: &'static str, work: impl FnOnce() -> R + Send + 'static) -> Result<R> {
    struct Dropped(Arc<AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Dropped(Arc::new(AtomicBool::new(false)));
    let abandoned = dropped.0.clone();
    let handle =
        tokio::task::spawn_blocking(move || (!abandoned.load(Ordering::SeqCst)).then(|| guarded(method, work)));
    match handle.await {
        Ok(Some(result)) => result,
        Ok(None) => Err(Error::request_cancelled()),
        Err(e) => Err(panic_error(method, &e.to_string())),
    }
}

/// What a panic said, from its payload (`panic!` gives a `&str` or a `String`).
pub fn panic_reason(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn panic_error(method: &str, panic: &(dyn std::any::Any + Send)) -> Error {
    let reason = panic_reason(panic);
    tracing::error!("{method} panicked: {reason}");
    Error {
        code: ErrorCode::InternalError,
        message: format!("chainsmith: {method} failed: {reason}").into(),
        data: None,
    }
}
