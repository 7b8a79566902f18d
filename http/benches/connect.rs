//! The connect cost of patchbay's TLS setup, against loopback servers (rustls + ring on both
//! sides, the server on its own one-thread runtime, the client on a current-thread runtime):
//!
//! - `tls_first_request`: build a client and make its first HTTPS request, a full handshake
//!   (a fresh TLS session cache per client) with ALPN `h2`, the server offering h2 (a);
//! - `tls_first_request_h1`: the same with a server that offers only http/1.1;
//! - `tls_first_request_resumed`: the same, but the client's config shares the session cache
//!   with earlier clients, as clones of `tls_config()` do: a resumed TLS 1.3 handshake;
//! - `tls_warm_request`: one request on a kept-alive HTTP/2 connection (b);
//! - `plain_first_request`: build a client and make its first plain-HTTP request, the
//!   baseline (c).
//!
//! Every client is built the way `client_builder()` builds it, from a configuration made once
//! (here `tls_config_with_roots` with the server's self-signed certificate). After criterion, the
//! min and median of interleaved rounds and the ratios to the baseline are printed.
//!
//! `cargo bench -p patchbay-http --bench connect` (`CONNECT_ROUNDS=N`, default 300).

use std::time::{Duration, Instant};

use criterion::Criterion;
use patchbay_http::rustls::{self, ClientConfig};
use tokio::runtime::Runtime;

#[path = "../tests/common.rs"]
#[allow(dead_code)]
mod common;

use common::{Server, TestCert, plain_server, tls_server};

struct Setup {
    server_runtime: Runtime,
    client_runtime: Runtime,
    config: ClientConfig,
    h2: Server,
    h1: Server,
    plain: Server,
}

fn setup() -> Setup {
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let cert = TestCert::new();
    let (h2, h1, plain) = server_runtime.block_on(async {
        (
            tls_server(&cert, &[b"h2", b"http/1.1"]).await,
            tls_server(&cert, &[b"http/1.1"]).await,
            plain_server().await,
        )
    });
    let config = patchbay_http::tls_config_with_roots(vec![cert.cert.clone()]).expect("config");
    Setup {
        server_runtime,
        client_runtime,
        config,
        h2,
        h1,
        plain,
    }
}

/// A client from `config` (as `client_builder()` makes one), with or without the shared
/// session cache.
fn client(config: &ClientConfig, fresh_sessions: bool) -> reqwest::Client {
    let mut config = config.clone();
    if fresh_sessions {
        config.resumption = rustls::client::Resumption::default();
    }
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .build()
        .expect("client")
}

async fn get(client: &reqwest::Client, url: &str) -> usize {
    let response = client.get(url).send().await.expect("request");
    assert_eq!(response.status(), 200);
    response.bytes().await.expect("body").len()
}

type Case<'a> = (&'static str, Box<dyn Fn() -> usize + 'a>);

/// The five measurements, by name; each returns the body length.
fn cases<'a>(setup: &'a Setup, warm: &'a reqwest::Client) -> Vec<Case<'a>> {
    let rt = &setup.client_runtime;
    let config = &setup.config;
    let first = move |url: String, fresh_sessions: bool| -> Box<dyn Fn() -> usize + 'a> {
        Box::new(move || rt.block_on(get(&client(config, fresh_sessions), &url)))
    };
    let warm_url = setup.h2.url("https");
    vec![
        ("tls_first_request", first(setup.h2.url("https"), true)),
        ("tls_first_request_h1", first(setup.h1.url("https"), true)),
        ("tls_first_request_resumed", first(setup.h2.url("https"), false)),
        ("tls_warm_request", Box::new(move || rt.block_on(get(warm, &warm_url)))),
        ("plain_first_request", first(setup.plain.url("http"), true)),
    ]
}

fn criterion(setup: &Setup, warm: &reqwest::Client) {
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("connect");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for (name, case) in cases(setup, warm) {
        group.bench_function(name, |b| b.iter(&case));
    }
    group.finish();
}

/// Interleaved rounds (one of each case per round, so drift on a shared machine hits all
/// alike); min and median per case, ratios to the plain baseline.
fn ratios(setup: &Setup, warm: &reqwest::Client) {
    let rounds = std::env::var("CONNECT_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let cases = cases(setup, warm);
    let mut times = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for ((_, case), times) in cases.iter().zip(&mut times) {
            let started = Instant::now();
            assert!(case() > 0);
            times.push(started.elapsed());
        }
    }
    let stats: Vec<(Duration, Duration)> = times
        .iter_mut()
        .map(|times| {
            times.sort();
            (times[0], times[times.len() / 2])
        })
        .collect();
    let (base_min, base_median) = stats[cases.len() - 1];
    println!("interleaved rounds: {rounds}; ratio = case / plain_first_request (min, median)");
    for ((name, _), (min, median)) in cases.iter().zip(&stats) {
        println!(
            "  {name:<27} min {min:>10.1?}  median {median:>10.1?}  ratio {:>5.2} {:>5.2}",
            min.as_secs_f64() / base_min.as_secs_f64(),
            median.as_secs_f64() / base_median.as_secs_f64(),
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test" || a == "--list");
    let setup = setup();
    let warm = client(&setup.config, true);
    let h2 = setup.h2.url("https");
    let version = setup.client_runtime.block_on(async {
        get(&warm, &h2).await;
        warm.get(&h2).send().await.expect("warm request").version()
    });
    assert_eq!(version, reqwest::Version::HTTP_2, "the warm connection is HTTP/2");
    criterion(&setup, &warm);
    if !quick {
        ratios(&setup, &warm);
    }
    Criterion::default().configure_from_args().final_summary();
    drop(setup.client_runtime);
    drop((setup.h2, setup.h1, setup.plain));
    setup.server_runtime.shutdown_timeout(Duration::from_secs(1));
}
