//! Blueprints: named agent definitions loaded from TOML.
//!
//! A blueprints folder holds `*.toml` files. Each file is either one blueprint (its fields at
//! the top level) or several `[[blueprint]]` tables; both shapes may sit in the same folder.
//!
//! ```
//! use patchbay_orchestrator::blueprint::{BlueprintStatus, parse};
//!
//! let text = r#"
//! [[blueprint]]
//! name = "reviewer"
//! description = "Reviews a diff and lists the problems it finds."
//! provider = "anthropic"
//! model = "claude-sonnet-4-5"
//! system = "You review code. Be brief."
//! tools = ["read", "glob", "grep"]
//! max_steps = 20
//!
//! [blueprint.provider_options]
//! max_tokens = 4096
//!
//! [[blueprint.mcp_servers]]
//! name = "github"
//! transport = { type = "http", url = "https://example.invalid/mcp" }
//!
//! [[blueprint]]
//! name = "old-helper"
//! description = "Kept for old sessions."
//! provider = "scripted"
//! model = "scripted"
//! status = "retired"
//! "#;
//! let blueprints = parse(text, "agents.toml".as_ref()).unwrap();
//! assert_eq!(blueprints[0].name, "reviewer");
//! assert_eq!(blueprints[0].provider_options["max_tokens"], 4096);
//! assert_eq!(blueprints[0].mcp_servers[0].name, "github");
//! assert_eq!(blueprints[1].status, BlueprintStatus::Retired);
//! // Not named: the file tools without bash.
//! assert_eq!(blueprints[1].tools, ["read", "write", "edit", "glob", "grep"]);
//! ```
//!
//! Decisions:
//! - Unknown fields are refused (a typo is an error, not a silently ignored setting).
//! - The provider name is not checked against the registry here (the registry decides when a
//!   run starts, so a blueprint for a provider compiled out still loads); an empty one is
//!   refused.
//! - `tools` left out means the file tools `read`, `write`, `edit`, `glob`, `grep`; `bash` only
//!   when named; `tools = []` means none. Unknown tool names are refused.
//! - The collection always holds a `default` blueprint (see [`Blueprints::builtin_default`]) on
//!   the `scripted` provider, so the service runs offline; a folder that defines `default`
//!   replaces it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use patchbay::context::McpServerConfig;
use serde::{Deserialize, Serialize};

use crate::limits::BlueprintLimits;
use crate::names::{NameError, validate_blueprint_name};

/// The largest blueprint file loaded: 1 MiB. A blueprint is a name, a description, a system
/// prompt and options; a larger file is refused with [`BlueprintError::TooLarge`] (listings
/// carry blueprints into agents' context windows and the API's answers).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The name of the blueprint used when a start names none.
pub const DEFAULT_BLUEPRINT: &str = "default";

/// The coding tools a blueprint may name (`bash` is off unless named).
pub const KNOWN_TOOLS: [&str; 6] = ["read", "write", "edit", "glob", "grep", "bash"];

/// The tools a blueprint gets when it names none: the file tools, without `bash`.
pub const DEFAULT_TOOLS: [&str; 5] = ["read", "write", "edit", "glob", "grep"];

/// A named agent definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blueprint {
    /// The unique name callers pass as `agent_blueprint_name` (same rule as session names).
    pub name: String,
    /// What the agent is for, shown to parent agents choosing one.
    #[serde(default)]
    pub description: String,
    /// The provider's registry name: `scripted`, `anthropic`, `openrouter`, `gemini`, `openai`, `claude-agent`, `acp`.
    pub provider: String,
    /// The model name passed to the provider.
    pub model: String,
    /// The system prompt, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Which coding tools the agent gets (see [`KNOWN_TOOLS`]); left out: [`DEFAULT_TOOLS`].
    #[serde(default = "default_tools")]
    pub tools: Vec<String>,
    /// MCP servers attached to every run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerConfig>,
    /// Whether runs reach this orchestrator's own seven tools over MCP (as the MCP server
    /// `orchestrator`, with an `X-Agent-Session-Name` header naming the run's session), so the
    /// agent can start, resume and wait for agents of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub orchestrator_tools: bool,
    /// The most model turns per run; left out: the agent's own default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Limits of this blueprint's sessions and runs (see [`crate::limits`]); left out: the
    /// orchestrator's.
    #[serde(default, skip_serializing_if = "BlueprintLimits::is_empty")]
    pub limits: BlueprintLimits,
    /// Options given to the provider's builder (a TOML table, as JSON); left out: `{}`.
    #[serde(default = "empty_object")]
    pub provider_options: serde_json::Value,
    /// Whether new sessions may start on it.
    #[serde(default)]
    pub status: BlueprintStatus,
}

