//! Logs go to stderr only: stdout belongs to LSP messages and command output. Also how an error
//! chain reads in a message.

pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CHAINSMITH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).with_ansi(false).try_init();
}

/// The innermost cause of `error` ("Connection refused (os error 111)"), which says what happened
/// where the wrappers around it (an HTTP client's "error sending request for url (…)") repeat
/// the request; `None` when it has no cause.
pub fn root_cause(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source = error.source();
    let mut last = None;
    while let Some(s) = source {
        last = Some(s.to_string());
        source = s.source();
    }
    last
}
