// Reads a UI message stream (the SSE body) from stdin with the AI SDK's own client code and
// prints what it made of it as one JSON object:
//   {"message": <the final UI message or null>, "chunks": [<chunk types in order>],
//    "invalid": [<chunks uiMessageChunkSchema refused>], "errors": [<stream errors>]}
// Every chunk is validated (parseJsonEventStream with uiMessageChunkSchema, as the default
// chat transport does), then folded by readUIMessageStream. With a file argument, that JSON
// UI message is the message the stream continues (a resumed run after an approval).
import { readFileSync } from 'node:fs';
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const body = readFileSync(0);
const previous = process.argv[2] ? JSON.parse(readFileSync(process.argv[2], 'utf8')) : undefined;
const bytes = new ReadableStream({
  start(controller) {
    controller.enqueue(new Uint8Array(body));
    controller.close();
  },
});
const chunks = [];
const invalid = [];
const errors = [];
const valid = parseJsonEventStream({ stream: bytes, schema: uiMessageChunkSchema }).pipeThrough(
  new TransformStream({
    transform(result, controller) {
      if (result.success) {
        chunks.push(result.value.type);
        controller.enqueue(result.value);
      } else {
        invalid.push({ raw: result.rawValue ?? null, error: String(result.error?.message ?? result.error).slice(0, 400) });
      }
    },
  }),
);
let message = null;
for await (const snapshot of readUIMessageStream({
  message: previous,
  stream: valid,
  onError: (error) => errors.push(String(error?.message ?? error)),
})) {
  message = snapshot;
}
process.stdout.write(JSON.stringify({ message, chunks, invalid, errors }));
