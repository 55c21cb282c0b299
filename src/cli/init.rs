//! `perfplan init [TEMPLATE] [--out FILE]`: a commented starting plan on standard output
//! (or into FILE, never over an existing one without `--force`); `--list` names them.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};

/// The templates: name, what it is for, text.
pub const TEMPLATES: [(&str, &str, &str); 7] = [
    (
        "quickstart",
        "a whole suite against the built-in simulator (no server needed)",
        include_str!("templates/quickstart.toml"),
    ),
    (
        "cache-on-off",
        "prefix cache on vs off, cold vs warm, on two servers",
        include_str!("templates/cache-on-off.toml"),
    ),
    (
        "tokenize-prompt",
        "chat text vs token-id prompts at the same lengths",
        include_str!("templates/tokenize-prompt.toml"),
    ),
    (
        "xllm-llm",
        "xLLM's EvalScope LLM script: random 1k/256 tokens, concurrency 1/4/8",
        include_str!("templates/xllm-llm.toml"),
    ),
    (
        "vlm-images",
        "xLLM's EvalScope VLM script: Flickr8k images from local tar shards",
        include_str!("templates/vlm-images.toml"),
    ),
    (
        "sla-search",
        "the most concurrency within TTFT / TPOT objectives",
        include_str!("templates/sla-search.toml"),
    ),
    (
        "release-signoff",
        "release tiers with gates, for CI (JUnit, job summary)",
        include_str!("templates/release-signoff.toml"),
    ),
];

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The template (default `quickstart`; `--list` names them all).
    pub template: Option<String>,
    /// Write the plan to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Overwrite --out FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// Name the templates and what each is for.
    #[arg(long, conflicts_with_all = ["template", "out"])]
    pub list: bool,
}

/// The text of a template.
pub fn template(name: &str) -> Option<&'static str> {
    TEMPLATES.iter().find(|t| t.0 == name).map(|t| t.2)
}

pub fn run(args: &InitArgs) -> Ended {
    if args.list {
        for (name, what, _) in TEMPLATES {
            println!("{name:<16} {what}");
        }
        return Ok(exit::OK);
    }
    let name = args.template.as_deref().unwrap_or("quickstart");
    let Some(text) = template(name) else {
        let names: Vec<&str> = TEMPLATES.iter().map(|t| t.0).collect();
        return Err(Failure::new(
            exit::INVALID,
            format!(
                "unknown template `{name}`; the templates are {} (`perfplan init --list`)",
                names.join(", ")
            ),
        ));
    };
    let Some(path) = &args.out else {
        print!("{text}");
        return Ok(exit::OK);
    };
    write_new(path, text, args.force)?;
    eprintln!(
        "wrote {} (template `{name}`); `perfplan run {}` runs it",
        path.display(),
        path.display()
    );
    Ok(exit::OK)
}

/// Writes `text` to a new file (its folder made if needed); an existing file is kept
/// unless `force`.
pub(super) fn write_new(path: &Path, text: &str, force: bool) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::new(
                exit::OUTPUT,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    let written = opts
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    written.map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{} already exists; nothing written (--force overwrites it)",
                path.display()
            ),
            _ => format!("cannot write {}: {e}", path.display()),
        };
        Failure::new(exit::OUTPUT, why)
    })
}
