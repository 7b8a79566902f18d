//! Integration tests of patchbay-pgtemp, one binary (ripgrep style). They need the PostgreSQL
//! binaries: without them every test shows as ignored, with a note naming the command that
//! installs them, except under `CI=true`, where they run and fail.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod pdeathsig;
mod server;
mod support;

use libtest_mimic::{Arguments, Trial};

fn main() {
    let args = Arguments::from_args();
    let missing = !patchbay_pgtemp::available() && std::env::var("CI").as_deref() != Ok("true");
    if missing {
        eprintln!(
            "note: PostgreSQL's binaries are missing: `apt-get install postgresql` installs them; \
             the tests below show as ignored"
        );
    }
    let tests: [(&str, fn()); 5] = [
        (
            "pdeathsig::holds_a_server_until_killed",
            pdeathsig::holds_a_server_until_killed,
        ),
        (
            "pdeathsig::killed_process_leaves_no_server",
            pdeathsig::killed_process_leaves_no_server,
        ),
        (
            "server::two_databases_on_the_shared_server_answer_select_1",
            server::two_databases_on_the_shared_server_answer_select_1,
        ),
        (
            "server::server_outlives_the_thread_that_started_it",
            server::server_outlives_the_thread_that_started_it,
        ),
        (
            "server::dropped_private_server_is_stopped",
            server::dropped_private_server_is_stopped,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            Trial::test(name, move || {
                test();
                Ok(())
            })
            .with_ignored_flag(missing)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
