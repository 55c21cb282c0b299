//! TLS through the CLI: a local HTTPS server (rustls, a certificate made here with rcgen)
//! in front of the simulator mounted under a prefix. An untrusted, misnamed or expired
//! certificate stops the suite at once with its cause in words, `tls.ca_file` trusts a
//! private CA, `tls.insecure` skips verification with a warning. The load of https
//! endpoints goes through the lean HTTP/1.1 client (each failed request's record names the
//! refusal in the same words), the connection test and `check` through reqwest: both hold
//! the URL rule, and both take their TLS from the one rustls configuration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod tls_support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cli_support::{perfplan, query};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use tls_support::{ca, leaf, Identity};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::TlsAcceptor;

const MOUNT: &str = "/gateway/openai";

/// An HTTPS front for `backend` on 127.0.0.1: TLS ends here, bytes go on as they are.
async fn https_front(cert: Identity, backend: SocketAddr) -> SocketAddr {
    https_front_with(tls_support::server(cert), backend).await
}

/// `https_front` with the server configuration `config`.
async fn https_front_with(
    config: tokio_rustls::rustls::ServerConfig,
    backend: SocketAddr,
) -> SocketAddr {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_is_presented_from_cert_file_and_key_file() {
    let sim = mounted_sim().await;
    let (ca_pem, issuer) = ca();
    let (client_ca_pem, client_issuer) = ca();
    let client_ca =
        tokio_rustls::rustls::pki_types::CertificateDer::from_pem_slice(client_ca_pem.as_bytes())
            .unwrap();
    let config = tls_support::server_requiring_client_certificates(
        leaf(&issuer, &["127.0.0.1"], false),
        client_ca,
    );
    let port = https_front_with(config, sim.addr()).await.port();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca_pem).unwrap();
    let (_, cert_pem, key_pem) = tls_support::leaf_pem(&client_issuer, &["perfplan"], false);
    std::fs::write(dir.path().join("client.pem"), cert_pem).unwrap();
    std::fs::write(dir.path().join("client.key"), key_pem).unwrap();

    // Without a client certificate the server's refusal is named, at once.
    let without = plan(dir.path(), port, "tls = { ca_file = \"ca.pem\" }");
    let r = run(&without, &dir.path().join("without"));
    assert_refused_at_once(&r, &["TLS handshake failed", "client certificate"]);
    // The load meets the same refusal without the connection test: each record says so.
    let untested = plan(
        dir.path(),
        port,
        "connection_test = false\ntls = { ca_file = \"ca.pem\" }",
    );
    let out = dir.path().join("untested");
    let r = run(&untested, &out);
    assert_eq!(r.code, Some(4), "{}", r.text);
    let errors: Vec<Vec<Option<String>>> =
        query(&out.join("results.db"), "SELECT error FROM requests");
    assert!(!errors.is_empty());
    for e in errors.iter().map(|row| row[0].clone().unwrap_or_default()) {
        assert!(e.contains("client certificate"), "{e}");
    }

    let with = plan(
        dir.path(),
        port,
        "tls = { ca_file = \"ca.pem\", cert_file = \"client.pem\", key_file = \"client.key\" }",
    );
    let r = run(&with, &dir.path().join("with"));
    assert_eq!(r.code, Some(0), "{}", r.text);
    let c = check(&with);
    assert_eq!(c.code, Some(0), "{}", c.text);
    assert!(c.text.contains("clientcertificate"), "{}", c.text);
}

#[test]
fn a_half_client_identity_and_a_key_file_without_a_key_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("junk.pem"), "not a key\n").unwrap();
    let half = plan(dir.path(), 1, "tls = { cert_file = \"junk.pem\" }");
    let o = perfplan(&["validate", &half]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`tls.cert_file` needs `tls.key_file`"),
        "{err}"
    );
    let keyless = plan(
        dir.path(),
        1,
        "tls = { cert_file = \"junk.pem\", key_file = \"junk.pem\" }",
    );
    let o = perfplan(&["validate", &keyless]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("holds no PEM private key"), "{err}");
    assert!(err.contains("holds no PEM certificate"), "{err}");
    // A key that is not the certificate's.
    let (_, issuer) = ca();
    let (_, cert, _) = tls_support::leaf_pem(&issuer, &["a"], false);
    let (_, _, other_key) = tls_support::leaf_pem(&issuer, &["b"], false);
    std::fs::write(dir.path().join("c.pem"), cert).unwrap();
    std::fs::write(dir.path().join("k.pem"), other_key).unwrap();
    let mismatched = plan(
        dir.path(),
        1,
        "tls = { cert_file = \"c.pem\", key_file = \"k.pem\" }",
    );
    let o = perfplan(&["validate", &mismatched]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("do not make a client certificate")
            && err.contains("private key of cert_file"),
        "{err}"
    );
}
