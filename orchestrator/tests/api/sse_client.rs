//! A small server-sent events reader for the API tests.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;

use super::LIMIT;

/// One server-sent message.
#[derive(Debug, Default)]
pub(crate) struct Message {
    /// The `event:` field.
    pub(crate) event: Option<String>,
    /// The `id:` field.
    pub(crate) id: Option<String>,
    /// The `data:` lines, joined.
    pub(crate) data: String,
}

impl Message {
    pub(crate) fn seq(&self) -> Option<i64> {
        self.id.as_deref().and_then(|id| id.parse().ok())
    }

    pub(crate) fn json(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.data)
    }
}

/// Reads an event stream message by message, each read bounded by [`LIMIT`].
pub(crate) struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Events {
    pub(crate) async fn open(
        client: &reqwest::Client,
        url: String,
        last_event_id: Option<i64>,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let mut request = client.get(url).timeout(Duration::from_secs(120));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await?;
        assert_eq!(response.status(), StatusCode::OK);
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Ok(Self {
            body: response.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec())).boxed(),
            buffer: String::new(),
        })
    }

    /// The next message (keep-alive comments skipped), or `None` when the stream ended.
    pub(crate) async fn next(&mut self) -> Result<Option<Message>, Box<dyn std::error::Error>> {
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..at + 2).collect();
                let mut message = Message::default();
                let mut any = false;
                for line in block.lines() {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "event" => message.event = Some(value.to_owned()),
                        "id" => message.id = Some(value.to_owned()),
                        "data" => {
                            if any {
                                message.data.push('\n');
                            }
                            message.data.push_str(value);
                            any = true;
                        }
                        _ => {}
                    }
                }
                if any || message.event.is_some() {
                    return Ok(Some(message));
                }
                continue;
            }
            match tokio::time::timeout(LIMIT, self.body.next()).await {
                Err(_) => return Err("no message within the limit".into()),
                Ok(None) => return Ok(None),
                Ok(Some(chunk)) => self.buffer.push_str(std::str::from_utf8(&chunk?)?),
            }
        }
    }

    /// Messages up to and including the first whose event matches `until`.
    pub(crate) async fn until(
        &mut self,
        until: impl Fn(&Message) -> bool,
    ) -> Result<Vec<Message>, Box<dyn std::error::Error>> {
        let mut seen = Vec::new();
        loop {
            let message = self.next().await?.ok_or("the stream ended first")?;
            let stop = until(&message);
            seen.push(message);
            if stop {
                return Ok(seen);
            }
        }
    }
}

/// Whether this is the stream's final `end` message.
pub(crate) fn is_end(message: &Message) -> bool {
    message.event.as_deref() == Some("end")
}

/// The `type` of the patchbay event a message carries.
pub(crate) fn event_type(message: &Message) -> Option<String> {
    message.json().ok()?["event"]["type"].as_str().map(str::to_owned)
}
