//! patchbay provider: claude-agent (work in progress).