/// Whether a blueprint takes new sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlueprintStatus {
    /// Listed and usable.
    #[default]
    Active,
    /// Kept for existing sessions; new sessions are refused.
    Retired,
}

impl BlueprintStatus {
    /// `active` or `retired`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Retired => "retired",
        }
    }
}

impl std::fmt::Display for BlueprintStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn default_tools() -> Vec<String> {
    DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect()
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// Why blueprints could not be loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlueprintError {
    /// The file or folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML, or not a blueprint.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the error, when known.
        line: Option<usize>,
        /// The TOML error's message, without its location.
        message: String,
        /// The TOML error.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A blueprint name breaks the naming rule.
    #[error("{}: {source}", path.display())]
    InvalidName {
        /// The file.
        path: PathBuf,
        /// The rule broken.
        #[source]
        source: NameError,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("{}: the file has {size} bytes, more than the {max} a blueprint file may have", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit ([`MAX_FILE_BYTES`]).
        max: u64,
    },
    /// A blueprint has an empty `provider`.
    #[error("{}: blueprint `{name}` has an empty `provider`: name one (scripted, anthropic, openrouter, gemini, openai, claude-agent, acp)", path.display())]
    EmptyProvider {
        /// The file.
        path: PathBuf,
        /// The blueprint.
        name: String,
    },
    /// A blueprint names a tool that does not exist.
    #[error("{}: blueprint `{name}` names the unknown tool `{tool}`; known tools: read, write, edit, glob, grep, bash", path.display())]
    UnknownTool {
        /// The file.
        path: PathBuf,
        /// The blueprint.
        name: String,
        /// The tool as written.
        tool: String,
    },
    /// `provider_options` is not a table.
    #[error("{}: blueprint `{name}`: `provider_options` must be a table", path.display())]
    OptionsNotATable {
        /// The file.
        path: PathBuf,
        /// The blueprint.
        name: String,
    },
    /// Two blueprints share a name (possibly in the same file).
    #[error("blueprint `{name}` is defined twice: in {} and in {}", first.display(), second.display())]
    Duplicate {
        /// The name.
        name: String,
        /// Where it was defined first.
        first: PathBuf,
        /// Where it was defined again.
        second: PathBuf,
    },
}

/// Several blueprints in one file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Many {
    blueprint: Vec<Blueprint>,
}

/// Parses one file's text (either shape) and checks each blueprint; `path` is only used in
/// errors. Duplicates inside the text are refused.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Blueprint>, BlueprintError> {
    let parse_error = |e: toml::de::Error| BlueprintError::Parse {
        path: path.to_owned(),
        line: e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1),
        message: e.message().trim_end().to_owned(),
        source: Box::new(e),
    };
    let table: toml::Table = toml::from_str(text).map_err(parse_error)?;
    let blueprints = if table.get("blueprint").is_some_and(toml::Value::is_array) {
        toml::from_str::<Many>(text).map_err(parse_error)?.blueprint
    } else {
        vec![toml::from_str::<Blueprint>(text).map_err(parse_error)?]
    };
    let mut seen = std::collections::BTreeSet::new();
    for blueprint in &blueprints {
        check(blueprint, path)?;
        if !seen.insert(blueprint.name.as_str()) {
            return Err(BlueprintError::Duplicate {
                name: blueprint.name.clone(),
                first: path.to_owned(),
                second: path.to_owned(),
            });
        }
    }
    Ok(blueprints)
}

fn check(blueprint: &Blueprint, path: &Path) -> Result<(), BlueprintError> {
    validate_blueprint_name(&blueprint.name).map_err(|source| BlueprintError::InvalidName {
        path: path.to_owned(),
        source,
    })?;
    if blueprint.provider.trim().is_empty() {
        return Err(BlueprintError::EmptyProvider {
            path: path.to_owned(),
            name: blueprint.name.clone(),
        });
    }
    if let Some(tool) = blueprint.tools.iter().find(|t| !KNOWN_TOOLS.contains(&t.as_str())) {
        return Err(BlueprintError::UnknownTool {
            path: path.to_owned(),
            name: blueprint.name.clone(),
            tool: tool.clone(),
        });
    }
    if !blueprint.provider_options.is_object() {
        return Err(BlueprintError::OptionsNotATable {
            path: path.to_owned(),
            name: blueprint.name.clone(),
        });
    }
    Ok(())
}

