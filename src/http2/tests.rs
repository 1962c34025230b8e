//! The codec against itself (client <-> server in memory) and against hand-made frames.

use super::frame::{self, ErrorCode, Head};
use super::*;
use std::time::{Duration, Instant};

fn req(path: &str) -> Request<'_> {
    Request {
        method: "GET",
        scheme: "http",
        authority: "127.0.0.1",
        path,
        headers: &[],
    }
}

/// Moves the client's output to the server and back until neither has anything to say; the
/// server answers every request with a body of the size its path names (`/N`), or holds it
/// when `hold` says so. Returns the client's events.
fn pump(c: &mut Client, s: &mut Server, now: Instant, hold: &dyn Fn(u32) -> bool) -> Vec<Event> {
    let mut events = Vec::new();
    for _ in 0..10_000 {
        let out = c.pending_output().to_vec();
        c.advance_output(out.len(), now);
        if !out.is_empty() {
            s.feed(&out, now).unwrap();
        }
        while let Some(e) = s.poll_event() {
            if let ServerEvent::Request { stream, head } = e {
                if !hold(stream) {
                    let n: u64 = head.path[1..].parse().unwrap_or(0);
                    assert!(s.respond(stream, 200, &[("server", "synlab")], n));
                }
            }
        }
        s.fill(now, 1 << 20, &mut |_, _, n, out| {
            out.resize(out.len() + n, b'x')
        });
        let back = s.pending_output().to_vec();
        s.advance_output(back.len(), now);
        if !back.is_empty() {
            c.feed(&back, now).unwrap();
        }
        while let Some(e) = c.poll_event() {
            events.push(e);
        }
        if out.is_empty() && back.is_empty() {
            return events;
        }
    }
    panic!("the pair never went quiet");
}

fn done_tokens(ev: &[Event]) -> Vec<u64> {
    let mut t: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Done { token, .. } => Some(*token),
            _ => None,
        })
        .collect();
    t.sort_unstable();
    t
}

#[test]
fn requests_complete_with_their_body_and_hpack_saves_on_repeats() {
    let now = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 10,
        ..Default::default()
    });
    let mut s = Server::new(ServerOptions::default());
    let mut ev = pump(&mut c, &mut s, now, &|_| false);
    assert!(matches!(ev[0], Event::Settings(st) if st.max_concurrent_streams == Some(128)));
    for i in 0..25u64 {
        while c.capacity() == 0 {
            ev.extend(pump(&mut c, &mut s, now, &|_| false));
        }
        c.start_request(i, &req("/1294")).unwrap();
    }
    ev.extend(pump(&mut c, &mut s, now, &|_| false));
    assert_eq!(done_tokens(&ev), (0..25).collect::<Vec<_>>());
    for e in &ev {
        if let Event::Done {
            status,
            body_bytes,
            header_bytes,
            ..
        } = e
        {
            assert_eq!((*status, *body_bytes), (200, 1294));
            assert!(*header_bytes > 0);
        }
    }
    let heads = ev
        .iter()
        .filter(|e| matches!(e, Event::Head { status: 200, .. }))
        .count();
    assert_eq!(heads, 25);
    assert_eq!((c.stats().streams, c.stats().streams_done), (25, 25));
    assert_eq!(
        (s.stats().streams, s.stats().streams_done, s.stats().refused),
        (25, 25, 0)
    );
    assert_eq!(c.stats().data_in, 25 * 1294);
    // The same request 25 times: the first block indexes `:authority` and `:path` into the
    // server's table (GET, http: 1 byte each; 0x41 9 "127.0.0.1"; 0x44 5 "/1294"), the
    // other 24 are four index bytes (request_block).
    assert_eq!(c.stats().header_wire_out, 1 + 1 + 11 + 7 + 24 * 4);
    assert!(c.stats().hpack_saving() > 0.6, "{:?}", c.stats());
    assert!(c.stats().header_wire_out < c.stats().header_plain_out / 3);
    assert_eq!(c.stats().header_wire_out, s.stats().header_wire_in);
}

#[test]
fn the_servers_stream_limit_caps_capacity_and_an_early_burst_waits_instead_of_failing() {
    let now = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 10,
        ..Default::default()
    });
    let mut s = Server::new(ServerOptions {
        max_streams: 2,
        ..Default::default()
    });
    // Before the server's SETTINGS arrive the client assumes 100 and sends its 10 at once.
    assert_eq!(c.capacity(), 10);
    for i in 0..10 {
        c.start_request(i, &req("/10")).unwrap();
    }
    let ev = pump(&mut c, &mut s, now, &|_| false);
    assert_eq!(done_tokens(&ev), (0..10).collect::<Vec<_>>());
    assert_eq!(
        s.stats().refused,
        0,
        "streams sent before the limit was known wait"
    );
    // Now the limit is known: 2 at once.
    assert_eq!(c.limit(), 2);
    assert_eq!(c.capacity(), 2);
    c.start_request(10, &req("/1")).unwrap();
    c.start_request(11, &req("/1")).unwrap();
    assert!(matches!(
        c.start_request(12, &req("/1")),
        Err(StartError::NoCapacity {
            active: 2,
            limit: 2
        })
    ));
}

