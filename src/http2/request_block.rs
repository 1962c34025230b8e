//! The client's request header blocks (HPACK, RFC 7541), encoded once per request head and
//! reused: a load sends the same few heads (`:authority`, a mix's paths) again and again, and
//! re-encoding each through `loona_hpack` (a scan of its tables per field, a new Vec per block)
//! cost per request what a copy of the cached bytes does not. Values are indexed into the
//! server's dynamic table the first time (as nghttp2 does for h2load), so later blocks are a
//! few index bytes. Entries are never evicted: a field that does not fit any more goes as a
//! literal without indexing, so an index, once sent, stays valid until the table only grows
//! (which a generation number tells the cache).

use super::unhuffman::put_int;

/// The HPACK static table (RFC 7541 Appendix A), index 1 first.
pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The dynamic table's size before the server's SETTINGS say otherwise (RFC 7541 §4.2).
const DEFAULT_TABLE: usize = 4096;

/// How many heads are kept encoded (then all forgotten at once: a mix of more paths than
/// this re-encodes, still correctly).
const KEPT: usize = 64;

/// One encoded head: its fields, the block, the block's plain size (`name: value\r\n` each).
struct Cached {
    fields: Vec<(Vec<u8>, Vec<u8>)>,
    block: Vec<u8>,
    plain: u64,
    /// The table's generation the block's indexes refer to.
    generation: u32,
}

/// The request encoder of one connection (its own side of the server's dynamic table).
pub struct RequestEncoder {
    /// What we inserted into the server's dynamic table, oldest first (never evicted).
    table: Vec<(Vec<u8>, Vec<u8>)>,
    /// The table's size as RFC 7541 §4.1 counts it (32 + name + value per entry).
    used: usize,
    /// The table's maximum size we encode against.
    max: usize,
    /// A size update owed at the start of the next block (the server lowered its table).
    resize: Option<usize>,
    /// Bumped whenever an index of the table changes (an insertion, a reset).
    generation: u32,
    cache: Vec<Cached>,
}

impl Default for RequestEncoder {
    fn default() -> Self {
        RequestEncoder {
            table: Vec::new(),
            used: 0,
            max: DEFAULT_TABLE,
            resize: None,
            generation: 0,
            cache: Vec::new(),
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Whether `fields` are the `kept` ones, in order.
fn same<'f>(
    kept: &[(Vec<u8>, Vec<u8>)],
    mut fields: impl Iterator<Item = (&'f [u8], &'f [u8])>,
) -> bool {
    for (n, v) in kept {
        match fields.next() {
            Some((fname, fvalue)) if fname == &n[..] && fvalue == &v[..] => {}
            _ => return false,
        }
    }
    fields.next().is_none()
}

impl RequestEncoder {
    /// The server's SETTINGS_HEADER_TABLE_SIZE: a smaller table than ours empties it (a
    /// size update goes first in the next block); a larger one is not needed.
    pub fn peer_table_size(&mut self, size: u32) {
        let size = size as usize;
        if size < self.max {
            self.table.clear();
            self.used = 0;
            self.max = size;
            self.resize = Some(size);
            self.generation += 1;
        }
    }

    /// The block for `fields` (and its plain size): the cached one while the table's indexes
    /// hold, else encoded now (which may insert into the table).
    pub fn block<'f>(
        &mut self,
        fields: impl Iterator<Item = (&'f [u8], &'f [u8])> + Clone,
    ) -> (&[u8], u64) {
        let generation = self.generation;
        let hit = self
            .cache
            .iter()
            .position(|c| c.generation == generation && same(&c.fields, fields.clone()));
        let at = match hit {
            Some(at) => at,
            None => {
                self.cache.retain(|c| c.generation == generation);
                if self.cache.len() >= KEPT {
                    self.cache.clear();
                }
                let c = self.encode(fields);
                self.cache.push(c);
                self.cache.len() - 1
            }
        };
        let c = &self.cache[at];
        (&c.block, c.plain)
    }

    fn encode<'f>(&mut self, fields: impl Iterator<Item = (&'f [u8], &'f [u8])>) -> Cached {
        let mut block = Vec::with_capacity(32);
        if let Some(size) = self.resize.take() {
            put_int(&mut block, 0x20, 5, 0);
            put_int(&mut block, 0x20, 5, size);
        }
        let mut kept = Vec::new();
        let mut plain = 0;
        let mut inserted = false;
        for (name, value) in fields {
            plain += (name.len() + value.len() + 4) as u64;
            kept.push((name.to_vec(), value.to_vec()));
            let (full, named) = self.find(name, value);
            if let Some(i) = full {
                put_int(&mut block, 0x80, 7, i);
                continue;
            }
            let size = 32 + name.len() + value.len();
            let index = self.used + size <= self.max;
            let (flags, prefix) = if index { (0x40, 6) } else { (0x00, 4) };
            match named {
                Some(i) => put_int(&mut block, flags, prefix, i),
                None => {
                    block.push(flags);
                    put_str(&mut block, name);
                }
            }
            put_str(&mut block, value);
            if index {
                self.table.push((name.to_vec(), value.to_vec()));
                self.used += size;
                inserted = true;
            }
        }
        if inserted {
            self.generation += 1;
        }
        Cached {
            fields: kept,
            block,
            plain,
            // A block that inserted entries holds for its own sending only (it carries the
            // literals): the next request with these fields is encoded again, as indexes.
            generation: if inserted {
                self.generation.wrapping_sub(1)
            } else {
                self.generation
            },
        }
    }

