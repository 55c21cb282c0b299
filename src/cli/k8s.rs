//! `perfplan k8s PLAN --shards N`: prints the Kubernetes manifests of a sharded suite
//! (see `distribute::k8s`) for `kubectl apply -f -`, and on stderr what to create first
//! and where the results land.

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use super::plan_args::{self, OnlyArgs, PlanArgs};
use crate::distribute::k8s::{manifests, K8sOptions};

#[derive(Debug, Args)]
pub(crate) struct K8sArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub only: OnlyArgs,
    /// Shards: pods of the Indexed Job, each sending 1/N of every run's load.
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The image holding perfplan (built from the repository's `Dockerfile`).
    #[arg(long, value_name = "IMAGE", default_value = concat!("perfplan:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// The namespace of every object (default: kubectl's current one).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// An existing PersistentVolumeClaim for the results, mounted by every pod (it must
    /// allow ReadWriteMany, or all pods on one node); default: a new one, NAME-results.
    #[arg(long, value_name = "CLAIM")]
    pub out_volume: Option<String>,
    /// The size of the results claim the manifests make.
    #[arg(long, value_name = "SIZE", default_value = "10Gi")]
    pub volume_size: String,
    /// The Secret holding the plan's API keys (one key per `api_key_env` variable).
    #[arg(long, value_name = "NAME", default_value = "perfplan-api-keys")]
    pub secret: String,
}

pub fn run(args: &K8sArgs) -> Ended {
    let plan = plan_args::load(&args.plan)?;
    plan_args::runs(&plan, &args.only.only)?;
    let opts = K8sOptions {
        shards: args.shards,
        image: args.image.clone(),
        namespace: args.namespace.clone(),
        out_volume: args.out_volume.clone(),
        volume_size: args.volume_size.clone(),
        secret: args.secret.clone(),
        only: args.only.only.clone(),
    };
    let m = manifests(&plan, &opts).map_err(|e| Failure::new(exit::INVALID, e))?;
    print!("{}", m.text);
    for note in m.notes {
        eprintln!("note: {note}");
    }
    Ok(exit::OK)
}
