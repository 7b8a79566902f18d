//! OAuth for remote servers: the flow against an in-process authorization server, the token
//! stores, the authorization handlers, and that no credential reaches `Debug` or the logs.

mod capture;
mod flow;
mod handlers;
mod mock;
mod redaction;
mod store;
