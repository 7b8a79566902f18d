//! `Debug` without secrets: the configuration's environment values (API keys, base URLs with
//! credentials) and command-line values (an `--mcp-config` JSON with bearer headers) print as
//! `<redacted>`; names and flags stay, so a `{:?}` still says what was set.

use std::collections::BTreeMap;
use std::fmt;

use crate::config::ClaudeAgentConfig;

/// What a redacted value prints as.
pub(crate) const REDACTED: &str = "<redacted>";

struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Environment variables: names, values redacted.
struct Env<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.keys().map(|key| (key, Redacted))).finish()
    }
}

/// Command-line arguments: flags (the part before `=`), every value redacted.
struct Args<'a>(&'a [String]);

impl fmt::Debug for Args<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|arg| Arg(arg))).finish()
    }
}

struct Arg<'a>(&'a str);

impl fmt::Debug for Arg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.starts_with('-') {
            return f.write_str(REDACTED);
        }
        match self.0.split_once('=') {
            Some((flag, _)) => write!(f, "\"{flag}={REDACTED}\""),
            None => write!(f, "{:?}", self.0),
        }
    }
}

impl fmt::Debug for ClaudeAgentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured, so a new field cannot be printed without a decision.
        let Self {
            cli_path,
            env,
            inherit_env,
            max_line_bytes,
            permission_mode,
            allowed_tools,
            disallowed_tools,
            tools,
            agents,
            approval_timeout,
            system_prompt,
            host_tools,
            host_server_name,
            max_turns,
            setting_sources,
            session_markers,
            stop_grace,
            cancel_grace,
            init_timeout,
            extra_args,
            record_stdout,
            record_dir,
            keep_alive,
            spares,
            spare_max_age,
        } = self;
        f.debug_struct("ClaudeAgentConfig")
            .field("cli_path", cli_path)
            .field("env", &Env(env))
            .field("inherit_env", inherit_env)
            .field("max_line_bytes", max_line_bytes)
            .field("permission_mode", permission_mode)
            .field("allowed_tools", allowed_tools)
            .field("disallowed_tools", disallowed_tools)
            .field("tools", tools)
            .field("agents", agents)
            .field("approval_timeout", approval_timeout)
            .field("system_prompt", system_prompt)
            .field("host_tools", host_tools)
            .field("host_server_name", host_server_name)
            .field("max_turns", max_turns)
            .field("setting_sources", setting_sources)
            .field("session_markers", session_markers)
            .field("stop_grace", stop_grace)
            .field("cancel_grace", cancel_grace)
            .field("init_timeout", init_timeout)
            .field("extra_args", &Args(extra_args))
            .field("record_stdout", record_stdout)
            .field("record_dir", record_dir)
            .field("keep_alive", keep_alive)
            .field("spares", spares)
            .field("spare_max_age", spare_max_age)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_keep_flags_only() {
        let args = ["--mcp-config".to_string(), "{\"h\":\"k\"}".into(), "--x=secret".into()];
        assert_eq!(
            format!("{:?}", Args(&args)),
            r#"["--mcp-config", <redacted>, "--x=<redacted>"]"#
        );
    }
}
