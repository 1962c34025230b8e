//! HTTP/3 as much as a load generator and a file server need (RFC 9114): the control stream
//! with its SETTINGS, HEADERS and DATA frames, and QPACK (RFC 9204) with its static table
//! only. Both ends announce a dynamic table of 0 bytes, so no field line may refer to one and
//! no encoder/decoder stream carries anything. Huffman-coded strings are read (the peer may
//! send them) but never written.

/// Frame types (RFC 9114 7.2).
pub const FRAME_DATA: u64 = 0x00;
pub const FRAME_HEADERS: u64 = 0x01;
pub const FRAME_SETTINGS: u64 = 0x04;
pub const FRAME_GOAWAY: u64 = 0x07;
/// Unidirectional stream types (RFC 9114 6.2, RFC 9204 4.2).
pub const STREAM_CONTROL: u64 = 0x00;
/// Application error codes (RFC 9114 8.1).
pub const H3_NO_ERROR: u32 = 0x100;
pub const H3_FRAME_ERROR: u32 = 0x106;
pub const H3_MESSAGE_ERROR: u32 = 0x10e;

/// QPACK's static table (RFC 9204 Appendix A).
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Why a field section or a frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum H3Error {
    #[error("truncated field section")]
    Truncated,
    #[error("a field line refers to the dynamic table, which this endpoint set to 0 bytes")]
    DynamicReference,
    #[error("static table index {0} is past the table's 99 entries")]
    BadIndex(u64),
    #[error("a Huffman-coded string does not decode")]
    Huffman,
    #[error("the stream's frames break the HTTP/3 framing rules")]
    Frame,
}