/// Raw client bytes: the preface with empty SETTINGS.
fn raw_preface() -> Vec<u8> {
    let mut out = frame::PREFACE.to_vec();
    frame::write_head(&mut out, 0, frame::SETTINGS, 0, 0);
    out
}

fn raw_get(enc: &mut loona_hpack::Encoder<'static>, out: &mut Vec<u8>, stream: u32) {
    let block = enc.encode([
        (&b":method"[..], &b"GET"[..]),
        (b":scheme", b"http"),
        (b":authority", b"a"),
        (b":path", b"/5"),
    ]);
    frame::write_headers(out, stream, &block, true, frame::DEFAULT_MAX_FRAME);
}

/// Frames in a byte string: (kind, flags, stream, payload).
fn frames(mut b: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    b = b.strip_prefix(frame::PREFACE).unwrap_or(b);
    let mut v = Vec::new();
    while b.len() >= frame::HEAD_LEN {
        let h = Head::parse(b);
        let end = frame::HEAD_LEN + h.len as usize;
        v.push((h.kind, h.flags, h.stream, b[frame::HEAD_LEN..end].to_vec()));
        b = &b[end..];
    }
    v
}

#[test]
fn a_stream_beyond_the_acknowledged_limit_is_refused_and_counted() {
    let now = Instant::now();
    let mut s = Server::new(ServerOptions {
        max_streams: 2,
        ..Default::default()
    });
    let mut input = raw_preface();
    frame::write_settings_ack(&mut input);
    let mut enc = loona_hpack::Encoder::new();
    for id in [1, 3, 5] {
        raw_get(&mut enc, &mut input, id);
    }
    s.feed(&input, now).unwrap();
    let opened: Vec<u32> = std::iter::from_fn(|| s.poll_event())
        .filter_map(|e| match e {
            ServerEvent::Request { stream, .. } => Some(stream),
            _ => None,
        })
        .collect();
    assert_eq!(opened, vec![1, 3]);
    assert_eq!((s.stats().streams, s.stats().refused), (3, 1));
    let out = frames(s.pending_output());
    let rst = out
        .iter()
        .find(|f| f.0 == frame::RST_STREAM)
        .expect("a RST_STREAM");
    assert_eq!(
        (rst.2, u32::from_be_bytes(rst.3[..4].try_into().unwrap())),
        (5, 7)
    );

    // The client side of a refusal: an event with its code and token, and the count.
    let mut c = Client::new(ClientOptions {
        max_streams: 4,
        ..Default::default()
    });
    let mut srv = Vec::new();
    frame::Settings::default().write(&mut srv);
    c.feed(&srv, now).unwrap();
    c.start_request(42, &req("/")).unwrap();
    let mut rst = Vec::new();
    frame::write_rst_stream(&mut rst, 1, ErrorCode::RefusedStream);
    c.feed(&rst, now).unwrap();
    let ev: Vec<Event> = std::iter::from_fn(|| c.poll_event()).collect();
    assert!(
        ev.contains(&Event::Reset {
            token: 42,
            code: ErrorCode::RefusedStream
        }),
        "{ev:?}"
    );
    assert_eq!(
        (c.stats().refused, c.stats().resets_received, c.active()),
        (1, 1, 0)
    );
}

