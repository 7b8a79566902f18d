#![doc = include_str!("../README.md")]

mod call;
pub mod record;
mod send;

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::{BuilderVerifierExt, Verifier};

/// The rustls this crate builds configurations with: the same version reqwest accepts in
/// [`reqwest::ClientBuilder::tls_backend_preconfigured`] (another version would make `build` fail
/// with "Unknown TLS backend"). Use it to name certificates for [`tls_config_with_roots`].
pub use rustls;

/// The reqwest this crate builds clients with; a provider uses this one so its major version
/// matches [`client_builder`]'s.
pub use reqwest;

pub use call::{Call, Prepared};
pub use send::transport_error;

/// The protocols offered by ALPN, most preferred first. reqwest does not set ALPN on a
/// preconfigured config, and without it a server never agrees to HTTP/2 over TLS.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// What went wrong building a TLS configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The root certificates could not be used: an extra root is not a valid certificate, or
    /// there are no roots at all (none given and none found on the system).
    #[error("cannot build a certificate verifier from these root certificates")]
    Roots {
        /// The rustls error.
        #[source]
        source: rustls::Error,
    },
}

/// The TLS client configuration every patchbay HTTP client uses: rustls with the `ring` crypto
/// provider (passed explicitly; the process-wide default is neither read nor installed), the
/// safe default protocol versions (TLS 1.2 and 1.3), the platform verifier over the system's
/// root certificates, and ALPN `h2`, `http/1.1`.
///
/// The first call loads the system roots (milliseconds of CPU); every call after it clones the
/// result, which shares the verifier and the TLS session cache. Never panics: on a machine
/// without system roots, it logs a warning once and every `https://` handshake fails with an
/// error saying so, while plain `http://` (a local Ollama, say) still works.
pub fn tls_config() -> ClientConfig {
    static CONFIG: OnceLock<ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let builder = builder();
            let provider = builder.crypto_provider().clone();
            match builder.clone().with_platform_verifier() {
                Ok(builder) => finish(builder.with_no_client_auth()),
                Err(error) => {
                    tracing::warn!(%error, "no system root certificates: every https:// connection will be refused");
                    let verifier = Arc::new(NoRoots { error, provider });
                    finish(
                        builder
                            .dangerous()
                            .with_custom_certificate_verifier(verifier)
                            .with_no_client_auth(),
                    )
                }
            }
        })
        .clone()
}

/// [`tls_config`] that also trusts `extra` root certificates: a private CA (a vLLM server behind
/// a company CA), or a test server's self-signed certificate. The system roots stay trusted.
///
/// Each call loads the system roots again, so build one configuration and reuse it (a
/// `reqwest::Client` made from it is cheap to clone). Fails if a certificate cannot be parsed,
/// or if no roots are left at all.
pub fn tls_config_with_roots(extra: Vec<CertificateDer<'static>>) -> Result<ClientConfig, Error> {
    let builder = builder();
    let verifier = Verifier::new_with_extra_roots(extra, builder.crypto_provider().clone())
        .map_err(|source| Error::Roots { source })?;
    Ok(finish(
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth(),
    ))
}

/// `reqwest::Client::builder()` with [`tls_config`] as its TLS backend: the way every patchbay
/// crate builds a `reqwest::Client` (`reqwest::Client::new()` panics in this workspace, because
/// reqwest is built without a default crypto provider).
///
/// The TLS settings of the returned builder (`add_root_certificate`, `min_tls_version`,
/// `danger_accept_invalid_certs`, `http1_only`'s ALPN...) have no effect: reqwest uses the
/// preconfigured config as it is. For other roots, pass [`tls_config_with_roots`] to
/// `reqwest::Client::builder().tls_backend_preconfigured(..)`.
///
/// Redirects are not followed (`redirect::Policy::none()`): model APIs and MCP servers do not
/// redirect, and following one would send the API key, custom headers and the request body to
/// whatever host a server names. A `3xx` reaches the caller as it is, to turn into an error
/// (`patchbay_core::kit::redirect_error`).
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config())
        .redirect(reqwest::redirect::Policy::none())
}

/// A configured header value (a key, a token, a host's extra header) marked sensitive, so no
/// log or `Debug` of a request shows it; `None` when HTTP does not allow it (a newline...).
///
/// ```
/// let value = patchbay_http::sensitive_header("sk-secret").unwrap();
/// assert!(value.is_sensitive());
/// assert!(patchbay_http::sensitive_header("a\nb").is_none());
/// ```
pub fn sensitive_header(value: &str) -> Option<reqwest::header::HeaderValue> {
    let mut value = reqwest::header::HeaderValue::from_str(value).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Configured headers (a key, a host's extra headers), each checked and marked sensitive
/// ([`sensitive_header`]), added to `headers`. The error is the name of the first one HTTP
/// refuses, by its name or its value (the value is never part of it).
///
/// ```
/// let mut headers = patchbay_http::reqwest::header::HeaderMap::new();
/// patchbay_http::insert_sensitive(&mut headers, [("x-api-key", "sk-secret")]).unwrap();
/// assert!(headers["x-api-key"].is_sensitive());
/// let refused = patchbay_http::insert_sensitive(&mut headers, [("X-Title", "a\nb")]);
/// assert_eq!(refused, Err("X-Title".to_string()));
/// ```
pub fn insert_sensitive<'a>(
    headers: &mut reqwest::header::HeaderMap,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), String> {
    for (name, value) in pairs {
        let header = reqwest::header::HeaderName::try_from(name).map_err(|_| name.to_string())?;
        headers.insert(header, sensitive_header(value).ok_or_else(|| name.to_string())?);
    }
    Ok(())
}

type WantsVerifier = rustls::ConfigBuilder<ClientConfig, rustls::WantsVerifier>;

fn builder() -> WantsVerifier {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    let provider = PROVIDER.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()));
    ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        // Fails only for a provider without cipher suites or key exchange groups for a version;
        // ring's default provider has both for TLS 1.2 and 1.3.
        .expect("ring's default provider supports the default TLS versions")
}

fn finish(mut config: ClientConfig) -> ClientConfig {
    config.alpn_protocols = ALPN.iter().map(|protocol| protocol.to_vec()).collect();
    config
}

/// The verifier of a machine without system roots: refuses every certificate with the reason,
/// so that building a client still works (for `http://`) and the failure names its cause.
#[derive(Debug)]
struct NoRoots {
    error: rustls::Error,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for NoRoots {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Err(rustls::Error::General(format!(
            "no trusted root certificates ({}): install the system's CA bundle or use \
             patchbay_http::tls_config_with_roots",
            self.error
        )))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
