//! The accelerators an exporter's page names: NVIDIA DCGM exporter's `DCGM_FI_*` series
//! carry the GPU's `modelName`, one series per GPU (`gpu`, else `UUID`); counted per
//! model. Pure text handling over `expo`.

use std::collections::{BTreeMap, BTreeSet};

use super::expo::samples;

/// `(model, count)` of every GPU model the page names, by model name.
pub fn accelerators(page: &str) -> Vec<(String, u32)> {
    let mut gpus: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in samples(page).filter(|s| s.name.starts_with("DCGM_FI_")) {
        let Some(model) = s.label("modelName").filter(|m| !m.is_empty()) else {
            continue;
        };
        let id = s.label("gpu").or_else(|| s.label("UUID")).unwrap_or("0");
        gpus.entry(model.to_string())
            .or_default()
            .insert(id.to_string());
    }
    gpus.into_iter()
        .map(|(model, ids)| (model, u32::try_from(ids.len()).unwrap_or(u32::MAX)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_counted_per_model() {
        let page = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization\n\
            DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 50\n\
            DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",modelName=\"NVIDIA H100 80GB HBM3\"} 70\n\
            DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 300\n\
            DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",modelName=\"NVIDIA L4\"} 1\n\
            vllm:num_requests_running{model_name=\"m\"} 1\n";
        assert_eq!(
            accelerators(page),
            [
                ("NVIDIA H100 80GB HBM3".to_string(), 2),
                ("NVIDIA L4".to_string(), 1)
            ]
        );
        assert!(accelerators("vllm:x 1\n").is_empty());
    }
}