    /// The index of the field (name and value), else of an entry with its name.
    fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut named = None;
        for (i, (n, v)) in STATIC.iter().enumerate() {
            if *n == name {
                if *v == value {
                    return (Some(i + 1), None);
                }
                named.get_or_insert(i + 1);
            }
        }
        // The newest entry is index 62 (RFC 7541 §2.3.3).
        let newest = self.table.len();
        for (k, (n, v)) in self.table.iter().enumerate() {
            if n[..] == *name {
                let i = STATIC.len() + newest - k;
                if v[..] == *value {
                    return (Some(i), None);
                }
                named.get_or_insert(i);
            }
        }
        (None, named)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(path: &[u8]) -> [(&[u8], &[u8]); 4] {
        [
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":authority", b"127.0.0.1:8080"),
            (b":path", path),
        ]
    }

    fn decode(dec: &mut loona_hpack::Decoder<'static>, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut got = Vec::new();
        dec.decode_with_cb(block, |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap();
        got
    }

    fn owned(f: &[(&[u8], &[u8])]) -> Vec<(Vec<u8>, Vec<u8>)> {
        f.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()
    }

    #[test]
    fn repeated_heads_become_index_bytes_that_a_decoder_reads_back() {
        let mut enc = RequestEncoder::default();
        let mut dec = loona_hpack::Decoder::new();
        let paths: [&[u8]; 3] = [b"/f", b"/g", b"/f"];
        for (k, p) in paths.iter().cycle().take(9).enumerate() {
            let h = head(p);
            let (block, plain) = enc.block(h.iter().copied());
            let block = block.to_vec();
            assert_eq!(decode(&mut dec, &block), owned(&h), "request {k}");
            assert_eq!(plain, 14 + 15 + 28 + 11, "`name: value\\r\\n` each");
            if k >= 2 {
                // Everything indexed: GET, http, the authority and the path, 1 byte each.
                assert_eq!(block.len(), 4, "request {k}: {block:02x?}");
            }
        }
        assert_eq!(enc.table.len(), 3, "the authority and two paths, once each");
    }

    #[test]
    fn a_smaller_server_table_is_announced_and_a_zero_table_never_indexes() {
        let mut enc = RequestEncoder::default();
        let mut dec = loona_hpack::Decoder::new();
        let h = head(b"/f");
        let b = enc.block(h.iter().copied()).0.to_vec();
        assert_eq!(decode(&mut dec, &b), owned(&h));
        enc.peer_table_size(0);
        for _ in 0..3 {
            let b = enc.block(h.iter().copied()).0.to_vec();
            assert_eq!(decode(&mut dec, &b), owned(&h));
        }
        assert!(enc.table.is_empty());
    }

    #[test]
    fn a_field_that_does_not_fit_goes_literal_and_leaves_the_indexes_alone() {
        let mut enc = RequestEncoder::default();
        let mut dec = loona_hpack::Decoder::new();
        let long = vec![b'a'; 5000];
        let mut path = b"/".to_vec();
        path.extend_from_slice(&long);
        for p in [&b"/f"[..], &path, &b"/f"[..], &path] {
            let h = head(p);
            let b = enc.block(h.iter().copied()).0.to_vec();
            assert_eq!(decode(&mut dec, &b), owned(&h));
        }
        assert_eq!(
            enc.table.len(),
            2,
            "the authority and /f; the long path never"
        );
    }
}
