//! `--format`: one parser for every command that writes stored results, its values and
//! their help from the one registration of formats (`report::formats`).

use std::ffi::OsStr;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::report::formats::formats_of;
use crate::report::{Format, Writer};

/// The `--format` values of one command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FormatParser(pub Writer);

impl FormatParser {
    fn values(self) -> impl Iterator<Item = PossibleValue> {
        formats_of(self.0).map(|e| {
            PossibleValue::new(e.name)
                .help(e.help)
                .aliases(e.aliases.iter().copied())
        })
    }
}

impl TypedValueParser for FormatParser {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Format, clap::Error> {
        let text = PossibleValuesParser::new(self.values()).parse_ref(cmd, arg, value)?;
        Format::for_writer(self.0, &text)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values()))
    }
}
