use std::sync::Arc;

use patchbay::scripted::{Script, ScriptedProvider, Turn};
use patchbay::{Agent, Message, Provider, ProviderExt, Signal, ToolSet};

/// One provider, shared as `Arc<dyn Provider>`, serves 100 concurrent tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_provider_serves_a_hundred_concurrent_tasks() {
    let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(
        Script::new(vec![Turn::text("shared answer for everyone")]).repeating(),
    ));
    let mut tasks = Vec::new();
    for n in 0..100 {
        let provider = provider.clone();
        tasks.push(tokio::spawn(async move {
            if n % 2 == 0 {
                let messages = [Message::user(format!("task {n}"))];
                let response = provider
                    .generate(&messages, &ToolSet::new(), "m", &Signal::new(), None)
                    .await?;
                Ok::<_, patchbay::ProviderError>(response.text())
            } else {
                let agent = Agent::new(provider, "m");
                let outcome = agent
                    .run(vec![Message::user(format!("task {n}"))], Signal::new())
                    .await?;
                Ok(outcome.response.text())
            }
        }));
    }
    for task in tasks {
        let text = task.await.expect("task did not panic").expect("call succeeded");
        assert_eq!(text, "shared answer for everyone");
    }
}
