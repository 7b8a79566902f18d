//! MCP for patchbay (work in progress).
