//! The request body of one call. (Placeholder: text turns only, until the full mapping lands.)

use patchbay_core::{Message, ProviderError, RequestContext, Role, ToolSet, Warning};
use serde_json::{Value, json};

use crate::config::Backend;

/// The body of one call and the warnings `Started` carries.
pub(crate) struct Built {
    pub(crate) body: Value,
    pub(crate) warnings: Vec<Warning>,
}

/// Build the generateContent body.
pub(crate) fn build(
    messages: &[Message],
    _tools: &ToolSet,
    _model: &str,
    _context: Option<&RequestContext>,
    _backend: Backend,
) -> Result<Built, ProviderError> {
    let contents: Vec<Value> = messages
        .iter()
        .map(|m| {
            let role = if m.role == Role::User { "user" } else { "model" };
            json!({"role": role, "parts": [{"text": m.text()}]})
        })
        .collect();
    Ok(Built {
        body: json!({ "contents": contents }),
        warnings: Vec::new(),
    })
}
