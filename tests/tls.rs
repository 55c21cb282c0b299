//! TLS through the CLI: a local HTTPS server (rustls, a certificate made here with rcgen)
//! in front of the simulator mounted under a prefix. An untrusted, misnamed or expired
//! certificate stops the suite at once with its cause in words, `tls.ca_file` trusts a
//! private CA, `tls.insecure` skips verification with a warning. https endpoints go
//! through reqwest, so these runs also hold the URL rule on that client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cli_support::{perfplan, query};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

const MOUNT: &str = "/gateway/openai";

/// A private CA: its PEM and what signs with it.
fn ca() -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "perfplan test CA");
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A server certificate for `names` signed by `issuer`; `expired`: valid in 2000 only.
fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    names: &[&str],
    expired: bool,
) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2000, 12, 31);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    (cert.der().clone(), der)
}

/// An HTTPS front for `backend` on 127.0.0.1: TLS ends here, bytes go on as they are.
async fn https_front(
    cert: (CertificateDer<'static>, PrivateKeyDer<'static>),
    backend: SocketAddr,
) -> SocketAddr {
    let config = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.0], cert.1)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A refused handshake is the client's business: it reports it.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut up) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    addr
}

async fn mounted_sim() -> SimServer {
    SimServer::start(SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(1)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        mount: Some(MOUNT.into()),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

/// A chat suite of one run against `https://127.0.0.1:PORT/gateway/openai/v1`.
fn plan(dir: &Path, port: u16, endpoint: &str) -> String {
    let text = format!(
        r#"[plan]
name = "tls"
[endpoints.secure]
base_url = "https://127.0.0.1:{port}{MOUNT}/v1"
{endpoint}
[models.m]
[datasets.p]
kind = "prompt"
text = "hello there"
[defaults]
output_tokens = 4
[matrix]
api = ["chat", "embeddings"]
load = {{ concurrency = 2, requests = 4, warmup = 2 }}
"#
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

struct Ran {
    code: Option<i32>,
    text: String,
    took: Duration,
}

fn run(plan: &str, out: &Path) -> Ran {
    let start = Instant::now();
    let o = perfplan(&["run", plan, "--out", out.to_str().unwrap()]);
    Ran {
        code: o.status.code(),
        text: format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        took: start.elapsed(),
    }
}

fn check(plan: &str) -> Ran {
    let start = Instant::now();
    let o = perfplan(&["check", plan]);
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    Ran {
        code: o.status.code(),
        text: text
            .chars()
            .filter(|c| !c.is_whitespace() && !"│┆".contains(*c))
            .collect(),
        took: start.elapsed(),
    }
}

/// Fails at once (a refused certificate is no server still starting) with `words`.
fn assert_refused_at_once(r: &Ran, words: &[&str]) {
    assert_eq!(r.code, Some(3), "{}", r.text);
    assert!(
        r.took < Duration::from_secs(10),
        "took {:?}: {}",
        r.took,
        r.text
    );
    assert!(!r.text.contains("tried for"), "{}", r.text);
    for w in words {
        assert!(r.text.contains(w), "no `{w}` in {}", r.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_ca_is_refused_at_once_and_trusted_with_ca_file() {
    let sim = mounted_sim().await;
    let (ca_pem, issuer) = ca();
    let port = https_front(leaf(&issuer, &["127.0.0.1"], false), sim.addr())
        .await
        .port();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca_pem).unwrap();

    let plain = plan(dir.path(), port, "");
    let r = run(&plain, &dir.path().join("untrusted"));
    assert_refused_at_once(
        &r,
        &["TLS handshake failed", "unknown issuer", "tls.ca_file"],
    );
    let c = check(&plain);
    assert_eq!(c.code, Some(3), "{}", c.text);
    assert!(c.text.contains("unknownissuer"), "{}", c.text);

    // Without the connection test the load meets the same refusal: each record says why.
    let untested = plan(dir.path(), port, "connection_test = false");
    let out = dir.path().join("untested");
    let r = run(&untested, &out);
    assert_eq!(r.code, Some(4), "{}", r.text);
    let errors: Vec<Vec<Option<String>>> =
        query(&out.join("results.db"), "SELECT error FROM requests");
    assert!(!errors.is_empty());
    for e in errors.iter().map(|row| row[0].clone().unwrap_or_default()) {
        assert!(e.contains("unknown issuer"), "{e}");
    }

    let trusted = plan(dir.path(), port, "tls = { ca_file = \"ca.pem\" }");
    let r = run(&trusted, &dir.path().join("trusted"));
    assert_eq!(r.code, Some(0), "{}", r.text);
    assert!(sim.unserved().is_empty(), "{:?}", sim.unserved());
    let paths: Vec<String> = sim.received().iter().map(|q| q.path.clone()).collect();
    assert!(
        paths.contains(&format!("{MOUNT}/v1/chat/completions")),
        "{paths:?}"
    );
    assert!(
        paths.contains(&format!("{MOUNT}/v1/embeddings")),
        "{paths:?}"
    );
    let c = check(&trusted);
    assert_eq!(c.code, Some(0), "{}", c.text);
    assert!(
        c.text
            .contains("tlspassverifiedagainstthebuilt-inrootsandca_file"),
        "{}",
        c.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_accepts_any_certificate_with_a_warning() {
    let sim = mounted_sim().await;
    let (_, issuer) = ca();
    let port = https_front(leaf(&issuer, &["elsewhere.test"], false), sim.addr())
        .await
        .port();
    let dir = tempfile::tempdir().unwrap();
    let path = plan(dir.path(), port, "tls = { insecure = true }");
    let r = run(&path, &dir.path().join("out"));
    assert_eq!(r.code, Some(0), "{}", r.text);
    assert!(
        r.text
            .contains("warning: endpoint `secure`: tls.insecure = true"),
        "{}",
        r.text
    );
    let c = check(&path);
    assert_eq!(c.code, Some(0), "{}", c.text);
    assert!(c.text.contains("tlswarnnotverified"), "{}", c.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_name_and_an_expired_certificate_are_named() {
    let sim = mounted_sim().await;
    let (ca_pem, issuer) = ca();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca_pem).unwrap();
    let trusted = "tls = { ca_file = \"ca.pem\" }";

    let misnamed = https_front(leaf(&issuer, &["wrong.example"], false), sim.addr()).await;
    let r = run(
        &plan(dir.path(), misnamed.port(), trusted),
        &dir.path().join("misnamed"),
    );
    assert_refused_at_once(&r, &["name mismatch", "wrong.example", "127.0.0.1"]);

    let expired = https_front(leaf(&issuer, &["127.0.0.1"], true), sim.addr()).await;
    let r = run(
        &plan(dir.path(), expired.port(), trusted),
        &dir.path().join("expired"),
    );
    assert_refused_at_once(&r, &["certificate has expired"]);
}

#[test]
fn a_ca_file_that_holds_no_certificate_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("junk.pem"), "not a certificate\n").unwrap();
    let path = plan(dir.path(), 1, "tls = { ca_file = \"junk.pem\" }");
    let o = perfplan(&["validate", &path]);
    let err =
        String::from_utf8_lossy(&o.stderr).replace(&dir.path().display().to_string(), "[DIR]");
    assert_eq!(o.status.code(), Some(2), "{err}");
    insta::assert_snapshot!("ca_file_without_certificate", err);
}
