//! What a run's typed load (`RunSpec::load`, `planner::load`) cannot say of itself: the
//! load table as written (for `expand` to show), the run cut down to one request
//! (`check`'s probe), and the run as one part of a split load sends it. The settings stay
//! as written throughout (their JSON is the run's id).

use serde_json::Value;

use crate::plan::{LoadSpec, WarmupSpec};

use super::load::{LoadShare, RunLoad};
use super::RunSpec;

impl RunSpec {
    /// The load table as written, for `expand` to show.
    pub(crate) fn load_as_written(&self) -> Value {
        serde_json::to_value(&self.settings.load).unwrap_or(Value::Null)
    }

    /// The run cut down to one request, without warmup, at concurrency 1 (`check`'s probe).
    pub(crate) fn single_request(&self) -> RunSpec {
        let one = LoadSpec {
            concurrency: Some(1),
            requests: Some(1),
            warmup: Some(WarmupSpec::Count(0)),
            ..LoadSpec::default()
        };
        RunSpec {
            load: RunLoad::of(&one, self.settings.dataset.spec.kind, self.settings.seed),
            ..self.clone()
        }
    }

    /// The run as one part of a split load sends it: the same id and settings, its part
    /// of the load (`RunLoad::shared`); `Err(note)` when its part is nothing (the run is
    /// skipped).
    pub fn shared(&self, part: &dyn LoadShare) -> Result<RunSpec, String> {
        Ok(RunSpec {
            load: self.load.shared(part)?,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Part `k` of `n`, split as `--shard K/N` splits (the first parts get one more).
    struct Part(u32, u32);

    impl std::fmt::Display for Part {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}/{}", self.0, self.1)
        }
    }

    impl LoadShare for Part {
        fn count(&self, total: u64) -> u64 {
            let (n, i) = (u64::from(self.1), u64::from(self.0 - 1));
            total / n + u64::from(i < total % n)
        }
        fn rate(&self, rate: f64) -> f64 {
            rate / f64::from(self.1)
        }
        fn parts(&self) -> u32 {
            self.1
        }
    }

    fn typed(load: LoadSpec) -> RunLoad {
        RunLoad::of(&load, crate::plan::DatasetKind::Random, 7)
    }

    #[test]
    fn loads_split_or_skip() {
        use super::super::load::Load;
        let closed = typed(LoadSpec {
            concurrency: Some(5),
            requests: Some(7),
            warmup: Some(WarmupSpec::Count(5)),
            ..LoadSpec::default()
        });
        let one = closed.shared(&Part(1, 2)).unwrap();
        let two = closed.shared(&Part(2, 2)).unwrap();
        assert_eq!((one.mode.users(), two.mode.users()), (Some(3), Some(2)));
        assert_eq!((one.requests, two.requests), (Some(4), Some(3)));
        assert_eq!((one.warmup, two.warmup), (3, 2));
        let single = typed(LoadSpec {
            concurrency: Some(1),
            requests: Some(16),
            ..LoadSpec::default()
        });
        assert_eq!(single.shared(&Part(1, 1)).unwrap(), single);
        let note = single.shared(&Part(2, 2)).unwrap_err();
        assert!(note.contains("concurrency 1 over 2 shards"), "{note}");
        let open = typed(LoadSpec {
            rate: Some(10.0),
            requests: Some(2),
            max_in_flight: Some(3),
            ..LoadSpec::default()
        });
        let quarter = open.shared(&Part(1, 4)).unwrap();
        assert!(
            matches!(quarter.mode, Load::Open { rate, max_in_flight: Some(1), .. } if rate == 2.5),
            "{quarter:?}"
        );
        let half = open.shared(&Part(1, 2)).unwrap();
        assert_eq!(half.mode.max_in_flight(), Some(2));
        let note = open.shared(&Part(3, 4)).unwrap_err();
        assert!(note.contains("shard 3/4 has no share"), "{note}");
    }

    #[test]
    fn a_concurrency_ramp_splits_level_by_level() {
        use super::super::load::Load;
        let ramp = typed(LoadSpec {
            concurrency_ramp: Some(crate::plan::ConcurrencyRampSpec {
                concurrencies: vec![1, 4, 2],
                step: Some(crate::units::HumanDuration(std::time::Duration::from_secs(
                    1,
                ))),
                ..Default::default()
            }),
            ..LoadSpec::default()
        });
        let levels = |l: &RunLoad| match &l.mode {
            Load::ClosedRamp { levels, .. } => levels.iter().map(|l| l.1).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(levels(&ramp), [1, 4, 2]);
        let (one, two) = (
            ramp.shared(&Part(1, 2)).unwrap(),
            ramp.shared(&Part(2, 2)).unwrap(),
        );
        assert_eq!((levels(&one), levels(&two)), (vec![1, 2, 1], vec![0, 2, 1]));
        // The parts' first and most slots, as the engine's pool and first wave read them.
        assert_eq!(
            (two.mode.first_in_flight(), two.mode.in_flight()),
            (Some(0), Some(2))
        );
        let note = ramp.shared(&Part(5, 5)).unwrap_err();
        assert!(
            note.contains("a concurrency ramp of at most 4 over 5 shards"),
            "{note}"
        );
    }
}
