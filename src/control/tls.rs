//! TLS of an endpoint: the certificates trusted besides the built-in roots (`ca_file`), or
//! no verification at all (`insecure`), applied to every HTTP client perfplan builds; and a
//! failed handshake told in words (unknown issuer, wrong host name, expired) from the
//! rustls error inside an error chain.

use std::error::Error;
use std::path::{Path, PathBuf};

use rustls::CertificateError;

/// How the server's certificate is checked. By default against the built-in roots
/// (Mozilla's, as shipped with webpki-roots).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// PEM file with more CA certificates to trust (a private CA, a self-signed server).
    pub ca_file: Option<PathBuf>,
    /// Accept any certificate: the connection is encrypted but the server is not verified.
    pub insecure: bool,
}

/// Why the TLS settings could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read ca_file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ca_file {} holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)", path.display())]
    Empty { path: PathBuf },
    #[error("ca_file {} is not a valid PEM certificate bundle", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: reqwest::Error,
    },
}

/// The certificates of a PEM file (at least one).
pub fn read_ca_file(path: &Path) -> Result<Vec<reqwest::Certificate>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let certs =
        reqwest::Certificate::from_pem_bundle(&bytes).map_err(|source| TlsError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

impl Tls {
    /// The builder with these settings.
    pub fn apply(
        &self,
        mut builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, TlsError> {
        if let Some(path) = &self.ca_file {
            for cert in read_ca_file(path)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        if self.insecure {
            builder = builder.danger_accept_invalid_certs(true);
        }
        Ok(builder)
    }

    /// How certificates are checked, in words (for `perfplan check`).
    pub fn describe(&self) -> String {
        match (&self.ca_file, self.insecure) {
            (_, true) => "not verified (insecure = true): any certificate is accepted".into(),
            (Some(p), false) => format!(
                "verified against the built-in roots and ca_file {}",
                p.display()
            ),
            (None, false) => "verified against the built-in roots".into(),
        }
    }
}

/// What went wrong in a TLS handshake, in words, when `e` or one of its causes is a
/// rustls error; `None` for any other error.
pub fn tls_problem(e: &(dyn Error + 'static)) -> Option<String> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(r) = as_rustls(err) {
            return Some(words(r));
        }
        current = err.source();
    }
    None
}

/// A rustls error, directly or inside `io::Error`s (tokio-rustls reports it in one, and
/// hyper-rustls wraps that in another).
fn as_rustls<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(r) = e.downcast_ref::<rustls::Error>() {
        return Some(r);
    }
    let mut io = e.downcast_ref::<std::io::Error>()?;
    for _ in 0..8 {
        let inner = io.get_ref()?;
        if let Some(r) = inner.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        io = inner.downcast_ref::<std::io::Error>()?;
    }
    None
}

const TRUST_HINT: &str =
    "set `tls.ca_file` to the CA's PEM file, or `tls.insecure = true` to skip verification";

fn words(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => certificate_words(c),
        rustls::Error::AlertReceived(alert) => format!(
            "the server ended the TLS handshake with the alert `{alert:?}` (it may want a client certificate, or no cipher is shared)"
        ),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the server's answer is not TLS (is it a plain http:// server?)".into()
        }
        rustls::Error::NoCertificatesPresented => "the server presented no certificate".into(),
        other => format!("the TLS handshake failed ({other})"),
    }
}

fn certificate_words(c: &CertificateError) -> String {
    match c {
        CertificateError::UnknownIssuer => format!(
            "the server's certificate is issued by an unknown authority (unknown issuer: self-signed or a private CA); {TRUST_HINT}"
        ),
        CertificateError::NotValidForName => format!(
            "the server's certificate is not valid for this host name (name mismatch); use the name it was issued for in base_url, or {}",
            "`tls.insecure = true`"
        ),
        CertificateError::NotValidForNameContext { expected, presented } => format!(
            "the server's certificate is not valid for `{}` (name mismatch: it names {}); use one of those names in base_url, or `tls.insecure = true`",
            expected.to_str(),
            if presented.is_empty() { "no host".to_string() } else { presented.join(", ") }
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the server's certificate has expired; renew it, or set `tls.insecure = true`".into()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet (check the clocks of both machines)".into()
        }
        CertificateError::Revoked => "the server's certificate has been revoked".into(),
        CertificateError::BadSignature => {
            "the server's certificate has a bad signature".into()
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "the server's certificate is not meant for a TLS server".into()
        }
        other => format!("the server's certificate was refused ({other:?}); {TRUST_HINT}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn finds_the_rustls_cause_inside_an_io_error() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        );
        let words = tls_problem(&Outer(io)).unwrap();
        assert!(words.contains("unknown issuer"), "{words}");
        assert!(words.contains("tls.ca_file"), "{words}");
        let nested = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::NotValidForName),
        ));
        assert!(tls_problem(&Outer(nested))
            .unwrap()
            .contains("name mismatch"));
        let plain = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(tls_problem(&Outer(plain)), None);
        let expired = rustls::Error::InvalidCertificate(CertificateError::Expired);
        assert!(tls_problem(&expired).unwrap().contains("expired"));
    }

    #[test]
    fn a_bad_ca_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let e = read_ca_file(&missing).unwrap_err();
        assert!(e.to_string().contains("nope.pem"), "{e}");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = read_ca_file(&junk).unwrap_err();
        assert!(
            e.to_string().contains("junk.pem") && e.to_string().contains("no PEM"),
            "{e}"
        );
    }
}
