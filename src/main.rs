use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use idgate::config::{Config, LogFormat};

#[derive(Parser)]
#[command(
    name = "idgate",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("IDGATE_COMMIT"), ")"),
    about = "MySQL-wire proxy that generates unique IDs and routes rows to shards"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// Configuration file (for `run` when no subcommand is given).
    #[arg(long, short, global = true, default_value = "conf/idgate.yaml")]
    config: PathBuf,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve clients (the default).
    Run,
    /// Validate the configuration and print it with every default filled in.
    CheckConfig {
        /// Also read the placements of tables moved by IDGATE MIGRATE from the sequence store,
        /// and print the entries this file states otherwise, to put under `tables:`.
        #[arg(long)]
        placements: bool,
    },
    /// Start throwaway MariaDB shards and idgate on the embedded demo configuration.
    Demo,
    /// Read a password (one line) on stdin and print its hashes for a user in idgate.yaml.
    HashPassword,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Cmd::Run);
    // `run` logs as its configuration says; a configuration that does not load is reported
    // on stderr before any logging starts.
    if !matches!(command, Cmd::Run) {
        idgate::reload::log_filter::init(LogFormat::Text);
    }
    match command {
        Cmd::CheckConfig { placements } => match Config::from_file(&cli.config) {
            Ok(cfg) => {
                print!("{}", cfg.to_effective_yaml());
                eprintln!("{}: OK", cli.config.display());
                if placements {
                    return print_placements(&cfg);
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}: {e}", cli.config.display());
                ExitCode::from(2)
            }
        },
        Cmd::Run => {
            let cfg = match Config::from_file(&cli.config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{}: {e}", cli.config.display());
                    return ExitCode::from(2);
                }
            };
            idgate::reload::log_filter::init(cfg.log_format);
            serve(cfg, cli.config)
        }
        Cmd::Demo => idgate::demo::run(),
        Cmd::HashPassword => hash_password(),
    }
}

/// A current-thread runtime, or `None` (said on stderr) when one cannot start.
fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| eprintln!("cannot start the runtime: {e}"))
        .ok()
}

/// `check-config --placements`: the moved tables' entries the file states otherwise, as YAML
/// comments after the configuration, so the output stays a valid file.
fn print_placements(cfg: &Config) -> ExitCode {
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    let read = rt.block_on(async {
        tokio::time::timeout(
            std::time::Duration::from_secs(15),
            idgate::migrate::placements::entries_to_paste(cfg),
        )
        .await
        .unwrap_or_else(|_| Err("the sequence store gave no answer within 15 s".into()))
    });
    match read {
        Ok(lines) if lines.is_empty() => {
            eprintln!(
                "placements: every table moved by IDGATE MIGRATE is placed as this file says"
            );
            ExitCode::SUCCESS
        }
        Ok(lines) => {
            println!("# Tables moved by IDGATE MIGRATE that this file places otherwise;");
            println!("# put these entries under tables: (idgate routes by them already):");
            for l in lines {
                println!("#   {l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("placements: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints both hashes as YAML keys of a user entry.
fn hash_password() -> ExitCode {
    let mut line = String::new();
    if let Err(e) = std::io::stdin().read_line(&mut line) {
        eprintln!("cannot read the password from stdin: {e}");
        return ExitCode::FAILURE;
    }
    let password = line
        .strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(&line);
    let native = idgate::wire::auth::hash_password(password)
        .map(|h| format!("*{}", idgate::wire::auth::to_hex(&h)))
        .unwrap_or_default();
    let sha2 = idgate::wire::auth::hash_password_sha2(password)
        .map(|h| idgate::wire::auth::to_hex(&h))
        .unwrap_or_default();
    println!("    password_hash: \"{native}\"");
    println!("    caching_sha2_hash: \"{sha2}\"");
    ExitCode::SUCCESS
}

fn serve(cfg: Config, path: PathBuf) -> ExitCode {
    // This thread's event loop accepts clients and serves its share of them; the server starts
    // one more per extra worker thread (see `worker_threads`). A client's socket and its backend
    // connection's socket are driven by the same thread, so relaying a statement never wakes
    // another thread.
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    rt.block_on(async {
        let stop = idgate::stop::signal_stop();
        match idgate::server::run_with_file(cfg, Some(path), stop).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("{e}");
                ExitCode::FAILURE
            }
        }
    })
}
