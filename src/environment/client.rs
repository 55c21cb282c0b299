//! The client machine's facts, read from Linux's `/proc` and `/sys` (each field
//! optional: another system, or a file that is not there, leaves it out). The files are
//! read under `PERFPLAN_SYSFS_ROOT` when it is set (`$ROOT/proc/cpuinfo`, …), so tests
//! can give a machine of their own.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The variable naming the folder `/proc` and `/sys` are read under (tests).
pub(crate) const SYSFS_ROOT_VAR: &str = "PERFPLAN_SYSFS_ROOT";

/// Facts about the machine perfplan ran on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientFacts {
    /// `model name` of `/proc/cpuinfo` (`Model` on some ARM boards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// CPUs this process may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// `MemTotal` of `/proc/meminfo`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// The kernel release (`/proc/sys/kernel/osrelease`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The first CPU's frequency governor (`performance`, `powersave`, …), when the
    /// machine has cpufreq.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_governor: Option<String>,
    /// The open-file limit (soft, hard; `None` for unlimited) of this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<OpenFiles>,
}

/// `ulimit -n` (soft) and `ulimit -Hn` (hard); `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFiles {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// The folder `/proc` and `/sys` are read under: `PERFPLAN_SYSFS_ROOT`, else `/`.
pub fn root() -> PathBuf {
    std::env::var_os(SYSFS_ROOT_VAR)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// A file under `root`, trimmed; `None` when absent or empty.
pub(crate) fn read_under(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The CPU model named in a `/proc/cpuinfo` text.
pub(crate) fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("model name") || l.starts_with("Model"))
        .find_map(|l| l.split_once(':').map(|(_, v)| v.trim().to_string()))
        .filter(|v| !v.is_empty())
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn memory_of(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => n.checked_mul(1024),
        Some(_) => None,
    }
}

/// `Max open files` of a `/proc/self/limits` text.
fn open_files_of(limits: &str) -> Option<OpenFiles> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut values = line["Max open files".len()..].split_whitespace();
    let value = |w: Option<&str>| -> Option<Option<u64>> {
        match w? {
            "unlimited" => Some(None),
            n => n.parse().ok().map(Some),
        }
    };
    Some(OpenFiles {
        soft: value(values.next())?,
        hard: value(values.next())?,
    })
}

impl ClientFacts {
    /// This machine's facts, read under [`root`].
    pub(crate) fn detect() -> ClientFacts {
        ClientFacts::read(&root())
    }

    /// The facts of the machine whose `/proc` and `/sys` are under `root`.
    pub fn read(root: &Path) -> ClientFacts {
        ClientFacts {
            cpu_model: read_under(root, "/proc/cpuinfo").and_then(|t| cpu_model_of(&t)),
            cores: std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok()),
            memory_bytes: read_under(root, "/proc/meminfo").and_then(|t| memory_of(&t)),
            kernel: read_under(root, "/proc/sys/kernel/osrelease"),
            cpu_governor: read_under(
                root,
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            ),
            open_files: read_under(root, "/proc/self/limits").and_then(|t| open_files_of(&t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_machine_under_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            "proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Test CPU @ 3.0GHz\n",
        );
        put("proc/meminfo", "MemTotal:       16384 kB\nMemFree: 1 kB\n");
        put("proc/sys/kernel/osrelease", "6.1.0-test\n");
        put(
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "powersave\n",
        );
        put(
            "proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units\n\
             Max open files            1024                 unlimited            files\n",
        );
        let f = ClientFacts::read(dir.path());
        assert_eq!(f.cpu_model.as_deref(), Some("Test CPU @ 3.0GHz"));
        assert_eq!(f.memory_bytes, Some(16384 * 1024));
        assert_eq!(f.kernel.as_deref(), Some("6.1.0-test"));
        assert_eq!(f.cpu_governor.as_deref(), Some("powersave"));
        assert_eq!(
            f.open_files,
            Some(OpenFiles {
                soft: Some(1024),
                hard: None
            })
        );
    }

    #[test]
    fn an_empty_root_leaves_every_file_fact_out() {
        let dir = tempfile::tempdir().unwrap();
        let f = ClientFacts::read(dir.path());
        assert_eq!(
            (f.cpu_model, f.memory_bytes, f.kernel, f.cpu_governor),
            (None, None, None, None)
        );
        assert!(f.open_files.is_none());
    }
}
