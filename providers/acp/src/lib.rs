//! patchbay-acp (work in progress).
