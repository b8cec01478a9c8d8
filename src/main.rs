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
    /// Trust the workspace for this command only (CI): its MCP servers, command tools and
    /// interpreter run; nothing is recorded (`chainsmith trust` records).
    #[arg(long, global = true)]
    trust: bool,
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
    /// Plan chains for a task from the protocols' data flow (no model), or score plans with --eval.
    Plan {
        /// The task, in words.
        task: Option<String>,
        /// How many plans.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
        k: u16,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// A RestBench-style task file: is each task's gold solution the first plan, among the first five?
        #[arg(long, value_name = "TASKS")]
        eval: Option<PathBuf>,
        /// Only these tasks of --eval's file: `A..B` or `N` (the first N).
        #[arg(long)]
        tasks: Option<String>,
        /// Gold solutions that teach ToolNet the planner's transition weights (a RestBench-style
        /// file); the task being scored never teaches it.
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
        /// Only these tasks of --history's file.
        #[arg(long)]
        history_tasks: Option<String>,
    },
    /// ToolNet, the tool-transition graph: show it, import trajectories, measure next-tool prediction.
    Graph {
        #[command(subcommand)]
        command: chainsmith::cli::graph::GraphCommand,
    },
    /// Run a program against the real tools; prints its output and a compact trace.
    Run {
        /// The program.
        file: PathBuf,
        /// Also write the trace to this file.
        #[arg(long, value_name = "PATH")]
        trace_json: Option<PathBuf>,
        /// Answer calls identical to those of this trace from it; run only new ones.
        #[arg(long, value_name = "TRACE")]
        replay: Option<PathBuf>,
        /// Send HTTP calls to a mock of the APIs built from their protocols (offline runs).
        #[arg(long)]
        mock: bool,
    },
    /// Serve a mock of the workspace's HTTP APIs, answering from their protocols' examples and schemas.
    Mock {
        /// Port on 127.0.0.1 (0: any free port).
        #[arg(long, default_value_t = 8089)]
        port: u16,
    },
    /// Generate a tool chain for a task (ATC drafting, attributable reflection, DFSDT search).
    Generate {
        /// The task, in words.
        task: String,
        /// Write the program to this file (default: print it).
        #[arg(short, long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Allow running tools that may change data (HTTP non-GET, MCP tools without readOnlyHint).
        #[arg(long)]
        yes: bool,
        /// The model plans alone: the planner's chains are not shown with the tools.
        #[arg(long)]
        no_plans: bool,
    },
    /// Run a program and, when it fails, reflect and revise it; the fix is written back only on success.
    Fix {
        file: PathBuf,
        /// Allow running tools that may change data.
        #[arg(long)]
        yes: bool,
    },
    /// Write .pyi stubs for the toolset modules (default: typings/ under the workspace root).
    Stubs {
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Measure response-schema inference against declared schemas (OpenAPI examples, ToolBench answers).
    ProbeEval {
        /// OpenAPI documents whose response examples are inferred and compared with their schemas.
        #[arg(long, num_args = 1..)]
        openapi: Vec<PathBuf>,
        /// A folder of ToolBench DFSDT answer files (recorded real responses).
        #[arg(long)]
        answers: Option<PathBuf>,
        /// ToolBench query files giving `template_response` for the answers' tools.
        #[arg(long, num_args = 1..)]
        queries: Vec<PathBuf>,
    },
    /// Discover unknown response schemas by running LLM-written programs against the tools.
    Probe {
        /// Tools to probe (`toolset.name`, or a bare name when unique).
        tools: Vec<String>,
        /// Probe every tool whose response schema is unknown (chain of probing).
        #[arg(long)]
        all: bool,
        /// Also run tools that are not read-only (MCP readOnlyHint, HTTP GET).
        #[arg(long)]
        yes: bool,
    },
    /// Benchmark generation on task files (RestBench, ToolBench): executable rate, Path, Prec, cost.
    #[command(args_conflicts_with_subcommands = true)]
    Eval {
        #[command(subcommand)]
        command: Option<chainsmith::cli::eval::EvalCommand>,
        #[command(flatten)]
        args: chainsmith::cli::eval::EvalArgs,
    },
    /// List the workspace's tools.
    Tools {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Trust the workspace: print the commands it names (MCP servers, command tools, interpreter)
    /// and allow exactly those to run; a command changed later needs trusting again.
    Trust {
        /// List the trusted workspaces and their commands.
        #[arg(long, conflicts_with = "revoke")]
        list: bool,
        /// Stop trusting the workspace.
        #[arg(long)]
        revoke: bool,
    },
}

/// Loading a large catalog is allocation-bound (millions of small JSON nodes); mimalloc cuts that
/// share of `check`'s time on 16,000 APIs markedly compared with glibc's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Tree-sitter's C library allocates through the same allocator: an edit's incremental re-parse
    // allocates and frees thousands of subtrees.
    // SAFETY: called before anything parses, so every tree is allocated and freed by mimalloc.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: libmimalloc_sys::mi_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        }));
    }
    let cli = Cli::parse();
    chainsmith::logging::init();
    if cli.trust {
        chainsmith::cli::trust_for_this_run();
    }
    let result = match cli.command {
        Command::Lsp => chainsmith::server::run_stdio(),
        Command::Check { format, paths } => {
            chainsmith::cli::check(cli.root.as_deref(), &paths, matches!(format, Format::Json))
        }
        Command::Retrieve { task, k, eval } => {
            chainsmith::cli::retrieve(cli.root.as_deref(), task.as_deref(), k, &eval)
        }
        Command::Graph { command } => chainsmith::cli::graph::run(cli.root.as_deref(), command),
        Command::Plan { task, k, format, eval, tasks, history, history_tasks } => {
            let args = chainsmith::cli::plan::PlanArgs {
                task,
                k: usize::from(k),
                json: matches!(format, Format::Json),
                eval,
                tasks,
                history,
                history_tasks,
            };
            chainsmith::cli::plan(cli.root.as_deref(), args)
        }
        Command::Run { file, trace_json, replay, mock } => {
            chainsmith::cli::run(cli.root.as_deref(), &file, trace_json.as_deref(), replay.as_deref(), mock)
        }
        Command::Eval { command, args } => chainsmith::cli::eval::eval(cli.root.as_deref(), command, args),
        Command::Mock { port } => chainsmith::cli::mock(cli.root.as_deref(), port),
        Command::Generate { task, out, yes, no_plans } => {
            chainsmith::cli::generate(cli.root.as_deref(), &task, out.as_deref(), yes, no_plans)
        }
        Command::Fix { file, yes } => chainsmith::cli::fix(cli.root.as_deref(), &file, yes),
        Command::Stubs { out } => chainsmith::cli::stubs(cli.root.as_deref(), out.as_deref()),
        Command::ProbeEval { openapi, answers, queries } => {
            chainsmith::cli::probe_eval(&openapi, answers.as_ref(), &queries)
        }
        Command::Probe { tools, all, yes } => chainsmith::cli::probe(cli.root.as_deref(), &tools, all, yes),
        Command::Tools { format } => chainsmith::cli::tools(cli.root.as_deref(), matches!(format, Format::Json)),
        Command::Trust { list, revoke } => chainsmith::cli::trust(cli.root.as_deref(), list, revoke),
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