/// The loaded blueprints by name, plus where each came from. Always holds `default`.
#[derive(Debug, Clone)]
pub struct Blueprints {
    by_name: BTreeMap<String, (Blueprint, Option<PathBuf>)>,
}

impl Default for Blueprints {
    fn default() -> Self {
        Self::new()
    }
}

impl Blueprints {
    /// Only the built-in `default` blueprint.
    pub fn new() -> Self {
        let default = Self::builtin_default();
        Self {
            by_name: BTreeMap::from([(default.name.clone(), (default, None))]),
        }
    }

    /// The built-in `default`: the `scripted` provider answering a fixed text, no tools, so
    /// the service runs offline. A loaded blueprint named `default` replaces it.
    pub fn builtin_default() -> Blueprint {
        Blueprint {
            name: DEFAULT_BLUEPRINT.to_owned(),
            description: "Built in: answers with a fixed text on the scripted provider, offline. \
                          Define `default` in the blueprints folder to replace it."
                .to_owned(),
            provider: "scripted".to_owned(),
            model: "scripted".to_owned(),
            system: None,
            tools: Vec::new(),
            mcp_servers: Vec::new(),
            orchestrator_tools: false,
            max_steps: None,
            limits: BlueprintLimits::default(),
            provider_options: empty_object(),
            status: BlueprintStatus::Active,
        }
    }

    /// Loads every `*.toml` file directly in `dir` (in file-name order; no subfolders).
    pub fn load_dir(dir: &Path) -> Result<Self, BlueprintError> {
        let read_err = |source| BlueprintError::Read {
            path: dir.to_owned(),
            source,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        let mut blueprints = Self::new();
        for file in files {
            blueprints.add_file(&file)?;
        }
        Ok(blueprints)
    }

    /// Loads one file (either shape).
    pub fn load_file(path: &Path) -> Result<Self, BlueprintError> {
        let mut blueprints = Self::new();
        blueprints.add_file(path)?;
        Ok(blueprints)
    }

    /// Adds the blueprints of one more file; a name already loaded from a file is refused.
    pub fn add_file(&mut self, path: &Path) -> Result<(), BlueprintError> {
        use std::io::Read as _;
        let read_err = |source| BlueprintError::Read {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        // Read at most one byte past the limit: a file growing meanwhile is still caught.
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
        let size = bytes.len() as u64;
        if size > MAX_FILE_BYTES {
            let size = std::fs::metadata(path).map_or(size, |m| m.len().max(size));
            return Err(BlueprintError::TooLarge {
                path: path.to_owned(),
                size,
                max: MAX_FILE_BYTES,
            });
        }
        let text =
            String::from_utf8(bytes).map_err(|e| read_err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        for blueprint in parse(&text, path)? {
            self.add(blueprint, path)?;
        }
        Ok(())
    }

    /// Adds one checked blueprint, as if read from `source`; it replaces the built-in
    /// `default`, and any other name already loaded is refused.
    pub fn add(&mut self, blueprint: Blueprint, source: &Path) -> Result<(), BlueprintError> {
        check(&blueprint, source)?;
        if let Some((_, Some(first))) = self.by_name.get(&blueprint.name) {
            return Err(BlueprintError::Duplicate {
                name: blueprint.name,
                first: first.clone(),
                second: source.to_owned(),
            });
        }
        self.by_name
            .insert(blueprint.name.clone(), (blueprint, Some(source.to_owned())));
        Ok(())
    }

    /// The blueprint called `name`, active or retired.
    pub fn get(&self, name: &str) -> Option<&Blueprint> {
        self.by_name.get(name).map(|(b, _)| b)
    }

    /// The file `name` was loaded from (`None` for the built-in default or an unknown name).
    pub fn source(&self, name: &str) -> Option<&Path> {
        self.by_name.get(name).and_then(|(_, p)| p.as_deref())
    }

    /// Every blueprint, by name.
    pub fn all(&self) -> impl Iterator<Item = &Blueprint> {
        self.by_name.values().map(|(b, _)| b)
    }

    /// The active blueprints, by name.
    pub fn active(&self) -> impl Iterator<Item = &Blueprint> {
        self.all().filter(|b| b.status == BlueprintStatus::Active)
    }

    /// The blueprint used when a start names none: `default` (the folder's, or the built-in).
    pub fn default_blueprint(&self) -> &Blueprint {
        match self.by_name.get(DEFAULT_BLUEPRINT) {
            Some((b, _)) => b,
            None => unreachable!("the `default` blueprint is never removed"),
        }
    }

    /// How many blueprints there are, the default included.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Always `false`: the default is always there.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
