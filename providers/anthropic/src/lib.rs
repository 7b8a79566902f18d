//! patchbay provider: anthropic (work in progress).
