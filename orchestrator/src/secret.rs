//! Fresh secrets: bearer tokens, login codes, cookie sessions and scoped-token keys.

/// A fresh random secret: 64 hex digits (two v4 UUIDs, 244 random bits from the OS).
pub(crate) fn fresh_secret() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}
