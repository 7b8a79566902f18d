//! Requests a server makes of the host: elicitation (`elicitation/create`, a question for the
//! user) and sampling (`sampling/createMessage`, a model call). Both are declined unless the
//! host sets a handler on the client set; the same handlers answer the input requests of a
//! 2026-07-28 `input_required` result (see [`fulfil`]).

// Sampling is deprecated by SEP-2577 in rmcp's model; MCP 2025-11-25 still has it.
#![allow(deprecated)]

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputResponses, JsonObject, ListRootsResult,
};
use serde_json::Value;

/// Answers a server's `elicitation/create`: ask the user, return what they said.
///
/// Without a handler patchbay declines every request (and does not announce the capability).
#[async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// Answer server `server` (its configured name). An `Err` reaches the server as the
    /// JSON-RPC error of its request.
    async fn elicit(&self, server: &str, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData>;
}

/// Answers a server's `sampling/createMessage`: run a model call for it.
///
/// Without a handler the request fails with "method not found" (and the capability is not
/// announced). [`ProviderSampling`](crate::ProviderSampling) answers with a patchbay provider.
#[async_trait]
pub trait SamplingHandler: Send + Sync {
    /// Answer server `server` (its configured name).
    async fn create_message(
        &self,
        server: &str,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData>;
}

/// An [`ElicitationHandler`] that accepts every form with its schema's defaults (SEP-1034)
/// and declines URL elicitations: for tests, unattended runs and the conformance client.
///
/// ```
/// use patchbay_mcp::schema_defaults;
/// use patchbay_mcp::rmcp::model::ElicitationSchema;
/// let schema: ElicitationSchema = serde_json::from_value(serde_json::json!({
///     "type": "object",
///     "properties": { "name": { "type": "string", "default": "Ada" }, "age": { "type": "integer" } }
/// })).unwrap();
/// assert_eq!(serde_json::Value::Object(schema_defaults(&schema)), serde_json::json!({ "name": "Ada" }));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AcceptDefaults;

#[async_trait]
impl ElicitationHandler for AcceptDefaults {
    async fn elicit(&self, _server: &str, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        Ok(match request {
            ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
                ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(schema_defaults(&requested_schema)))
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

/// The `default` of every property of a form's schema that has one.
pub fn schema_defaults(schema: &ElicitationSchema) -> JsonObject {
    let mut defaults = JsonObject::new();
    let Ok(Value::Object(schema)) = serde_json::to_value(schema) else {
        return defaults;
    };
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                defaults.insert(name.clone(), default.clone());
            }
        }
    }
    defaults
}

/// The host's handlers for one connection set.
#[derive(Clone, Default)]
pub(crate) struct Interact {
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
}

impl Interact {
    /// Answer an elicitation: the handler's answer, or a decline.
    pub(crate) async fn elicit(&self, server: &str, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        match &self.elicitation {
            Some(handler) => handler.elicit(server, request).await,
            None => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    /// Answer a sampling request: the handler's answer, or "method not found".
    pub(crate) async fn sample(
        &self,
        server: &str,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        match &self.sampling {
            Some(handler) => handler.create_message(server, request).await,
            None => Err(ErrorData::method_not_found::<rmcp::model::CreateMessageRequestMethod>()),
        }
    }
}

/// The answers to a 2026-07-28 `input_required` result's requests, through the same
/// handlers (roots: none). A failed request fails the whole round.
pub(crate) async fn fulfil(
    interact: &Interact,
    server: &str,
    requests: InputRequests,
) -> Result<InputResponses, String> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicitation(request) => interact
                .elicit(server, request.params)
                .await
                .and_then(|result| to_value(&result)),
            InputRequest::CreateMessage(request) => interact
                .sample(server, request.params)
                .await
                .and_then(|result| to_value(&result)),
            InputRequest::ListRoots(_) => to_value(&ListRootsResult::default()),
            _ => Err(ErrorData::invalid_request(
                "an input request patchbay does not know",
                None,
            )),
        };
        let answer = answer.map_err(|error| format!("input request `{key}`: {}", error.message))?;
        responses.insert(key, answer);
    }
    Ok(responses)
}

fn to_value(value: &impl serde::Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(value).map_err(|error| ErrorData::internal_error(error.to_string(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests() -> InputRequests {
        serde_json::from_value(serde_json::json!({
            "who": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Who?",
                    "requestedSchema": { "type": "object", "properties": { "name": { "type": "string", "default": "Ada" } } }
                }
            },
            "roots": { "method": "roots/list" }
        }))
        .expect("input requests")
    }

    #[tokio::test]
    async fn input_required_requests_are_answered_by_the_same_handlers() {
        let interact = Interact {
            elicitation: Some(Arc::new(AcceptDefaults)),
            sampling: None,
        };
        let answers = fulfil(&interact, "s", requests()).await.expect("answered");
        assert_eq!(
            answers["who"],
            serde_json::json!({ "action": "accept", "content": { "name": "Ada" } })
        );
        assert_eq!(answers["roots"], serde_json::json!({ "roots": [] }));
        let declined = fulfil(&Interact::default(), "s", requests()).await.expect("answered");
        assert_eq!(declined["who"], serde_json::json!({ "action": "decline" }));
    }
}
