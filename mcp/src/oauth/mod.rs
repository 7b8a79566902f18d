//! OAuth 2.1 for remote MCP servers, on rmcp's `auth` support: an [`OAuthClient`] given to
//! [`McpClientSet::with_oauth`](crate::McpClientSet::with_oauth), a [`TokenStore`] the host
//! provides (in memory or in a file here), and the interactive step as an
//! [`AuthorizationHandler`] (a loopback listener for CLIs, [`HostedRedirect`] for web hosts).

pub(crate) mod client;
pub(crate) mod error;
mod flow;
mod handler;
mod http;
mod legacy;
mod loopback;
mod store;
mod transport;

pub use client::{DEFAULT_MAX_AUTHORIZATIONS, OAuthClient};
pub use error::OAuthError;
pub use handler::{
    AuthorizationHandler, AuthorizationPrompt, AuthorizationRedirect, DEFAULT_AUTHORIZATION_TIMEOUT, HostedRedirect,
};
pub use loopback::{LoopbackRedirect, Opener, open_in_browser, print_url};
pub use rmcp::transport::auth::StoredCredentials;
pub use store::{FileTokenStore, MemoryTokenStore, TokenStore};

pub(crate) use transport::serve_with_oauth;