/// Appends a QUIC variable-length integer (RFC 9000 16).
pub fn put_varint(b: &mut Vec<u8>, v: u64) {
    match v {
        0..=63 => b.push(v as u8),
        64..=16383 => b.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        16384..=1_073_741_823 => b.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => b.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// A varint at the start of `b` and its length; None when `b` ends first.
pub fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let mut v = u64::from(first & 0x3f);
    for x in b.get(1..len)? {
        v = (v << 8) | u64::from(*x);
    }
    Some((v, len))
}

/// The start of a frame: its type and payload length.
pub fn put_frame_head(b: &mut Vec<u8>, kind: u64, len: u64) {
    put_varint(b, kind);
    put_varint(b, len);
}

/// What opens an endpoint's control stream: its type, then SETTINGS announcing no dynamic
/// table (QPACK_MAX_TABLE_CAPACITY 0 and QPACK_BLOCKED_STREAMS 0 are the defaults, so the
/// frame is empty).
pub fn control_stream_opening() -> Vec<u8> {
    let mut b = Vec::with_capacity(3);
    put_varint(&mut b, STREAM_CONTROL);
    put_frame_head(&mut b, FRAME_SETTINGS, 0);
    b
}

/// A QPACK prefixed integer (RFC 7541 5.1) whose first byte carries `flags` above `prefix` bits.
fn put_int(b: &mut Vec<u8>, flags: u8, prefix: u8, v: u64) {
    let max = (1u64 << prefix) - 1;
    if v < max {
        b.push(flags | v as u8);
        return;
    }
    b.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 128 {
        b.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    b.push(rest as u8);
}

fn get_int(b: &[u8], prefix: u8) -> Result<(u64, usize), H3Error> {
    let max = (1u64 << prefix) - 1;
    let first = u64::from(*b.first().ok_or(H3Error::Truncated)?) & max;
    if first < max {
        return Ok((first, 1));
    }
    let (mut v, mut shift, mut i) = (max, 0u32, 1);
    loop {
        let x = *b.get(i).ok_or(H3Error::Truncated)?;
        i += 1;
        v += u64::from(x & 0x7f) << shift;
        if x & 0x80 == 0 {
            return Ok((v, i));
        }
        shift += 7;
        if shift > 56 {
            return Err(H3Error::Truncated);
        }
    }
}

/// A string after a first byte whose bit `huff_bit` says Huffman and whose low `prefix` bits
/// start the length.
fn get_string(b: &[u8], huff_bit: u8, prefix: u8) -> Result<(Vec<u8>, usize), H3Error> {
    let huffman = b.first().ok_or(H3Error::Truncated)? & huff_bit != 0;
    let (len, n) = get_int(b, prefix)?;
    let raw = b.get(n..n + len as usize).ok_or(H3Error::Truncated)?;
    let s = if huffman {
        // Through the thread's one table and cache: a decoder built per string (loona's
        // `HuffmanDecoder::new`, 257 entries in HashMaps) was ~75 % of the client's CPU
        // against caddy, which codes every header (perf).
        let mut plain = Vec::with_capacity(raw.len() * 8 / 5 + 1);
        crate::http2::unhuffman::decode_into(raw, &mut plain).map_err(|_| H3Error::Huffman)?;
        plain
    } else {
        raw.to_vec()
    };
    Ok((s, n + len as usize))
}

fn static_entry(i: u64) -> Result<(&'static str, &'static str), H3Error> {
    STATIC.get(i as usize).copied().ok_or(H3Error::BadIndex(i))
}

/// One field line: (name, value).
pub type Field = (Vec<u8>, Vec<u8>);

/// Reads a field section (a HEADERS frame's payload).
pub fn decode_fields(block: &[u8]) -> Result<Vec<Field>, H3Error> {
    // The prefix: Required Insert Count and Delta Base. Non-zero insert count needs a table.
    let (ric, n) = get_int(block, 8)?;
    if ric != 0 {
        return Err(H3Error::DynamicReference);
    }
    let (_, m) = get_int(block.get(n..).ok_or(H3Error::Truncated)?, 7)?;
    let mut b = &block[n + m..];
    let mut out = Vec::new();
    while let Some(&first) = b.first() {
        if first & 0x80 != 0 {
            // Indexed field line: 1 T index(6).
            if first & 0x40 == 0 {
                return Err(H3Error::DynamicReference);
            }
            let (i, n) = get_int(b, 6)?;
            let (name, value) = static_entry(i)?;
            out.push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
            b = &b[n..];
        } else if first & 0x40 != 0 {
            // Literal with name reference: 01 N T index(4), then the value.
            if first & 0x10 == 0 {
                return Err(H3Error::DynamicReference);
            }
            let (i, n) = get_int(b, 4)?;
            let (name, _) = static_entry(i)?;
            let (value, m) = get_string(b.get(n..).ok_or(H3Error::Truncated)?, 0x80, 7)?;
            out.push((name.as_bytes().to_vec(), value));
            b = &b[n + m..];
        } else if first & 0x20 != 0 {
            // Literal with literal name: 001 N H len(3), then the value.
            let (name, n) = get_string(b, 0x08, 3)?;
            let (value, m) = get_string(b.get(n..).ok_or(H3Error::Truncated)?, 0x80, 7)?;
            out.push((name, value));
            b = &b[n + m..];
        } else {
            // 0001 / 0000: post-base references, dynamic only.
            return Err(H3Error::DynamicReference);
        }
    }
    Ok(out)
}

/// Encodes one field line: indexed when the static table has name and value, else a literal
/// with the static name when it has the name, else a literal name.
fn put_field(b: &mut Vec<u8>, name: &str, value: &str) {
    if let Some(i) = STATIC.iter().position(|e| *e == (name, value)) {
        put_int(b, 0xc0, 6, i as u64);
        return;
    }
    if let Some(i) = STATIC.iter().position(|e| e.0 == name) {
        put_int(b, 0x50, 4, i as u64);
    } else {
        put_int(b, 0x20, 3, name.len() as u64);
        b.extend_from_slice(name.as_bytes());
    }
    put_int(b, 0x00, 7, value.len() as u64);
    b.extend_from_slice(value.as_bytes());
}

/// A HEADERS frame carrying `fields` (static table and literals only).
pub fn headers_frame(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = vec![0x00, 0x00];
    for (n, v) in fields {
        put_field(&mut block, n, v);
    }
    let mut f = Vec::with_capacity(block.len() + 4);
    put_frame_head(&mut f, FRAME_HEADERS, block.len() as u64);
    f.extend_from_slice(&block);
    f
}

/// The HEADERS frame of `method path` to `authority` over https.
pub fn request_headers(method: &str, authority: &str, path: &str) -> Vec<u8> {
    headers_frame(&[
        (":method", method),
        (":scheme", "https"),
        (":authority", authority),
        (":path", path),
    ])
}

/// What a stream's frames held so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamFrame {
    /// A whole HEADERS frame's field section.
    Headers(Vec<Field>),
    /// DATA payload bytes (a frame's payload may come in several pieces).
    Data(u64),
    /// A frame of another type, skipped.
    Other(u64),
}

/// Reads a request or response stream's frames as bytes arrive: HEADERS whole, DATA only
/// counted (a load generator never keeps bodies), others skipped.
#[derive(Debug, Default)]
pub struct FrameReader {
    /// An incomplete frame head or HEADERS payload.
    pending: Vec<u8>,
    /// Payload bytes of the current frame still to come, and its type (None: at a frame head).
    in_frame: Option<(u64, u64)>,
}

/// The most bytes a HEADERS frame may hold here (fields of a GET or a file's response).
const MAX_HEADERS: u64 = 64 * 1024;

impl FrameReader {
    /// Takes `data`, appending what it completes to `out`.
    pub fn feed(&mut self, mut data: &[u8], out: &mut Vec<StreamFrame>) -> Result<(), H3Error> {
        while !data.is_empty() {
            match self.in_frame {
                Some((FRAME_HEADERS, left)) => {
                    let k = (left as usize - self.pending.len()).min(data.len());
                    self.pending.extend_from_slice(&data[..k]);
                    data = &data[k..];
                    if self.pending.len() as u64 == left {
                        out.push(StreamFrame::Headers(decode_fields(&self.pending)?));
                        self.pending.clear();
                        self.in_frame = None;
                    }
                }
                Some((kind, left)) => {
                    let k = (left as usize).min(data.len());
                    data = &data[k..];
                    out.push(if kind == FRAME_DATA {
                        StreamFrame::Data(k as u64)
                    } else {
                        StreamFrame::Other(k as u64)
                    });
                    self.in_frame = (left > k as u64).then_some((kind, left - k as u64));
                }
                None => {
                    // A frame head: up to two varints of 8 bytes each.
                    let k = (16 - self.pending.len()).min(data.len());
                    self.pending.extend_from_slice(&data[..k]);
                    let Some((kind, n)) = get_varint(&self.pending) else {
                        data = &data[k..];
                        continue;
                    };
                    let Some((len, m)) = get_varint(&self.pending[n..]) else {
                        data = &data[k..];
                        continue;
                    };
                    // Bytes of `data` past the head go back to be read as payload.
                    let used = n + m;
                    let back = self.pending.len() - used;
                    data = &data[k - back..];
                    self.pending.clear();
                    if kind == FRAME_HEADERS && len > MAX_HEADERS {
                        return Err(H3Error::Frame);
                    }
                    if len == 0 {
                        if kind == FRAME_HEADERS {
                            return Err(H3Error::Frame);
                        }
                        continue;
                    }
                    self.in_frame = Some((kind, len));
                }
            }
        }
        Ok(())
    }

    /// True between frames (a stream may end only there).
    pub fn at_boundary(&self) -> bool {
        self.in_frame.is_none() && self.pending.is_empty()
    }
}

/// The value of field `name` in `fields`.
pub fn field<'a>(fields: &'a [Field], name: &str) -> Option<&'a [u8]> {
    fields
        .iter()
        .find(|(n, _)| n == name.as_bytes())
        .map(|(_, v)| v.as_slice())
}

