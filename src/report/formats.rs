//! The output formats: one registration of each (its name, other spellings, what it is,
//! and the commands that write it), from which every command's `--format` list, its help
//! and [`Format`]'s parsing come.

use std::str::FromStr;

use super::ReportError;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Md,
    Csv,
    Json,
    Html,
    /// The Prometheus text exposition (`prometheus`).
    Prometheus,
}

/// The commands that write stored results in a chosen format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Report,
    Compare,
    History,
}

/// One format as the command line knows it.
#[derive(Debug)]
pub(crate) struct FormatEntry {
    pub format: Format,
    /// Its name on the command line.
    pub name: &'static str,
    /// Other spellings accepted.
    pub aliases: &'static [&'static str],
    /// One line of help.
    pub help: &'static str,
    /// The commands that write it.
    pub writers: &'static [Writer],
}

use Writer::{Compare, History, Report};

/// Every format, once.
pub(crate) const FORMATS: &[FormatEntry] = &[
    FormatEntry {
        format: Format::Table,
        name: "table",
        aliases: &[],
        help: "a table for the terminal (plain columns when piped)",
        writers: &[Report, Compare, History],
    },
    FormatEntry {
        format: Format::Md,
        name: "md",
        aliases: &["markdown"],
        help: "Markdown, for a pull request or a job summary",
        writers: &[Report, Compare, History],
    },
    FormatEntry {
        format: Format::Csv,
        name: "csv",
        aliases: &[],
        help: "one row per run (per release for `history`), every metric a column",
        writers: &[Report, History],
    },
    FormatEntry {
        format: Format::Json,
        name: "json",
        aliases: &[],
        help: "everything, for scripts",
        writers: &[Report, Compare, History],
    },
    FormatEntry {
        format: Format::Html,
        name: "html",
        aliases: &[],
        help: "one self-contained page with the charts",
        writers: &[Report],
    },
    FormatEntry {
        format: Format::Prometheus,
        name: "prometheus",
        aliases: &["prom"],
        help: "every run's metrics as gauges in base units, for a textfile collector or a push gateway",
        writers: &[Report],
    },
];

impl Format {
    /// The format named `text` (a name or an alias) if `writer` writes it.
    pub(crate) fn for_writer(writer: Writer, text: &str) -> Option<Format> {
        FORMATS
            .iter()
            .filter(|e| e.writers.contains(&writer))
            .find(|e| e.name == text || e.aliases.contains(&text))
            .map(|e| e.format)
    }
}

/// The formats `writer` writes, in registration order.
pub(crate) fn formats_of(writer: Writer) -> impl Iterator<Item = &'static FormatEntry> {
    FORMATS.iter().filter(move |e| e.writers.contains(&writer))
}

impl FromStr for Format {
    type Err = ReportError;
    fn from_str(s: &str) -> Result<Format, ReportError> {
        FORMATS
            .iter()
            .find(|e| e.name == s || e.aliases.contains(&s))
            .map(|e| e.format)
            .ok_or_else(|| ReportError::Format(s.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_registered_once_and_parses_by_each_spelling() {
        for e in FORMATS {
            assert_eq!(FORMATS.iter().filter(|o| o.format == e.format).count(), 1);
            assert_eq!(e.name.parse::<Format>().ok(), Some(e.format));
            for a in e.aliases {
                assert_eq!(a.parse::<Format>().ok(), Some(e.format));
            }
            let back = FORMATS
                .iter()
                .find(|o| o.format == e.format)
                .map(|o| o.name);
            assert_eq!(back, Some(e.name));
        }
        assert!("xml".parse::<Format>().is_err());
    }

    #[test]
    fn each_command_writes_its_own_formats() {
        assert_eq!(Format::for_writer(Writer::Compare, "csv"), None);
        assert_eq!(
            Format::for_writer(Writer::History, "markdown"),
            Some(Format::Md)
        );
        let names: Vec<_> = formats_of(Writer::Report).map(|e| e.name).collect();
        assert_eq!(names, ["table", "md", "csv", "json", "html", "prometheus"]);
    }
}
