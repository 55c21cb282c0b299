//! The CLI reference of the book (`docs/src/reference/cli.md`) is generated from clap and
//! cannot drift: every command and subcommand of `perfplan::cli::Cli`, its long help as
//! `perfplan CMD --help` prints it (at a fixed width of 100 columns, no colour). Regenerate
//! it with `PERFPLAN_WRITE_DOCS=1 cargo test --test cli_reference`.

use clap::CommandFactory;

const PAGE: &str = "docs/src/reference/cli.md";
const WIDTH: usize = 100;

const PREAMBLE: &str = "# CLI reference

<!-- generated from src/cli by tests/cli_reference.rs: do not edit; regenerate with
     PERFPLAN_WRITE_DOCS=1 cargo test --test cli_reference -->

Every command's `--help`, as `perfplan CMD --help` prints it. The guide's
[Commands](../guide/commands.md#commands) page says what they are for.
";

/// Every command fixed at one width, so the text does not depend on the terminal.
fn fixed(cmd: clap::Command) -> clap::Command {
    cmd.term_width(WIDTH).mut_subcommands(fixed)
}

/// One section per command, depth first in clap's order: `## perfplan run` and its help.
fn sections(cmd: &mut clap::Command, out: &mut String) {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string();
    let help = cmd.render_long_help().to_string();
    let help: Vec<&str> = help.trim_end().lines().map(str::trim_end).collect();
    out.push_str(&format!(
        "\n## `{name}`\n\n```text\n{}\n```\n",
        help.join("\n")
    ));
    for sub in cmd.get_subcommands_mut() {
        if sub.get_name() == "help" || sub.is_hide_set() {
            continue;
        }
        sections(sub, out);
    }
}

fn reference() -> String {
    let mut cmd = fixed(perfplan::cli::Cli::command());
    cmd.build();
    let mut out = PREAMBLE.to_string();
    sections(&mut cmd, &mut out);
    out
}

#[test]
fn cli_reference_is_clap_s() {
    let current = reference();
    if std::env::var_os("PERFPLAN_WRITE_DOCS").is_some() {
        std::fs::write(PAGE, &current).unwrap();
        return;
    }
    let written = std::fs::read_to_string(PAGE).unwrap_or_default();
    assert!(
        written == current,
        "{PAGE} is stale: regenerate it with `PERFPLAN_WRITE_DOCS=1 cargo test --test cli_reference`"
    );
}

#[test]
fn cli_reference_has_every_command() {
    let text = reference();
    for command in [
        "perfplan run",
        "perfplan report",
        "perfplan import evalscope",
        "perfplan sim",
    ] {
        assert!(
            text.contains(&format!("## `{command}`")),
            "{command} missing"
        );
    }
    assert!(!text.contains("\u{1b}["), "no terminal styling in the page");
}
