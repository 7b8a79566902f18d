//! The claude-agent stdout path: `patchbay_claude_agent::lines::LineReader` (core's line framer
//! with the reader's cap) reads lines from bytes arriving in pieces of a fuzzer-chosen size (the
//! same lines, or the same `LineTooLong`, as read whole; no line past the cap), and each line
//! goes through the run loop's reading rules (trimmed, blank and non-JSON lines skipped, a bad
//! JSON line ends the run) into `Translator::push_value`, whose events keep the lifecycle rules
//! it owns.
//!
//! Input: byte 0 picks the options (structured output, MCP report) and, with byte 1, the line cap
//! (0: the default 64 MiB); byte 2 the read size; the rest is the CLI's stdout.
#![no_main]

use std::pin::Pin;
use std::task::{Context, Poll};

use libfuzzer_sys::fuzz_target;
use patchbay_claude_agent::Translator;
use patchbay_claude_agent::lines::{DEFAULT_MAX_LINE, LineReader};
use patchbay_core::ProviderError;
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle};
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// A pipe that hands out at most `size` bytes per read.
struct Pieces<'a> {
    rest: &'a [u8],
    size: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let n = self.size.min(self.rest.len()).min(buf.remaining());
        let (head, tail) = self.rest.split_at(n);
        buf.put_slice(head);
        self.rest = tail;
        Poll::Ready(Ok(()))
    }
}

/// Every line the reader gives, and whether it stopped on a line past the cap.
fn read_lines(body: &[u8], size: usize, max: usize) -> (Vec<Vec<u8>>, bool) {
    let mut reader = LineReader::new(Pieces { rest: body, size }, max);
    let mut lines = Vec::new();
    futures::executor::block_on(async {
        loop {
            match reader.next_line().await {
                Ok(Some(line)) => {
                    assert!(
                        line.len() <= max,
                        "a line of {} bytes passed the cap of {max}",
                        line.len()
                    );
                    lines.push(line.to_vec());
                }
                Ok(None) => return (lines, false),
                Err(_) => return (lines, true),
            }
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let [options, cap, size, body @ ..] = data else {
        return;
    };
    let max = match cap {
        0 => DEFAULT_MAX_LINE,
        n => usize::from(*n) * 16,
    };
    let (lines, too_long) = read_lines(body, body.len().max(1), max);
    let size = usize::from(*size % 64) + 1;
    assert_eq!(
        (lines.clone(), too_long),
        read_lines(body, size, max),
        "read {size} bytes at a time"
    );

    let mut translator = Translator::new("fuzz-model", "host")
        .with_output_tool(options & 1 != 0)
        .with_mcp_report(options & 2 != 0);
    let mut events = Vec::new();
    let mut error: Option<ProviderError> = None;
    for line in &lines {
        let line = line.trim_ascii();
        if line.first() != Some(&b'{') {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            break; // The run loop ends here with its own error, outside the translator.
        };
        let pushed = translator.push_value(&value);
        events.extend(std::iter::from_fn(|| translator.next_event()));
        if let Err(e) = pushed {
            error = Some(e);
            break;
        }
        if translator.is_done() {
            break;
        }
    }
    if error.is_none() && !too_long && !translator.is_done() {
        error = translator.finish().err();
        events.extend(std::iter::from_fn(|| translator.next_event()));
    }
    if error.is_some() || translator.is_done() {
        check_lifecycle(&events, error.as_ref(), TRANSLATOR_RULES);
    }

    // A transcript through the generic replay (`replay --family claude-agent`): no panic, and
    // the rules hold for every response it finds.
    for response in patchbay_core::kit::replay(|| Translator::new("fuzz-model", "host"), [body]) {
        if response.error.is_some() || !response.events.is_empty() {
            check_lifecycle(&response.events, response.error.as_ref(), TRANSLATOR_RULES);
        }
    }
});
