//! Session-name rules: 1 to 60 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`
//! (`^[a-zA-Z0-9_-]{1,60}$`). Blueprint names follow the same rule.
//!
//! ```
//! use patchbay_orchestrator::names::validate_session_name;
//!
//! assert!(validate_session_name("fix-login_2").is_ok());
//! let err = validate_session_name("a b").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "session name `a b` is invalid: use 1 to 60 characters from a-z, A-Z, 0-9, `_` and `-`"
//! );
//! ```

/// The longest name accepted, in characters.
pub const MAX_NAME_LEN: usize = 60;

/// A name that breaks the rule; its message states the rule and the name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} name `{name}` is invalid: use 1 to {MAX_NAME_LEN} characters from a-z, A-Z, 0-9, `_` and `-`")]
#[non_exhaustive]
pub struct NameError {
    /// What was named (`session`, `blueprint`).
    pub kind: &'static str,
    /// The name as given.
    pub name: String,
}

/// Checks a session name against `^[a-zA-Z0-9_-]{1,60}$`.
pub fn validate_session_name(name: &str) -> Result<(), NameError> {
    validate("session", name)
}

/// Checks a blueprint name against the same rule as session names.
pub fn validate_blueprint_name(name: &str) -> Result<(), NameError> {
    validate("blueprint", name)
}

fn validate(kind: &'static str, name: &str) -> Result<(), NameError> {
    // Every allowed character is ASCII, so the byte length is the character count.
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    if (1..=MAX_NAME_LEN).contains(&name.len()) && name.bytes().all(allowed) {
        Ok(())
    } else {
        Err(NameError {
            kind,
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn empty_name_is_refused() {
        assert!(validate_session_name("").is_err());
    }

    #[test]
    fn one_character_is_accepted() {
        assert_eq!(validate_session_name("a"), Ok(()));
        assert_eq!(validate_session_name("_"), Ok(()));
        assert_eq!(validate_session_name("-"), Ok(()));
    }

    #[test]
    fn sixty_characters_are_accepted_and_sixty_one_refused() {
        assert_eq!(validate_session_name(&"a".repeat(60)), Ok(()));
        assert!(validate_session_name(&"a".repeat(61)).is_err());
    }

    #[test]
    fn unicode_is_refused_even_when_short() {
        assert!(validate_session_name("é").is_err());
        assert!(validate_session_name("ｆｕｌｌ").is_err());
        assert!(validate_session_name("agent🦀").is_err());
    }

    #[test]
    fn spaces_slashes_and_dots_are_refused() {
        for name in ["a b", " a", "a ", "a/b", "a\\b", "../x", "a.b", "a\n", "a\tb"] {
            assert!(validate_session_name(name).is_err(), "{name:?} accepted");
        }
    }

    #[test]
    fn all_allowed_classes_mix() {
        assert_eq!(validate_session_name("Fix-login_2-B"), Ok(()));
    }

    #[test]
    fn error_states_the_rule_and_the_name() {
        let err = validate_session_name("a/b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "session name `a/b` is invalid: use 1 to 60 characters from a-z, A-Z, 0-9, `_` and `-`"
        );
        let err = validate_blueprint_name("").unwrap_err();
        assert!(err.to_string().starts_with("blueprint name `` is invalid"));
    }
}
