//! A reader that stops reading (`perfplan metrics --format json | head -c 10`) ends
//! perfplan quietly with its named exit code, never with "internal error".

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn a_closed_stdout_ends_quietly_with_its_exit_code() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["metrics", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The pipe's read end is dropped here: perfplan's next write fails (the JSON, about
    // 70 KB, is more than a pipe's 64 KiB buffer).
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(141),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
