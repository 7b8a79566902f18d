//! What every HTTP provider does between building a request and translating its body: wait for
//! the headers under the call's signal and read timeout, refuse a redirect, turn an error status
//! into the wire's typed error, and read the body as `ProviderError`-typed chunks.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use patchbay_core::kit::{ErrorResponse, StreamLimits, read_error_body, redirect_error, within};
use patchbay_core::{ErrorKind, ProviderError, Signal};
use reqwest::header::LOCATION;

use crate::record::Tape;

/// Sends `request` and returns the response once its status is a success: the one send path,
/// which [`Call`](crate::Call) takes. The headers are awaited under `signal` and the limits' read timeout; a
/// `3xx` is refused (the key and the request must not reach another host); an error status's
/// body is read (capped and bounded) and handed to `to_error`, the wire's mapping. Every error
/// is tagged with `provider`. On a recording `tape` the request is recorded before it goes
/// out, the response's status and request id are noted, and an error status's body is
/// recorded with a manifest line ([`Tape::off`] records nothing).
pub(crate) async fn send(
    tape: &Tape,
    request: reqwest::RequestBuilder,
    limits: &StreamLimits,
    signal: &Signal,
    provider: &'static str,
    to_error: impl FnOnce(ErrorResponse<'_>) -> ProviderError,
) -> Result<reqwest::Response, ProviderError> {
    let (client, request) = request.build_split();
    let request = request.map_err(|e| transport_error(e, "sending the request", provider))?;
    tape.request(&request);
    let response = within(
        signal,
        limits.read_timeout,
        "waiting for the response headers",
        client.execute(request),
    )
    .await
    .map_err(|e| e.with_provider(provider))?
    .map_err(|e| transport_error(e, "sending the request", provider))?;
    tape.response(&response);
    let status = response.status();
    if status.is_redirection() {
        let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok());
        tracing::debug!(status = status.as_u16(), "redirect refused");
        return Err(redirect_error(status.as_u16(), location).with_provider(provider));
    }
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let body = read_error_body(
        body_stream(tape, response, "reading the error body", provider),
        limits,
        signal,
    )
    .await
    .map_err(|e| e.with_provider(provider))?;
    let error = to_error(ErrorResponse {
        status: status.as_u16(),
        headers: &headers,
        body: &body,
    })
    .with_provider(provider);
    tracing::debug!(status = status.as_u16(), kind = %error.kind(), "request failed");
    tape.failed(&error);
    Err(error)
}

/// The response body as chunks, a read failure as a typed [`transport_error`]; on a recording
/// `tape` every chunk is also written to the call's body file (secrets replaced).
pub(crate) fn body_stream(
    tape: &Tape,
    response: reqwest::Response,
    what: &'static str,
    provider: &'static str,
) -> impl Stream<Item = Result<Bytes, ProviderError>> + Send + 'static {
    let sink = tape.response_sink(&response);
    let body = response
        .bytes_stream()
        .map(move |chunk| chunk.map_err(|e| transport_error(e, what, provider)));
    crate::record::tee(body, sink)
}

/// A reqwest failure as a `Transport` error (`Config` for a request that could not be built),
/// saying what timed out or failed, with reqwest's error as the source but without its URL
/// (which may carry credentials).
pub fn transport_error(error: reqwest::Error, what: &str, provider: &str) -> ProviderError {
    let kind = if error.is_builder() {
        ErrorKind::Config
    } else {
        ErrorKind::Transport
    };
    let message = if error.is_timeout() {
        format!("{what}: timed out")
    } else if error.is_connect() {
        format!("{what}: cannot connect")
    } else {
        format!("{what}: the connection failed")
    };
    ProviderError::new(kind, message)
        .with_provider(provider)
        .with_source(error.without_url())
}
