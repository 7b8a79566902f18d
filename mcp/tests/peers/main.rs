//! patchbay-mcp against real peers (server-everything, Python FastMCP and its client, the MCP
//! Inspector CLI), installed by `.ci/peers/mcp.sh`. A `harness = false` binary: a trial whose
//! peer is missing shows as ignored with the reason, and fails under CI.

#[path = "../common.rs"]
#[allow(dead_code)]
mod common;

mod agent;
mod client;
mod installed;
mod interop;
mod restart;

use patchbay_conformance::peers::{self, Peer};

/// One async trial per test function, named `module::function`, needing `peer`.
macro_rules! trials {
    ($peer:expr => $($module:ident :: $test:ident),+ $(,)?) => {
        vec![$(peers::async_trial(concat!(stringify!($module), "::", stringify!($test)), &[$peer], $module::$test)),+]
    };
}

fn main() {
    let everything: &Peer = &installed::everything_peer();
    let python: &Peer = &installed::python_peer();
    let inspector: &Peer = &installed::inspector_peer();
    let mut trials = trials![everything =>
        client::server_everything_over_stdio,
        client::server_everything_over_streamable_http,
        client::stdio_servers_get_the_context_environment_and_metadata,
        client::prefixed_naming_and_clashes_between_servers,
        client::an_unreachable_port_fails_fast_and_the_rest_go_on,
        client::dropping_the_connections_kills_the_server_and_its_descendants,
        client::a_call_timeout_cancels_the_mcp_request,
        agent::an_agent_calls_a_server_everything_tool,
        agent::a_native_tool_wins_a_clash_and_the_clash_is_reported,
        agent::a_cancelled_run_closes_its_mcp_servers,
        restart::a_stdio_server_that_dies_is_restarted_and_its_tools_come_back,
        restart::a_stdio_server_that_never_comes_back_stays_down_with_a_clear_error,
        restart::version_negotiation_works_both_ways,
    ];
    trials.extend(trials![python =>
        client::python_fastmcp_sees_forwarded_metadata_headers,
        interop::the_python_sdk_client_uses_our_server,
    ]);
    trials.extend(trials![inspector => interop::the_mcp_inspector_cli_uses_our_server]);
    trials.push(peers::trial(
        "client::dropping_outside_any_runtime_still_kills_the_group",
        &[everything],
        client::dropping_outside_any_runtime_still_kills_the_group,
    ));
    peers::run(trials)
}
