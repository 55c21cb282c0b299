//! The one rustls client configuration of an endpoint's `tls` settings, shared by every
//! HTTP client perfplan builds for it (the lean HTTP/1.1 client's connections and
//! reqwest's): the built-in roots (Mozilla's, webpki-roots) and `ca_file`, or no
//! verification (`insecure`); the client certificate of `cert_file` + `key_file`; ALPN
//! `http/1.1`; TLS 1.3 and 1.2 with the ring provider; and the session resumption the
//! caller asks for. Knows nothing about connections or requests.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::tls::{read_ca_file, read_cert_file, read_key_file, Tls, TlsError};

/// The one application protocol offered (ALPN): the load and the control plane speak
/// HTTP/1.1.
pub(crate) const ALPN_HTTP1: &[u8] = b"http/1.1";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

impl Tls {
    /// The rustls client configuration of these settings, resuming sessions by
    /// `resumption` (`Resumption::disabled()`: every handshake a full one).
    pub(crate) fn client_config(&self, resumption: Resumption) -> Result<ClientConfig, TlsError> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| TlsError::Config(Box::new(e)))?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        } else {
            builder.with_root_certificates(self.roots()?)
        };
        let mut config = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                let identity = Arc::new(SingleCertAndKey::from(client_identity(cert, key)?));
                builder.with_client_cert_resolver(identity)
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err(TlsError::HalfIdentity),
        };
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        config.resumption = resumption;
        Ok(config)
    }

    /// The built-in roots and the certificates of `ca_file`.
    fn roots(&self) -> Result<RootCertStore, TlsError> {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = &self.ca_file {
            for cert in read_ca_file(path)? {
                roots.add(cert).map_err(|source| TlsError::Root {
                    path: path.clone(),
                    source: Box::new(source),
                })?;
            }
        }
        Ok(roots)
    }
}

/// The client certificate of `cert` (a PEM chain, the client's own first) and its private
/// key `key`: both read and parsed, the key the certificate's.
pub(crate) fn client_identity(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = read_cert_file(cert)?;
    CertifiedKey::from_der(chain, read_key_file(key)?, &provider()).map_err(|source| {
        TlsError::Identity {
            files: format!(
                "cert_file {} and key_file {}",
                cert.display(),
                key.display()
            ),
            source: Box::new(source),
        }
    })
}

/// `insecure = true`: any certificate is accepted; the handshake's signatures are still
/// checked (the connection is encrypted to whoever holds the certificate's key).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_identity_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tls = Tls {
            cert_file: Some(dir.path().join("client.pem")),
            ..Tls::default()
        };
        let e = tls.client_config(Resumption::default()).unwrap_err();
        assert!(matches!(e, TlsError::HalfIdentity), "{e}");
        let plain = Tls::default()
            .client_config(Resumption::disabled())
            .unwrap();
        assert_eq!(plain.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
