//! TLS of an endpoint: the certificates trusted besides the built-in roots (`ca_file`), or
//! no verification at all (`insecure`), and a client certificate (`cert_file` + `key_file`),
//! applied to every HTTP client perfplan builds through one rustls configuration
//! (`tls_config`); and a failed handshake told in words (unknown issuer, wrong host name,
//! expired) from the rustls error inside an error chain.

use std::error::Error;
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::CertificateError;

/// How the server's certificate is checked, and the client's own certificate. By default
/// against the built-in roots (Mozilla's, as shipped with webpki-roots), no client
/// certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// PEM file with more CA certificates to trust (a private CA, a self-signed server).
    pub ca_file: Option<PathBuf>,
    /// Accept any certificate: the connection is encrypted but the server is not verified.
    pub insecure: bool,
    /// PEM file of the client's certificate chain (its own certificate first), presented
    /// to a server that asks for one (mutual TLS); set together with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// PEM file of the private key of `cert_file`'s certificate (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
}

/// One of the files of the `tls` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFile {
    CaFile,
    CertFile,
    KeyFile,
}

impl TlsFile {
    /// What the file holds, and its PEM label.
    fn holds(self) -> (&'static str, &'static str) {
        match self {
            TlsFile::CaFile | TlsFile::CertFile => ("certificate", "CERTIFICATE"),
            TlsFile::KeyFile => ("private key", "PRIVATE KEY"),
        }
    }
}

impl std::fmt::Display for TlsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsFile::CaFile => "ca_file",
            TlsFile::CertFile => "cert_file",
            TlsFile::KeyFile => "key_file",
        })
    }
}

/// Why the TLS settings could not be applied. (Large causes are boxed: every error that
/// carries one stays small.)
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {file} {}", path.display())]
    Read {
        file: TlsFile,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file} {} holds no PEM {} (`-----BEGIN {}-----`)", path.display(), file.holds().0, file.holds().1)]
    Empty { file: TlsFile, path: PathBuf },
    #[error("{file} {} is not a valid PEM file", path.display())]
    Parse {
        file: TlsFile,
        path: PathBuf,
        #[source]
        source: Box<pem::Error>,
    },
    #[error("ca_file {} holds a certificate that cannot be trusted as a CA", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: Box<rustls::Error>,
    },
    #[error("`tls.cert_file` and `tls.key_file` go together: set both, or neither")]
    HalfIdentity,
    /// `files`: "cert_file X and key_file Y".
    #[error("{files} do not make a client certificate")]
    Identity {
        files: String,
        #[source]
        source: Box<rustls::Error>,
    },
    #[error("the TLS configuration could not be built")]
    Config(#[source] Box<rustls::Error>),
}

fn read(file: TlsFile, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        file,
        path: path.to_path_buf(),
        source,
    })
}

/// The certificates of the PEM file `path` (at least one).
fn read_certs(file: TlsFile, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(file, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Parse {
            file,
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            file,
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The certificates of a `ca_file` (at least one).
pub(crate) fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    read_certs(TlsFile::CaFile, path)
}

/// The client's certificate chain of a `cert_file` (at least one certificate).
pub(crate) fn read_cert_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    read_certs(TlsFile::CertFile, path)
}

/// The private key of a `key_file` (the first one in it).
pub(crate) fn read_key_file(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let file = TlsFile::KeyFile;
    let bytes = read(file, path)?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) => Err(TlsError::Empty {
            file,
            path: path.to_path_buf(),
        }),
        Err(source) => Err(TlsError::Parse {
            file,
            path: path.to_path_buf(),
            source: Box::new(source),
        }),
    }
}

impl Tls {
    /// The reqwest builder with these settings: the same rustls configuration as the lean
    /// client's (`client_config`), with rustls's default session resumption.
    pub fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, TlsError> {
        let config = self.client_config(rustls::client::Resumption::default())?;
        Ok(builder.use_preconfigured_tls(config))
    }

    /// How certificates are checked, in words (for `perfplan check`).
    pub(crate) fn describe(&self) -> String {
        let server = match (&self.ca_file, self.insecure) {
            (_, true) => "not verified (insecure = true): any certificate is accepted".into(),
            (Some(p), false) => format!(
                "verified against the built-in roots and ca_file {}",
                p.display()
            ),
            (None, false) => "verified against the built-in roots".to_string(),
        };
        match &self.cert_file {
            Some(cert) => format!("{server}; client certificate {}", cert.display()),
            None => server,
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
        // A self-signed certificate made as a CA (`openssl req -x509` marks it `CA:TRUE`
        // unless told otherwise): trusted, yet no server certificate.
        other if format!("{other:?}").contains("CaUsedAsEndEntity") => {
            "the server's certificate is a CA certificate (basicConstraints CA:TRUE), which \
             cannot identify a server: make it with `-addext basicConstraints=critical,CA:FALSE`, \
             or have that CA sign a server certificate"
                .into()
        }
        other => format!("the server's certificate was refused ({other:?}); {TRUST_HINT}"),
    }
}

#[cfg(test)]
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
        let e = read_key_file(&junk).unwrap_err();
        assert!(
            e.to_string().contains("key_file") && e.to_string().contains("no PEM private key"),
            "{e}"
        );
        let e = read_cert_file(&missing).unwrap_err();
        assert!(e.to_string().contains("cannot read cert_file"), "{e}");
    }
}
