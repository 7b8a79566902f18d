//! Starting servers, creating databases, stopping.

use std::time::{Duration, Instant};

use patchbay_pgtemp::PgServer;

use crate::support::{postgres_installed, psql, running};

pub(crate) fn two_databases_on_the_shared_server_answer_select_1() {
    if !postgres_installed() {
        return;
    }
    let server = PgServer::shared().unwrap();
    assert!(
        std::ptr::eq(server, PgServer::shared().unwrap()),
        "one shared server per process"
    );
    let first = server.create_database("pgtemp_test").unwrap();
    let second = server.create_database("pgtemp_test").unwrap();
    assert_ne!(first, second);
    let prefix = format!("postgres://{}@127.0.0.1:{}/", server.user(), server.port());
    for url in [&first, &second, &server.admin_url()] {
        assert!(url.starts_with(&prefix), "{url}");
        assert_eq!(psql(server, url, "select 1"), "1");
    }
    let name = psql(server, &first, "select current_database()");
    assert!(first.ends_with(&format!("/{name}")), "{first} is database {name}");
}

pub(crate) fn server_outlives_the_thread_that_started_it() {
    if !postgres_installed() {
        return;
    }
    // libtest runs each test on its own thread: a server spawned from it with the
    // parent-death signal would die when the test returned.
    let started = Instant::now();
    let server = std::thread::spawn(|| PgServer::start().unwrap()).join().unwrap();
    eprintln!("private server (initdb + start) in {:?}", started.elapsed());
    std::thread::sleep(Duration::from_millis(300));
    assert!(running(server.pid()));
    assert_eq!(psql(&server, &server.admin_url(), "select 1"), "1");
}

pub(crate) fn dropped_private_server_is_stopped() {
    if !postgres_installed() {
        return;
    }
    let server = PgServer::start().unwrap();
    let pid = server.pid();
    let url = server.create_database("dropped").unwrap();
    assert_eq!(psql(&server, &url, "select 1"), "1");
    let started = Instant::now();
    drop(server);
    eprintln!("private server stopped in {:?}", started.elapsed());
    assert!(!running(pid), "postmaster {pid} still runs after drop");
}
