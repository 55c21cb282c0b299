//! The barrier in one process: shard 1 on 127.0.0.1:0 and the others connecting to the
//! port it got, each shard's side on its own thread as in `perfplan run`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::*;

fn cfg(k: u32, n: u32, addr: &str, timeout_ms: u64) -> BarrierConfig {
    BarrierConfig {
        shard: Shard { k, n },
        addr: addr.to_string(),
        timeout: Duration::from_millis(timeout_ms),
        fingerprint: "plan-a".into(),
    }
}

/// Shard 1 of `n` and the others, connected to it.
fn shards(n: u32, timeout_ms: u64) -> Vec<Arc<TcpBarrier>> {
    let leader = TcpBarrier::start(cfg(1, n, "127.0.0.1:0", timeout_ms)).unwrap();
    let addr = leader.addr().to_string();
    let mut all = vec![leader];
    for k in 2..=n {
        all.push(TcpBarrier::start(cfg(k, n, &addr, timeout_ms)).unwrap());
    }
    all
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every shard meets run `run` at once; their start instants.
async fn meet_all(all: &[Arc<TcpBarrier>], run: &str) -> Vec<Result<Meeting, BarrierError>> {
    let meets = all.iter().map(|b| b.meet(run));
    futures_util::future::join_all(meets).await
}

fn spread_us(meetings: &[Result<Meeting, BarrierError>]) -> u128 {
    let starts: Vec<SystemTime> = meetings.iter().map(|m| m.as_ref().unwrap().start).collect();
    let lo = starts.iter().min().unwrap();
    let hi = starts.iter().max().unwrap();
    hi.duration_since(*lo).unwrap().as_micros()
}

#[test]
fn three_shards_meet_every_run_and_start_at_one_instant() {
    let all = shards(3, 5_000);
    rt().block_on(async {
        for run in ["a", "b", "c"] {
            let before = SystemTime::now();
            let meetings = meet_all(&all, run).await;
            // One instant (on one machine the clocks are one), in the near future.
            assert!(spread_us(&meetings) < 5_000, "{meetings:?}");
            let start = meetings[0].as_ref().unwrap().start;
            assert!(start > before && start < before + Duration::from_secs(2));
            let follower = &meetings[2].as_ref().unwrap().facts;
            assert_eq!(follower.role, "follower");
            assert!(follower.rtt_us < 1_000_000);
            assert!(follower.clock_offset_us.abs() < 1_000_000);
        }
    });
}

#[test]
fn a_shard_passing_a_run_lets_the_others_start_it() {
    let all = shards(3, 5_000);
    rt().block_on(async {
        all[1].pass("a").await.unwrap();
        let (one, three) = tokio::join!(all[0].meet("a"), all[2].meet("a"));
        assert_eq!(one.unwrap().facts.shards_ready, Some(2));
        three.unwrap();
        // Shard 1 passes the next run: the others are released by its pass.
        let (two, _, three) = tokio::join!(all[1].meet("b"), all[0].pass("b"), all[2].meet("b"));
        two.unwrap();
        three.unwrap();
    });
}

#[test]
fn a_shard_that_never_arrives_is_named_on_every_shard() {
    let all = shards(3, 400);
    let t0 = Instant::now();
    let (one, two) = rt().block_on(async { tokio::join!(all[0].meet("a"), all[1].meet("a")) });
    let one = one.unwrap_err().to_string();
    assert!(
        one.contains("shard 3/3 did not arrive at the barrier of run a"),
        "{one}"
    );
    assert!(one.contains("arrived: 1/3, 2/3"), "{one}");
    let two = two.unwrap_err().to_string();
    assert!(
        two.contains("the barrier stopped the suite") && two.contains("3/3"),
        "{two}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "no hang");
}

#[test]
fn a_shard_that_leaves_fails_the_barrier_and_a_missing_leader_is_unreachable() {
    let mut all = shards(2, 5_000);
    let rt = rt();
    rt.block_on(async {
        let m = meet_all(&all, "a").await;
        assert!(m.iter().all(Result::is_ok));
    });
    drop(all.pop());
    let e = rt.block_on(all[0].meet("b")).unwrap_err().to_string();
    assert!(
        e.contains("shard 2/2 left the barrier") && e.contains("closed"),
        "{e}"
    );
    // No shard 1 at all: the connecting shard gives up after its timeout, naming where.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let alone = TcpBarrier::start(cfg(2, 2, &format!("127.0.0.1:{port}"), 300)).unwrap();
    let e = rt.block_on(alone.meet("a")).unwrap_err().to_string();
    assert!(
        e.contains(&format!("cannot reach the barrier at 127.0.0.1:{port}")),
        "{e}"
    );
}

#[test]
fn a_shard_of_another_plan_or_count_is_refused() {
    let leader = TcpBarrier::start(cfg(1, 2, "127.0.0.1:0", 2_000)).unwrap();
    let mut other = cfg(2, 2, leader.addr(), 2_000);
    other.fingerprint = "plan-b".into();
    let e = rt()
        .block_on(TcpBarrier::start(other).unwrap().meet("a"))
        .unwrap_err();
    assert!(e.to_string().contains("its plan is not shard 1's"), "{e}");
    let three = TcpBarrier::start(cfg(2, 3, leader.addr(), 2_000)).unwrap();
    let e = rt().block_on(three.meet("a")).unwrap_err();
    assert!(e.to_string().contains("a shard of 3, shard 1 of 2"), "{e}");
}

#[test]
fn shard_1_waits_for_every_suite_to_end_or_names_the_late() {
    let all = shards(2, 300);
    let follower = all[1].clone();
    let done = std::thread::spawn(move || follower.finish(false));
    all[0].finish(true).unwrap();
    done.join().unwrap().unwrap();
    // Shard 2 ends (and its connection closes) well before shard 1 waits for it.
    let all = shards(2, 300);
    rt().block_on(meet_all(&all, "a"));
    all[1].finish(false).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    all[0].finish(true).unwrap();
    let all = shards(2, 300);
    // Shard 2 joins (its first meeting), then never ends its suite.
    rt().block_on(meet_all(&all, "a"));
    let e = all[0].finish(true).unwrap_err().to_string();
    assert!(e.contains("shard 2/2 did not end its suite"), "{e}");
}
