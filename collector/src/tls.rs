//! The TLS of `--ca-cert`: the file's certificates trusted as roots beside the public ones, and
//! a certificate that is its own CA (a self-signed test server's, `openssl req -x509`'s
//! `CA:TRUE`) accepted when the server presents exactly it, as curl and OpenSSL accept it where
//! WebPKI's rules refuse a CA certificate used as a server's.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

use crate::error::CollectorError;

/// A client TLS configuration that trusts the PEM certificates of `--ca-cert` (and the public
/// roots, as without it).
pub fn trusting(pem: &[u8]) -> Result<rustls::ClientConfig, CollectorError> {
    let bad = |why: String| CollectorError::InvalidArgument(format!("--ca-cert is not a PEM certificate: {why}"));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("it holds no CERTIFICATE block".to_string()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    // A certificate that cannot be a root is still pinned below.
    roots.add_parsable_certificates(certs.iter().cloned());
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Trusting { webpki, pinned: certs }))
        .with_no_client_auth();
    // HTTP/1.1, as reqwest's own configuration offers it.
    let mut config = config;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// WebPKI's verification, and past it the certificates of the file, each accepted when the
/// server presents exactly it and WebPKI refused it only for want of an issuer (a CA used as a
/// server's certificate, a self-signed one): its name is still checked against the URL's host,
/// and the handshake's signature against its key; its dates are not.
#[derive(Debug)]
struct Trusting {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for Trusting {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let pinned = || self.pinned.iter().any(|c| c.as_ref() == end_entity.as_ref());
        let named = || {
            webpki::EndEntityCert::try_from(end_entity)
                .is_ok_and(|cert| cert.verify_is_valid_for_subject_name(server_name).is_ok())
        };
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::Other(_)))
                if pinned() && named() =>
            {
                Ok(ServerCertVerified::assertion())
            }
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