#[test]
fn flow_control_windows_stall_the_sender_and_window_updates_release_it() {
    let t0 = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 2,
        stream_window: 16_384,
        conn_window: 65_535,
    });
    let mut s = Server::new(ServerOptions::default());
    c.start_request(1, &req("/100000")).unwrap();
    // One exchange at a time, 1 ms apart, so stalls have a length.
    let mut now = t0;
    let mut ev = Vec::new();
    for _ in 0..200 {
        now += Duration::from_millis(1);
        let out = c.pending_output().to_vec();
        c.advance_output(out.len(), now);
        s.feed(&out, now).unwrap();
        while let Some(e) = s.poll_event() {
            if let ServerEvent::Request { stream, .. } = e {
                s.respond(stream, 200, &[], 100_000);
            }
        }
        // The server sends at most one window's worth per turn (as a socket would).
        s.fill(now, 1 << 20, &mut |_, _, n, out| {
            out.resize(out.len() + n, 0)
        });
        now += Duration::from_millis(1);
        let back = s.pending_output().to_vec();
        s.advance_output(back.len(), now);
        c.feed(&back, now).unwrap();
        ev.extend(std::iter::from_fn(|| c.poll_event()));
        if done_tokens(&ev) == [1] {
            break;
        }
    }
    assert!(
        ev.iter().any(|e| matches!(
            e,
            Event::Done {
                token: 1,
                body_bytes: 100_000,
                ..
            }
        )),
        "{ev:?}"
    );
    // Every frame the server sent fits the client's 16 KiB stream window.
    assert!(s.stats().stream_window_stalls >= 1, "{:?}", s.stats());
    assert!(s.stats().stream_window_stalled >= Duration::from_millis(1));
    assert!(c.stats().stream_window_stalls >= 1, "{:?}", c.stats());
}

#[test]
fn goaway_finishes_streams_below_its_last_id_and_returns_the_rest_unprocessed() {
    let now = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 10,
        ..Default::default()
    });
    let mut s = Server::new(ServerOptions::default());
    pump(&mut c, &mut s, now, &|_| false);
    c.start_request(1, &req("/7")).unwrap();
    c.start_request(2, &req("/7")).unwrap();
    // The server takes both, holds its answers, and says GOAWAY (last stream 3).
    let out = c.pending_output().to_vec();
    c.advance_output(out.len(), now);
    s.feed(&out, now).unwrap();
    let held: Vec<u32> = std::iter::from_fn(|| s.poll_event())
        .filter_map(|e| match e {
            ServerEvent::Request { stream, .. } => Some(stream),
            _ => None,
        })
        .collect();
    s.go_away();
    // Meanwhile the client sent two more.
    c.start_request(3, &req("/7")).unwrap();
    c.start_request(4, &req("/7")).unwrap();
    let back = s.pending_output().to_vec();
    s.advance_output(back.len(), now);
    c.feed(&back, now).unwrap();
    let ev: Vec<Event> = std::iter::from_fn(|| c.poll_event()).collect();
    assert_eq!(
        ev,
        vec![
            Event::GoAway {
                last_stream: 3,
                code: ErrorCode::NoError
            },
            Event::NotProcessed { token: 3 },
            Event::NotProcessed { token: 4 },
        ]
    );
    assert_eq!(c.capacity(), 0);
    assert_eq!(c.start_request(5, &req("/")), Err(StartError::GoingAway));
    for id in held {
        s.respond(id, 200, &[], 7);
    }
    let ev = pump(&mut c, &mut s, now, &|_| false);
    assert_eq!(done_tokens(&ev), vec![1, 2]);
    assert_eq!(c.stats().goaways, 1);
}

#[test]
fn ping_is_answered_with_its_data_and_reset_reaches_the_request() {
    let now = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 2,
        ..Default::default()
    });
    let mut input = Vec::new();
    frame::Settings::default().write(&mut input);
    frame::write_ping(&mut input, false, *b"synlab!!");
    c.feed(&input, now).unwrap();
    let out = frames(c.pending_output());
    assert!(
        out.contains(&(frame::PING, frame::FLAG_ACK, 0, b"synlab!!".to_vec())),
        "{out:?}"
    );
    assert!(out.contains(&(frame::SETTINGS, frame::FLAG_ACK, 0, vec![])));
    assert_eq!(c.stats().pings, 1);
    c.start_request(9, &req("/")).unwrap();
    let mut rst = Vec::new();
    frame::write_rst_stream(&mut rst, 1, ErrorCode::Cancel);
    c.feed(&rst, now).unwrap();
    let ev: Vec<Event> = std::iter::from_fn(|| c.poll_event()).collect();
    assert_eq!(
        ev.last(),
        Some(&Event::Reset {
            token: 9,
            code: ErrorCode::Cancel
        })
    );
    assert_eq!(c.stats().refused, 0);
}

