//! The shared TLS setup against loopback servers: verification runs, private roots work, ALPN
//! reaches HTTP/2, and clients are cheap to build.

use std::error::Error as _;
use std::sync::Arc;

use patchbay_http::rustls::{self, CertificateError};
use reqwest::Version;

use crate::common::{TestCert, plain_server, tls_server};

const BOTH: &[&[u8]] = &[b"h2", b"http/1.1"];

/// The first `rustls::Error` in an error's chain, looking inside `io::Error`s (whose `source`
/// skips the error they wrap).
fn rustls_error(error: &(dyn std::error::Error + 'static)) -> Option<rustls::Error> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(found) = error.downcast_ref::<rustls::Error>() {
            return Some(found.clone());
        }
        if let Some(inner) = error.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref())
            && let Some(found) = rustls_error(inner)
        {
            return Some(found);
        }
        next = error.source();
    }
    None
}

#[tokio::test]
async fn a_self_signed_server_is_refused_by_the_default_client() {
    let cert = TestCert::new();
    let server = tls_server(&cert, BOTH).await;
    let client = patchbay_http::client_builder().build().expect("client builds");

    let error = client
        .get(server.url("https"))
        .send()
        .await
        .expect_err("untrusted certificate");

    assert!(error.is_connect(), "{error:?}");
    assert_eq!(
        rustls_error(&error),
        Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)),
        "{error:?}"
    );
}

#[tokio::test]
async fn extra_roots_are_trusted_and_alpn_negotiates_http2() {
    let cert = TestCert::new();
    let server = tls_server(&cert, BOTH).await;
    let tls = patchbay_http::tls_config_with_roots(vec![cert.cert.clone()]).expect("config with the test root");
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .expect("client builds");

    let response = client.get(server.url("https")).send().await.expect("trusted now");

    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), Version::HTTP_2);
    assert_eq!(response.text().await.expect("body"), "HTTP/2.0", "the server's view");
}

#[tokio::test]
async fn a_server_without_h2_gets_http1() {
    let cert = TestCert::new();
    let server = tls_server(&cert, &[b"http/1.1"]).await;
    let tls = patchbay_http::tls_config_with_roots(vec![cert.cert.clone()]).expect("config with the test root");
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .expect("client builds");

    let response = client.get(server.url("https")).send().await.expect("trusted");

    assert_eq!(response.version(), Version::HTTP_11);
    assert_eq!(response.text().await.expect("body"), "HTTP/1.1");
}

#[test]
fn a_bad_extra_root_is_a_typed_error() {
    let garbage = rustls::pki_types::CertificateDer::from(vec![1, 2, 3]);

    let error = patchbay_http::tls_config_with_roots(vec![garbage]).expect_err("not a certificate");

    assert!(matches!(error, patchbay_http::Error::Roots { .. }), "{error:?}");
    assert!(error.source().is_some(), "the rustls error is kept");
}

#[tokio::test]
async fn a_hundred_clients_share_one_setup_and_all_work() {
    let server = plain_server().await;
    let first = patchbay_http::tls_config();

    for _ in 0..100 {
        let config = patchbay_http::tls_config();
        assert!(Arc::ptr_eq(config.crypto_provider(), first.crypto_provider()));
        assert_eq!(config.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
        let client = patchbay_http::client_builder().build().expect("client builds");
        let response = client.get(server.url("http")).send().await.expect("plain request");
        assert_eq!(response.status(), 200);
    }
}
