//! A real Slurm on this machine: munged, slurmctld and slurmd started as root
//! by the test with a one-node `slurm.conf` in a temporary folder (their ports free ones
//! the test picked), then `srun -n 2 perfplan run PLAN --shard auto --out DIR` against a
//! `perfplan sim` process of the test's own on 127.0.0.1: both tasks take their shard from
//! SLURM_PROCID/SLURM_NTASKS and meet at the start barrier on the step's first node
//! (SLURM_STEP_NODELIST), on the port made of the job and step ids; then `perfplan
//! merge` of DIR holds every request the simulator answered. The daemons are stopped by
//! their pids. Skipped, saying so, where not root or where `slurm-wlm` and `munge` are
//! not installed and cannot be (`.ci/run` installs them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod cli_support;

use cli_support::SimProcess;
use perfplan::store::Store;

const TOOLS: [&str; 5] = ["munged", "slurmctld", "slurmd", "srun", "sinfo"];

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Why Slurm cannot run here, after trying to install it; `None` when it can.
fn unavailable() -> Option<String> {
    if !root() {
        return Some("not root: munged, slurmctld and slurmd run as root here".into());
    }
    if TOOLS.iter().all(|t| have(t)) {
        return None;
    }
    let installed = Command::new("sh")
        .args([
            "-c",
            "apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1",
        ])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success());
    match installed && TOOLS.iter().all(|t| have(t)) {
        true => None,
        false => Some("slurm-wlm and munge are not installed and `apt-get install` failed".into()),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The daemons and the simulator, killed by their pids when the test ends.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn slurm_conf(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "ClusterName=perfplan\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={}\n\
         SlurmdPort={}\nAuthType=auth/munge\nAuthInfo=socket={d}/munge.socket\n\
         CredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\nStateSaveLocation={d}/state\n\
         SlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/slurmctld.log\n\
         SlurmdLogFile={d}/slurmd.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
         SchedulerType=sched/builtin\nSelectType=select/linear\nMpiDefault=none\n\
         ReturnToService=2\nJobCompType=jobcomp/none\n\
         AccountingStorageType=accounting_storage/none\n\
         NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n\
         PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
        free_port(),
        free_port()
    )
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// munged, slurmctld and slurmd in the foreground (so their pids are the children's),
/// and the wait for the node to be idle.
fn start_slurm(dir: &Path, daemons: &mut Daemons) -> PathBuf {
    for sub in ["state", "spool"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let mut key = vec![0u8; 1024];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut key)
        .unwrap();
    let key_path = dir.join("munge.key");
    std::fs::write(&key_path, key).unwrap();
    Command::new("chmod")
        .arg("600")
        .arg(&key_path)
        .status()
        .unwrap();
    let conf = dir.join("slurm.conf");
    std::fs::write(&conf, slurm_conf(dir)).unwrap();
    let at = |f: &str| format!("{}/{f}", dir.display());
    daemons.0.push(spawn(Command::new("munged").args([
        "-F",
        "-f",
        &format!("--key-file={}", at("munge.key")),
        &format!("--socket={}", at("munge.socket")),
        &format!("--pid-file={}", at("munged.pid")),
        &format!("--log-file={}", at("munged.log")),
        &format!("--seed-file={}", at("munged.seed")),
    ])));
    let c = conf.to_str().unwrap();
    daemons.0.push(spawn(
        Command::new("slurmctld")
            .args(["-D", "-f", c])
            .env("SLURM_CONF", c),
    ));
    daemons.0.push(spawn(
        Command::new("slurmd")
            .args(["-D", "-f", c, "-N", "localhost"])
            .env("SLURM_CONF", c),
    ));
    let t0 = Instant::now();
    loop {
        let out = Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .env("SLURM_CONF", c)
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
            return conf;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the Slurm node did not come up: {}",
            std::fs::read_to_string(dir.join("slurmd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `perfplan sim` as a process of its own on 127.0.0.1 (any free port).
fn start_sim() -> SimProcess {
    SimProcess::start(&["--threads", "1", "--ttft-base", "5ms", "--itl-base", "1ms"])
}

/// How many chat requests the simulator answered (`GET /sim/truth`).
fn answered(base_url: &str) -> usize {
    let addr = base_url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /sim/truth HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let truth: serde_json::Value = serde_json::from_str(body).unwrap();
    truth["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"] == "/v1/chat/completions")
        .count()
}

fn plan(dir: &Path, base_url: &str) -> PathBuf {
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    let text = format!(
        "[plan]\nname = \"slurm-test\"\nseed = 7\n[endpoints.sim]\nbase_url = \"{base_url}\"\n\
         [models.m]\nserved_name = \"smollm2\"\ntokenizer = \"{}\"\n[datasets.rand]\n\
         kind = \"random\"\ninput_tokens = 32\n[defaults]\noutput_tokens = 4\nignore_eos = true\n\
         [matrix]\nload = [{{ concurrency = 4, requests = 12, warmup = 4 }}, \
         {{ concurrency = 2, requests = 6 }}]\n",
        tok.display()
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn srun_shards_meet_at_the_barrier_and_merge_into_the_plans_runs() {
    if let Some(why) = unavailable() {
        eprintln!("skipped: no Slurm here: {why}");
        return;
    }
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut daemons = Daemons(Vec::new());
    let conf = start_slurm(dir.path(), &mut daemons);
    let sim = start_sim();
    let base_url = sim.url.clone();
    let plan = plan(dir.path(), &base_url);
    let out = dir.path().join("results");
    let perfplan = env!("CARGO_BIN_EXE_perfplan");
    let o = Command::new("srun")
        .args([
            "-n",
            "2",
            "--time=1",
            perfplan,
            "run",
            plan.to_str().unwrap(),
        ])
        .args([
            "--shard",
            "auto",
            "--out",
            out.to_str().unwrap(),
            "--barrier-timeout",
            "30s",
        ])
        .env("SLURM_CONF", &conf)
        .env_remove("PERFPLAN_BARRIER")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "srun: {said}");
    assert!(said.contains("start barrier at localhost:"), "{said}");
    for k in 1..=2 {
        let store = Store::open(&out.join(format!("shard-{k}-of-2"))).unwrap();
        for run in store.runs().unwrap() {
            let role = if k == 1 { "leader" } else { "follower" };
            let facts = run.facts.to_value();
            assert_eq!(facts["barrier"]["role"], role, "{facts}");
        }
    }
    let merged = dir.path().join("merged");
    let m = Command::new(perfplan)
        .args(["merge", merged.to_str().unwrap(), out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let store = Store::open(&merged).unwrap();
    let runs = store.runs().unwrap();
    let mut rows = 0;
    for (run, want) in runs.iter().zip([12.0, 6.0]) {
        assert_eq!(run.metrics["requests_ok"], Some(want), "run {}", run.id);
        assert_eq!(
            run.facts.shards.as_deref(),
            Some(&["1/2".to_string(), "2/2".to_string()][..])
        );
        rows += store.request_rows(&run.id).unwrap().len();
    }
    assert_eq!(rows, 4 + 12 + 6, "warmup and measured rows of both runs");
    assert_eq!(
        answered(&base_url),
        rows,
        "requests the simulator answered = rows merged"
    );
    drop(daemons);
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t0.elapsed()
    );
}
