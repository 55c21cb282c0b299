//! `--export prometheus=FILE`: the Prometheus text exposition (`report::prometheus`)
//! written to FILE, for a node exporter's textfile collector. As each run of
//! `run --export` is stored, FILE is rewritten with every run stored so far.

use super::{Delivery, Exporter, Live};
use crate::report::ReportData;

pub(super) const EXPORTER: Exporter = Exporter {
    kind: "prometheus",
    target: "FILE",
    help: "the Prometheus text exposition written to FILE, for a node exporter's textfile \
           collector",
    check,
    deliver,
    live: Live::Suite,
};

fn check(file: &str) -> Result<(), &'static str> {
    match file.is_empty() {
        true => Err("a file to write"),
        false => Ok(()),
    }
}

fn deliver(file: &str, data: &ReportData) -> Delivery {
    Delivery::File {
        path: file.into(),
        text: crate::report::prometheus::render(data),
    }
}