#[test]
fn protocol_violations_end_the_connection_with_a_goaway() {
    let now = Instant::now();
    // A frame above our max frame size.
    let mut c = Client::new(ClientOptions::default());
    let mut input = Vec::new();
    frame::Settings::default().write(&mut input);
    frame::write_head(&mut input, 20_000, frame::DATA, 0, 1);
    input.resize(input.len() + 20_000, 0);
    let e = c.feed(&input, now).unwrap_err();
    assert_eq!(e.code, ErrorCode::FrameSizeError);
    assert!(frames(c.pending_output())
        .iter()
        .any(|f| f.0 == frame::GOAWAY));
    assert!(matches!(
        c.start_request(1, &req("/")),
        Err(StartError::Closed(_))
    ));
    assert_eq!(c.capacity(), 0);
    // Not HTTP/2 at all (an HTTP/1.1 request to an h2c server).
    let mut s = Server::new(ServerOptions::default());
    let e = s
        .feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", now)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ProtocolError);
    assert!(e.to_string().contains("preface"), "{e}");
    // The first frame must be SETTINGS.
    let mut c = Client::new(ClientOptions::default());
    let mut p = Vec::new();
    frame::write_ping(&mut p, false, [0; 8]);
    assert_eq!(c.feed(&p, now).unwrap_err().code, ErrorCode::ProtocolError);
}

#[test]
fn settings_are_parsed_and_bad_values_named() {
    let mut st = frame::Settings::default();
    let mut out = Vec::new();
    frame::Settings {
        max_concurrent_streams: Some(7),
        initial_window_size: 1 << 20,
        max_frame_size: 1 << 15,
        ..Default::default()
    }
    .write(&mut out);
    st.apply(&out[frame::HEAD_LEN..]).unwrap();
    assert_eq!(
        (
            st.max_concurrent_streams,
            st.initial_window_size,
            st.max_frame_size
        ),
        (Some(7), 1 << 20, 1 << 15)
    );
    let bad = |id: u16, v: u32| {
        let mut p = id.to_be_bytes().to_vec();
        p.extend_from_slice(&v.to_be_bytes());
        frame::Settings::default().apply(&p).unwrap_err()
    };
    assert_eq!(bad(4, 1 << 31).0, ErrorCode::FlowControlError);
    assert_eq!(bad(5, 100).0, ErrorCode::ProtocolError);
    assert_eq!(bad(2, 2).0, ErrorCode::ProtocolError);
    assert_eq!(
        frame::Settings::default().apply(&[0; 5]).unwrap_err().0,
        ErrorCode::FrameSizeError
    );
    assert_eq!(ErrorCode::from_u32(7).to_string(), "REFUSED_STREAM");
    assert_eq!(ErrorCode::from_u32(0x99).to_u32(), 0x99);
}

#[test]
fn a_server_window_change_moves_open_streams_and_large_frames_follow_its_max_frame_size() {
    let now = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 1,
        ..Default::default()
    });
    let mut s = Server::new(ServerOptions::default());
    pump(&mut c, &mut s, now, &|_| false);
    // A long header is cut into HEADERS + CONTINUATION and put together again.
    let long = "v".repeat(40_000);
    let hdr = [("x-long", long.as_str())];
    c.start_request(
        1,
        &Request {
            headers: &hdr,
            ..req("/3")
        },
    )
    .unwrap();
    let kinds: Vec<u8> = frames(c.pending_output()).iter().map(|f| f.0).collect();
    assert_eq!(
        kinds,
        vec![frame::HEADERS, frame::CONTINUATION, frame::CONTINUATION]
    );
    let ev = pump(&mut c, &mut s, now, &|_| false);
    assert_eq!(done_tokens(&ev), vec![1]);
}

#[test]
fn responses_fed_in_pieces_that_cut_frames_come_out_whole() {
    // A socket's reads end anywhere in a frame (TLS records, a full buffer): each piece is
    // fed as it comes, the frames cut out of them whole.
    let now = Instant::now();
    let mut c = Client::new(ClientOptions {
        max_streams: 10,
        ..Default::default()
    });
    let mut s = Server::new(ServerOptions::default());
    pump(&mut c, &mut s, now, &|_| false);
    for i in 0..10u64 {
        c.start_request(i, &req("/1294")).unwrap();
    }
    let out = c.pending_output().to_vec();
    c.advance_output(out.len(), now);
    s.feed(&out, now).unwrap();
    while let Some(e) = s.poll_event() {
        if let ServerEvent::Request { stream, .. } = e {
            assert!(s.respond(stream, 200, &[], 1294));
        }
    }
    s.fill(now, 1 << 20, &mut |_, _, n, out| {
        out.resize(out.len() + n, b'x')
    });
    let back = s.pending_output().to_vec();
    s.advance_output(back.len(), now);
    let mut ev = Vec::new();
    for piece in back.chunks(1000) {
        c.feed(piece, now).unwrap();
        while let Some(e) = c.poll_event() {
            ev.push(e);
        }
    }
    assert_eq!(done_tokens(&ev), (0..10).collect::<Vec<_>>());
    assert_eq!(c.stats().data_in, 10 * 1294);
}
