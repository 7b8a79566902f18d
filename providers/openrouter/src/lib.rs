//! patchbay provider: openrouter (work in progress).
