//! `patchbay_core::kit::Framer`, every `Framing`: the same frames and the same outcome whether
//! the bytes come whole (`push`), cut in two at a fuzzer-chosen point, or in small pieces
//! through the pull API (`feed`, `has_frame`, `next_frame`, `end`); no frame longer than the
//! cap, no line end inside a `Lines` frame, and never more buffered than the cap plus a chunk.
//!
//! Input: byte 0 picks the framing, byte 1 the cap (0: the default 64 MiB; else 1..=255 bytes,
//! so the cap is reached), byte 2 the split point, byte 3 the piece size of the pull run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_core::kit::{Framer, Framing, MAX_LINE_BYTES};
use patchbay_core::{ErrorKind, Limit};
use patchbay_fuzz::split_at_selector;

type Frames = (Vec<Vec<u8>>, Option<(ErrorKind, Option<Limit>)>);

fn framer(framing: Framing, max: usize) -> Framer {
    Framer::new(framing).with_max_bytes(max)
}

/// `push` every chunk, then `finish`.
fn pushed(framing: Framing, max: usize, chunks: &[&[u8]]) -> Frames {
    let mut decoder = framer(framing, max);
    let mut frames = Vec::new();
    for chunk in chunks {
        if let Err(error) = decoder.push(chunk, |data| {
            frames.push(data.to_vec());
            Ok(())
        }) {
            return (frames, Some((error.kind(), error.limit())));
        }
        assert!(
            decoder.pending() <= max.saturating_add(chunk.len()),
            "buffered past the cap"
        );
    }
    let error = decoder
        .finish(|data| {
            frames.push(data.to_vec());
            Ok(())
        })
        .err();
    (frames, error.map(|e| (e.kind(), e.limit())))
}

/// `feed` pieces of `size` bytes, asking `has_frame` before each `next_frame`; `end` at the end.
fn pulled(framing: Framing, max: usize, body: &[u8], size: usize) -> Frames {
    let mut decoder = framer(framing, max);
    let mut frames = Vec::new();
    for chunk in body.chunks(size) {
        if let Err(error) = decoder.feed(chunk) {
            return (frames, Some((error.kind(), error.limit())));
        }
        loop {
            let ready = decoder.has_frame();
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    assert!(ready, "has_frame said no, next_frame gave one");
                    frames.push(frame.to_vec());
                }
                Ok(None) => {
                    assert!(!ready, "has_frame said yes, next_frame gave none");
                    break;
                }
                Err(error) => return (frames, Some((error.kind(), error.limit()))),
            }
        }
    }
    loop {
        match decoder.end() {
            Ok(Some(frame)) => frames.push(frame.to_vec()),
            Ok(None) => return (frames, None),
            Err(error) => return (frames, Some((error.kind(), error.limit()))),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [kind, cap, split, piece, body @ ..] = data else {
        return;
    };
    let framing = [
        Framing::Sse,
        Framing::SseOrJsonLines,
        Framing::Lines,
        Framing::DataLines,
    ][usize::from(*kind % 4)];
    let max = match cap {
        0 => MAX_LINE_BYTES,
        n => usize::from(*n),
    };
    let whole = pushed(framing, max, &[body]);
    for frame in &whole.0 {
        assert!(
            frame.len() <= max,
            "a frame of {} bytes passed a cap of {max}",
            frame.len()
        );
        if matches!(framing, Framing::Lines | Framing::DataLines) {
            assert!(!frame.is_empty(), "an empty line was delivered");
            assert!(!frame.contains(&b'\n'), "a line holds a line end");
        }
        if framing == Framing::DataLines {
            assert_eq!(frame.trim_ascii(), &frame[..], "a data line's value is trimmed");
        }
    }
    if let Some((kind, limit)) = whole.1 {
        assert_eq!((kind, limit), (ErrorKind::Protocol, Some(Limit::LineLength)));
    }
    let cut = pushed(framing, max, &split_at_selector(body, *split));
    assert_eq!(whole, cut, "cut in two at {split}/255");
    let size = usize::from(*piece % 16) + 1;
    let pieces = pulled(framing, max, body, size);
    assert_eq!(whole, pieces, "pulled in pieces of {size}");
});
