//! Logs go to stderr only: stdout belongs to LSP messages and command output.

pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CHAINSMITH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).with_ansi(false).try_init();
}