/// The `:status` of a response's fields.
pub fn status_of(fields: &[Field]) -> Option<u16> {
    std::str::from_utf8(field(fields, ":status")?)
        .ok()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_table_has_the_rfc_anchors() {
        assert_eq!(STATIC[17], (":method", "GET"));
        assert_eq!(STATIC[23], (":scheme", "https"));
        assert_eq!(STATIC[25], (":status", "200"));
        assert_eq!(STATIC[63], (":status", "100"));
        assert_eq!(STATIC[71], (":status", "500"));
        assert_eq!(STATIC[92], ("server", ""));
        assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
    }

    /// A request made here reads back as the same fields, through a reader fed one byte at a
    /// time, with a DATA frame after it counted and an unknown frame skipped.
    #[test]
    fn request_round_trips_byte_by_byte() {
        let mut wire = request_headers("GET", "synlab.test", "/file/1000");
        put_frame_head(&mut wire, 0x21, 3); // a reserved (grease) type
        wire.extend_from_slice(b"abc");
        put_frame_head(&mut wire, FRAME_DATA, 5);
        wire.extend_from_slice(b"hello");
        let mut r = FrameReader::default();
        let mut out = Vec::new();
        for b in &wire {
            r.feed(std::slice::from_ref(b), &mut out).unwrap();
        }
        assert!(r.at_boundary());
        let StreamFrame::Headers(f) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(field(f, ":method"), Some(&b"GET"[..]));
        assert_eq!(field(f, ":scheme"), Some(&b"https"[..]));
        assert_eq!(field(f, ":authority"), Some(&b"synlab.test"[..]));
        assert_eq!(field(f, ":path"), Some(&b"/file/1000"[..]));
        let data: u64 = out
            .iter()
            .map(|x| match x {
                StreamFrame::Data(n) => *n,
                _ => 0,
            })
            .sum();
        assert_eq!(data, 5);
    }

    #[test]
    fn response_statuses_in_and_out_of_the_table() {
        for status in [200u16, 404, 500, 299] {
            let s = status.to_string();
            let f = headers_frame(&[(":status", &s), ("content-length", "12"), ("x-a", "b")]);
            let (_, n) = get_varint(&f).unwrap();
            let (len, m) = get_varint(&f[n..]).unwrap();
            let fields = decode_fields(&f[n + m..n + m + len as usize]).unwrap();
            assert_eq!(status_of(&fields), Some(status));
            assert_eq!(field(&fields, "content-length"), Some(&b"12"[..]));
            assert_eq!(field(&fields, "x-a"), Some(&b"b"[..]));
        }
    }

    /// RFC 7541 C.4.1's Huffman "www.example.com", as a literal with the :authority name.
    #[test]
    fn huffman_values_decode() {
        let mut block = vec![0x00, 0x00, 0x50, 0x80 | 12];
        block.extend_from_slice(&[
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ]);
        let f = decode_fields(&block).unwrap();
        assert_eq!(field(&f, ":authority"), Some(&b"www.example.com"[..]));
    }

    #[test]
    fn dynamic_references_are_refused() {
        assert_eq!(decode_fields(&[0x01, 0x00]), Err(H3Error::DynamicReference));
        assert_eq!(
            decode_fields(&[0x00, 0x00, 0x80 | 3]),
            Err(H3Error::DynamicReference)
        );
    }
}
