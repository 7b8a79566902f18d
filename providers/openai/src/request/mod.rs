//! The request body of one call (`POST /responses`, streamed). Work in progress.

use patchbay_core::{Message, ProviderError, RequestContext, ToolSet, Warning};
use serde_json::{Value, json};

/// A request body and the warnings `Started` carries.
#[derive(Debug)]
pub(crate) struct Built {
    /// The JSON body.
    pub(crate) body: Value,
    /// What the request left out or changed.
    pub(crate) warnings: Vec<Warning>,
}

/// The body of one call.
pub(crate) fn build(
    _messages: &[Message],
    _tools: &ToolSet,
    model: &str,
    _context: Option<&RequestContext>,
) -> Result<Built, ProviderError> {
    Ok(Built {
        body: json!({ "model": model, "stream": true }),
        warnings: Vec::new(),
    })
}
