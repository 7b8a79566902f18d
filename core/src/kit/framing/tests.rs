//! The framer's unit tests: every framing, cut anywhere, pushed and pulled.

use super::*;

fn frames(chunks: &[&[u8]], json_lines: bool) -> Vec<String> {
    let mut decoder = Framer::new(if json_lines {
        Framing::SseOrJsonLines
    } else {
        Framing::Sse
    });
    let mut out = Vec::new();
    for chunk in chunks {
        decoder
            .push(chunk, |data| {
                out.push(String::from_utf8_lossy(data).into_owned());
                Ok(())
            })
            .expect("decodes");
    }
    decoder
        .finish(|data| {
            out.push(String::from_utf8_lossy(data).into_owned());
            Ok(())
        })
        .expect("finishes");
    out
}

#[test]
fn frames_split_anywhere_decode_the_same() {
    let body = b"event: a\r\ndata: {\"x\":1}\r\n\r\n: comment\ndata:{\"y\":\"\xc3\xa9\"}\n\ndata: one\ndata: two\n\ndata: last";
    let whole = frames(&[body], false);
    assert_eq!(whole, vec!["{\"x\":1}", "{\"y\":\"é\"}", "one\ntwo", "last"]);
    for size in 1..body.len() {
        let chunks: Vec<&[u8]> = body.chunks(size).collect();
        assert_eq!(frames(&chunks, false), whole, "chunk size {size}");
    }
}

