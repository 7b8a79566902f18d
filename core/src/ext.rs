//! What hosts call on any provider beyond `create_response` ([`ProviderExt`]): the whole
//! response, its text, a structured object.

use async_trait::async_trait;

use crate::context::RequestContext;
use crate::error::ProviderError;
use crate::message::Message;
use crate::provider::{Provider, ProviderResponse};
use crate::signal::Signal;
use crate::toolset::ToolSet;

/// Conveniences for every provider (blanket impl; implementers write only [`Provider`]).
#[async_trait]
pub trait ProviderExt: Provider {
    /// Run one call and collect the whole response.
    async fn generate(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<ProviderResponse, ProviderError> {
        let stream = self.create_response(messages, tools, model, signal, context).await?;
        ProviderResponse::collect(stream).await
    }

    /// Run one call without tools and return only the text.
    async fn generate_text(
        &self,
        prompt: &str,
        model: &str,
        context: Option<&RequestContext>,
    ) -> Result<String, ProviderError> {
        let messages = [Message::user(prompt)];
        let response = self
            .generate(&messages, &ToolSet::new(), model, &Signal::new(), context)
            .await?;
        Ok(response.text())
    }

    /// Ask for an object of type `T` (no tools): the schema comes from schemars and goes in the
    /// context's [`output_schema`](RequestContext::output_schema); the final text block of the
    /// answer is parsed, validated against the schema and deserialized. A reply that is not
    /// JSON or does not match is an [`ObjectError`](crate::object::ObjectError) carrying the raw text
    /// (see [`crate::object`]).
    async fn generate_object<T>(
        &self,
        messages: &[Message],
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<T, crate::object::ObjectError>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        crate::object::generate_object(self, messages, model, signal, context).await
    }

    /// [`generate_object`](Self::generate_object) streamed: partial values as the JSON grows,
    /// then the validated object ([`ObjectEvent`](crate::object::ObjectEvent)).
    fn stream_object<'a, T>(
        &'a self,
        messages: &'a [Message],
        model: &'a str,
        signal: &'a Signal,
        context: Option<&'a RequestContext>,
    ) -> crate::object::ObjectStream<'a, T>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned + Send + 'a,
    {
        crate::object::stream_object(self, messages, model, signal, context)
    }
}

impl<P: Provider + ?Sized> ProviderExt for P {}
