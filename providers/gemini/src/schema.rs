//! JSON Schema to the OpenAPI subset Gemini's function declarations take.