#[test]
fn json_lines_are_frames() {
    let body = b"{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}";
    assert_eq!(frames(&[body], true), vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    assert!(frames(&[body], false).is_empty());
}

#[test]
fn an_endless_line_is_a_protocol_error_naming_the_limit() {
    for framing in [
        Framing::Sse,
        Framing::SseOrJsonLines,
        Framing::Lines,
        Framing::DataLines,
    ] {
        let mut decoder = Framer::new(framing);
        let chunk = vec![b'x'; 1024 * 1024];
        let mut result = Ok(());
        for _ in 0..MAX_LINE_BYTES / chunk.len() + 2 {
            result = decoder.push(&chunk, |_| Ok(()));
            if result.is_err() {
                break;
            }
        }
        let error = result.expect_err("capped");
        assert_eq!(error.kind(), ErrorKind::Protocol);
        assert_eq!(error.limit(), Some(Limit::LineLength));
        assert!(
            decoder.buf.len() <= MAX_LINE_BYTES + chunk.len(),
            "{framing:?} buffered past the cap"
        );
    }
}

#[test]
fn the_cap_is_per_line_whatever_the_chunks() {
    let body = b"line one\nline two\nline three\n".repeat(10);
    let mut lines = 0;
    let mut decoder = Framer::new(Framing::Lines).with_max_bytes(16);
    let counted = decoder.push(&body, |_| {
        lines += 1;
        Ok(())
    });
    counted.expect("short lines pass in one big chunk");
    assert_eq!(lines, 30);
    for framing in [
        Framing::Sse,
        Framing::SseOrJsonLines,
        Framing::Lines,
        Framing::DataLines,
    ] {
        for chunk in [1, 5, 17, 64] {
            let mut decoder = Framer::new(framing).with_max_bytes(16);
            let long = b"data: 0123456789abcdef\n\ndata: ok\n\n";
            let outcome = long.chunks(chunk).try_for_each(|c| decoder.push(c, |_| Ok(())));
            let error = outcome
                .and_then(|()| decoder.finish(|_| Ok(())))
                .expect_err("a 22-byte line trips a 16-byte cap");
            assert_eq!(error.limit(), Some(Limit::LineLength), "{framing:?}, chunks of {chunk}");
        }
    }
}

#[test]
fn a_line_of_exactly_the_cap_ending_in_crlf_passes_however_it_is_cut() {
    // Found by the framer fuzz target: the `\r` of a CRLF arriving in one chunk and the
    // `\n` in the next made a line of exactly the cap count one byte too long.
    let body = b"d\n\xff\xff\xff\r\nds\r\nabc\r\n";
    for framing in [
        Framing::Sse,
        Framing::SseOrJsonLines,
        Framing::Lines,
        Framing::DataLines,
    ] {
        for size in 1..=body.len() {
            let mut framer = Framer::new(framing).with_max_bytes(3);
            let fed = body.chunks(size).try_for_each(|chunk| framer.push(chunk, |_| Ok(())));
            let outcome = fed.and_then(|()| framer.finish(|_| Ok(())));
            assert!(outcome.is_ok(), "{framing:?}, chunks of {size}: {outcome:?}");
        }
        let mut framer = Framer::new(framing).with_max_bytes(3);
        let error = framer
            .push(b"abc\rx\n", |_| Ok(()))
            .expect_err("a CR inside the line counts");
        assert_eq!(error.limit(), Some(Limit::LineLength), "{framing:?}");
    }
}

#[test]
fn lines_split_anywhere_decode_the_same() {
    let body = b": keep-alive\r\ndata: {\"a\":1}\n\n\ndata: {\"b\":\"long line\"}\r\nlast without newline";
    let decode = |chunks: &[&[u8]]| {
        let mut framer = Framer::new(Framing::Lines).with_max_bytes(40);
        let mut out = Vec::new();
        for chunk in chunks {
            framer
                .push(chunk, |line| {
                    out.push(String::from_utf8_lossy(line).into_owned());
                    Ok(())
                })
                .expect("fits the cap");
        }
        framer
            .finish(|line| {
                out.push(String::from_utf8_lossy(line).into_owned());
                Ok(())
            })
            .expect("fits the cap");
        out
    };
    let whole = decode(&[body]);
    assert_eq!(
        whole,
        vec![
            ": keep-alive",
            "data: {\"a\":1}",
            "data: {\"b\":\"long line\"}",
            "last without newline"
        ]
    );
    for size in 1..body.len() {
        let chunks: Vec<&[u8]> = body.chunks(size).collect();
        assert_eq!(decode(&chunks), whole, "chunk size {size}");
    }
}

#[test]
fn lines_are_delivered_as_they_are() {
    let mut decoder = Framer::new(Framing::Lines);
    let mut out = Vec::new();
    let body = b": comment\r\ndata: {\"a\":1}\n\nevent: x\n{\"b\":2}";
    decoder
        .push(body, |line| {
            out.push(String::from_utf8_lossy(line).into_owned());
            Ok(())
        })
        .expect("feeds");
    decoder
        .finish(|line| {
            out.push(String::from_utf8_lossy(line).into_owned());
            Ok(())
        })
        .expect("ends");
    assert_eq!(out, vec![": comment", "data: {\"a\":1}", "event: x", "{\"b\":2}"]);
}

#[test]
fn data_lines_are_the_trimmed_values_of_data_lines_however_they_are_cut_or_pulled() {
    let body = b": OPENROUTER PROCESSING\r\ndata: {\"a\":1}\ndata:{\"b\":2}  \r\n\nevent: x\ndata:   \ndata: [DONE]";
    let want = vec!["{\"a\":1}", "{\"b\":2}", "[DONE]"];
    for size in 1..=body.len() {
        let mut pushed = Vec::new();
        let mut framer = Framer::new(Framing::DataLines);
        for chunk in body.chunks(size) {
            framer
                .push(chunk, |frame| {
                    pushed.push(String::from_utf8_lossy(frame).into_owned());
                    Ok(())
                })
                .expect("fits the cap");
        }
        framer
            .finish(|frame| {
                pushed.push(String::from_utf8_lossy(frame).into_owned());
                Ok(())
            })
            .expect("ends");
        assert_eq!(pushed, want, "pushed in chunks of {size}");
        let mut pulled = Vec::new();
        let mut framer = Framer::new(Framing::DataLines);
        for chunk in body.chunks(size) {
            framer.feed(chunk).expect("fits the cap");
            while let Some(frame) = framer.next_frame().expect("fits the cap") {
                pulled.push(String::from_utf8_lossy(frame).into_owned());
            }
        }
        while let Some(frame) = framer.end().expect("ends") {
            pulled.push(String::from_utf8_lossy(frame).into_owned());
        }
        assert_eq!(pulled, want, "pulled in chunks of {size}");
    }
}

#[test]
fn frames_read_in_place_are_the_frames_fed_and_pulled_however_cut() {
    let body =
        b"event: a\r\ndata: {\"x\":1}\r\n\r\n: c\ndata: one\ndata: two\n\n{\"j\":1}\ndata:{\"y\":2}\n\n\ndata: tail";
    for framing in [
        Framing::Sse,
        Framing::SseOrJsonLines,
        Framing::Lines,
        Framing::DataLines,
    ] {
        for size in 1..=body.len() {
            let (mut in_place, mut pulled) = (Vec::new(), Vec::new());
            let (mut a, mut b) = (Framer::new(framing), Framer::new(framing));
            for chunk in body.chunks(size) {
                while let Some(frame) = a.next_frame_in(chunk).expect("fits") {
                    in_place.push(frame.to_vec());
                }
                b.feed(chunk).expect("fits");
                while let Some(frame) = b.next_frame().expect("fits") {
                    pulled.push(frame.to_vec());
                }
                assert_eq!(a.pending(), b.pending(), "{framing:?}, chunks of {size}");
            }
            while let Some(frame) = a.end().expect("ends") {
                in_place.push(frame.to_vec());
            }
            while let Some(frame) = b.end().expect("ends") {
                pulled.push(frame.to_vec());
            }
            assert_eq!(in_place, pulled, "{framing:?}, chunks of {size}");
        }
    }
}
