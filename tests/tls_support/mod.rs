//! Certificates made in the test (rcgen): a private CA, server certificates it signs (for
//! names, or expired), a client certificate, and rustls server configurations of them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate and its private key.
pub type Identity = (CertificateDer<'static>, PrivateKeyDer<'static>);

/// A private CA: its PEM and what signs with it.
pub fn ca() -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "perfplan test CA");
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A certificate for `names` signed by `issuer`; `expired`: valid in 2000 only.
pub fn leaf(issuer: &Issuer<'static, KeyPair>, names: &[&str], expired: bool) -> Identity {
    leaf_pem(issuer, names, expired).0
}

/// `leaf`, with its certificate and key as PEM too.
pub fn leaf_pem(
    issuer: &Issuer<'static, KeyPair>,
    names: &[&str],
    expired: bool,
) -> (Identity, String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2000, 12, 31);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    ((cert.der().clone(), der), cert.pem(), key.serialize_pem())
}

/// A server configuration for `identity`, ALPN http/1.1, resumption offered (rustls's
/// defaults: stateful sessions, two TLS 1.3 tickets a connection).
pub fn server(identity: Identity) -> rustls::ServerConfig {
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![identity.0], identity.1)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// `server`, refusing every resumption: no session kept, no ticket sent.
pub fn server_without_resumption(identity: Identity) -> rustls::ServerConfig {
    let mut config = server(identity);
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    config
}

/// `server`, asking every client for a certificate signed by `client_ca` (mutual TLS).
/// TLS 1.2 only: there a refused client certificate fails the handshake itself, where TLS
/// 1.3 tells the client after its side of the handshake is over, in a race with the reset
/// of the request it has sent meanwhile (the client handles both; a test needs one).
pub fn server_requiring_client_certificates(
    identity: Identity,
    client_ca: CertificateDer<'static>,
) -> rustls::ServerConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(client_ca).unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .build()
        .unwrap();
    let mut config =
        rustls::ServerConfig::builder_with_protocol_versions(&[&rustls::version::TLS12])
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![identity.0], identity.1)
            .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// A self-signed certificate for `names` that is also a CA (as `openssl req -x509` makes
/// by default): its identity and PEM.
pub fn self_signed_ca(names: &[&str]) -> (Identity, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    ((cert.der().clone(), der), cert.pem())
}
