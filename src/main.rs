//! The `chainsmith` command: a language server (`lsp`) and terminal commands over the same core.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "chainsmith", version, about = "Language server and CLI for tool-chain programs")]
struct Cli {
    /// Workspace root (holding chainsmith.toml or protocols/); default: found from the paths given.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the language server over stdio.
    Lsp,
    /// Check programs (files or folders of .py files) against the workspace's tool protocols.
    Check {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Files or folders; default: the workspace root.
        paths: Vec<PathBuf>,
    },
    /// Candidate tools for a task (BM25 over the protocols), or retrieval quality with --eval.
    Retrieve {
        /// The task, in words.
        task: Option<String>,
        /// How many candidates (default: [generate] candidates).
        #[arg(long)]
        k: Option<usize>,
        /// StableToolBench query files or RestBench task files to score retrieval against.
        #[arg(long, num_args = 1..)]
        eval: Vec<PathBuf>,
    },
    /// List the workspace's tools.
    Tools {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    chainsmith::logging::init();
    let result = match cli.command {
        Command::Lsp => chainsmith::server::run_stdio(),
        Command::Check { format, paths } => {
            chainsmith::cli::check(cli.root.as_deref(), &paths, matches!(format, Format::Json))
        }
        Command::Retrieve { task, k, eval } => {
            chainsmith::cli::retrieve(cli.root.as_deref(), task.as_deref(), k, &eval)
        }
        Command::Tools { format } => chainsmith::cli::tools(cli.root.as_deref(), matches!(format, Format::Json)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        // A closed pipe (`chainsmith tools | head`) is the reader's choice, not a failure.
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chainsmith: {e:#}");
            ExitCode::from(2)
        }
    }
}
