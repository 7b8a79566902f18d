//! Loopback servers for the tests and the benchmark: HTTPS with a self-signed certificate made
//! by rcgen (tokio-rustls + hyper, HTTP/1.1 and HTTP/2), and plain HTTP.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use patchbay_http::rustls;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// A self-signed certificate for `127.0.0.1` and `localhost`, and its key.
pub(crate) struct TestCert {
    pub(crate) cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

impl TestCert {
    pub(crate) fn new() -> Self {
        let made = rcgen::generate_simple_self_signed(["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("rcgen makes a certificate");
        Self {
            cert: made.cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()).into(),
        }
    }
}

/// A server on an OS-assigned loopback port; stops when dropped.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Server {
    /// `https://127.0.0.1:PORT/` or `http://...`.
    pub(crate) fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}/", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An HTTPS server with `cert`, offering the ALPN `protocols` (most preferred first; empty: none).
pub(crate) async fn tls_server(cert: &TestCert, protocols: &[&[u8]]) -> Server {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.clone()], cert.key.clone_key())
        .expect("server certificate");
    config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    serve(move |tcp| {
        let acceptor = acceptor.clone();
        async move {
            // A refused handshake (the client does not trust us) just ends the connection.
            if let Ok(tls) = acceptor.accept(tcp).await {
                http(tls).await;
            }
        }
    })
    .await
}

/// A plain HTTP server (HTTP/1.1, or HTTP/2 with prior knowledge).
pub(crate) async fn plain_server() -> Server {
    serve(http).await
}

async fn serve<F, Fut>(handle: F) -> Server
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            tokio::spawn(handle(tcp));
        }
    });
    Server { addr, task }
}

/// Answers every request with 200 and the HTTP version it came in (`HTTP/2.0`, `HTTP/1.1`).
async fn http(io: impl AsyncRead + AsyncWrite + Unpin + Send + 'static) {
    let service = service_fn(|request: Request<Incoming>| async move {
        Ok::<_, Infallible>(Response::new(format!("{:?}", request.version())))
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await;
}
