//! The facade's example programs, run the way a user runs them (a `harness = false` binary:
//! when an example binary was not built, its trials show as ignored with the reason, and fail
//! under CI).

mod chat_example;
mod chat_server;
#[cfg(feature = "mcp")]
mod mcp_client;
#[cfg(feature = "mcp")]
mod mcp_conformance;
#[cfg(feature = "mcp")]
mod mcp_serve;

use patchbay_conformance::peers::{self, Peer};

/// One trial per test function, named `module::function`, needing `program`.
macro_rules! trials {
    ($kind:ident, $program:expr => $($module:ident :: $test:ident),+ $(,)?) => {
        vec![$(peers::$kind(concat!(stringify!($module), "::", stringify!($test)), &[$program], $module::$test)),+]
    };
}

fn main() {
    let chat: &Peer = &chat_example::chat_binary();
    #[allow(unused_mut)]
    let mut trials = trials![trial, chat =>
        chat_example::chat_json_prints_one_valid_event_per_line,
        chat_example::chat_streams_text_tools_and_a_usage_line_offline,
        chat_example::chat_names_the_compiled_providers_for_an_unknown_one,
        chat_example::chat_schema_prints_growing_objects_then_the_validated_one,
        chat_example::chat_schema_reports_a_mismatch_with_the_raw_answer,
    ];
    let server: &Peer = &chat_server::chat_server_binary();
    trials.extend(trials![async_trial, server =>
        chat_server::chat_server_streams_pauses_for_approval_and_resumes_over_http,
    ]);
    let (chromium, driver) = (
        patchbay_conformance::browser::chromium(),
        patchbay_conformance::browser::chromedriver(),
    );
    let (chromium_path, driver_path) = (chromium.path().to_owned(), driver.path().to_owned());
    trials.push(peers::async_trial(
        "chat_server::chat_server_page_streams_asks_for_approval_and_resumes_in_chromium",
        &[server, &chromium, &driver],
        move || async move {
            chat_server::chat_server_page_streams_asks_for_approval_and_resumes_in_chromium(
                &chromium_path,
                &driver_path,
            )
            .await;
        },
    ));
    #[cfg(all(feature = "anthropic", feature = "openrouter"))]
    {
        use chat_example::against_mocks;
        trials.extend(trials![async_trial, chat =>
            against_mocks::chat_runs_on_anthropic_against_the_mock,
            against_mocks::chat_runs_on_openrouter_against_the_mock,
        ]);
        #[cfg(feature = "openai")]
        trials.extend(trials![async_trial, chat =>
            against_mocks::chat_runs_on_openai_against_the_mock,
        ]);
        #[cfg(feature = "gemini")]
        trials.extend(trials![async_trial, chat =>
            against_mocks::chat_runs_on_gemini_against_the_mock,
        ]);
    }
    #[cfg(feature = "acp")]
    {
        let agent: &Peer = &chat_example::acp_fake_agent();
        trials.push(peers::trial(
            "chat_example::chat_runs_on_acp_with_the_fake_agent",
            &[chat, agent],
            chat_example::chat_runs_on_acp_with_the_fake_agent,
        ));
    }
    #[cfg(feature = "otel")]
    trials.extend(trials![trial, chat =>
        chat_example::chat_exports_spans_and_metrics_when_an_otlp_endpoint_is_set,
    ]);
    #[cfg(feature = "mcp")]
    {
        let serve: &Peer = &mcp_serve::mcp_serve_binary();
        trials.extend(trials![trial, serve =>
            mcp_serve::mcp_serve_stays_up_without_stdin_and_stops_on_sigterm,
            mcp_serve::mcp_serve_stops_cleanly_on_ctrl_c,
        ]);
        let suite: &Peer = &mcp_conformance::suite();
        trials.push(peers::trial(
            "mcp_conformance::every_server_scenario_passes_against_mcp_serve_conformance",
            &[serve, suite],
            mcp_conformance::every_server_scenario_passes_against_mcp_serve_conformance,
        ));
        // The conformance suite's client scenarios, OAuth included, one trial each.
        let (client, suite) = (mcp_client::mcp_client_binary(), mcp_client::conformance_suite());
        for scenario in mcp_client::SCENARIOS {
            trials.push(peers::trial(
                format!(
                    "mcp_client::conformance_client_scenario_{}",
                    scenario.replace(['-', '/'], "_")
                ),
                &[&client, &suite],
                move || mcp_client::scenario_passes(scenario),
            ));
        }
        trials.push(peers::trial(
            "mcp_client::every_client_scenario_of_the_suite_has_a_trial",
            &[&suite],
            mcp_client::every_client_scenario_of_the_suite_has_a_trial,
        ));
    }
    peers::run(trials)
}
