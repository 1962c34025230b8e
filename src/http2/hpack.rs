//! HPACK header block decoding (RFC 7541) with no allocation per field: the dynamic table's
//! entries live in one byte arena (evicted ones leave a dead prefix, dropped in one move now and
//! then), Huffman-coded strings come through `unhuffman`'s cache of decoded strings. nginx sends
//! every response header but `:status` as a literal with incremental indexing, so a decoder that
//! owns each table entry (loona-hpack: two Vecs per insertion, freed at eviction) allocated a
//! dozen times per response (malloc/free and its decoder ~9 % of the client's CPU, perf).

use super::request_block::STATIC;
use super::unhuffman::{self, Malformed};
use std::collections::VecDeque;

/// RFC 7541 §4.1: an entry's size is its name's and value's lengths plus 32.
const ENTRY_OVERHEAD: usize = 32;
/// The dead prefix worth moving the arena for (and only when it is half the arena).
const COMPACT_AT: usize = 4096;

/// One connection's HPACK decoder (its side of the peer's dynamic table).
pub struct Decoder {
    /// The entries' bytes, each name then value, oldest first, from `dead` on.
    arena: Vec<u8>,
    /// Bytes at the arena's front of evicted entries.
    dead: usize,
    /// (offset in the arena, name length, value length), oldest first.
    entries: VecDeque<(usize, usize, usize)>,
    /// The table's size as §4.1 counts it.
    size: usize,
    /// Its maximum now (the peer's last size update).
    max: usize,
    /// The most the peer may set it to (our SETTINGS_HEADER_TABLE_SIZE).
    limit: usize,
    /// A field's name and value as decoded (literals, Huffman-coded strings).
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder whose table may hold `limit` bytes (our SETTINGS_HEADER_TABLE_SIZE).
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            arena: Vec::new(),
            dead: 0,
            entries: VecDeque::new(),
            size: 0,
            max: limit,
            limit,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Entries in the dynamic table.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the dynamic table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Decodes a header block: `f` gets each field, in order. Err: not HPACK (a compression
    /// error: the connection is over, the table's state no longer the peer's).
    pub fn decode(
        &mut self,
        block: &[u8],
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Malformed> {
        let mut at = 0;
        let mut fields = 0;
        while at < block.len() {
            let first = block[at];
            if first & 0x80 != 0 {
                // Indexed (§6.1).
                let i = unhuffman::int(block, &mut at, 7)?;
                let (n, v) = self.entry(i)?;
                f(n, v);
            } else if first & 0x20 != 0 && first & 0x40 == 0 {
                // A dynamic table size update (§6.3): only before the block's first field.
                if fields > 0 {
                    return Err(Malformed);
                }
                let max = unhuffman::int(block, &mut at, 5)?;
                if max > self.limit {
                    return Err(Malformed);
                }
                self.max = max;
                self.evict_to(max);
                continue;
            } else {
                // A literal (§6.2): with incremental indexing (6-bit index), else without or
                // never indexed (4-bit).
                let indexing = first & 0x40 != 0;
                let i = unhuffman::int(block, &mut at, if indexing { 6 } else { 4 })?;
                let mut name = std::mem::take(&mut self.name);
                let mut value = std::mem::take(&mut self.value);
                name.clear();
                value.clear();
                let r = self.literal(block, &mut at, i, &mut name, &mut value);
                if r.is_ok() {
                    f(&name, &value);
                    if indexing {
                        self.insert(&name, &value);
                    }
                }
                self.name = name;
                self.value = value;
                r?;
            }
            fields += 1;
        }
        Ok(())
    }

    /// A literal's name (by index `i`, or a string when 0) and value, into the buffers.
    fn literal(
        &self,
        block: &[u8],
        at: &mut usize,
        i: usize,
        name: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<(), Malformed> {
        if i == 0 {
            string(block, at, name)?;
        } else {
            name.extend_from_slice(self.entry(i)?.0);
        }
        string(block, at, value)
    }

    /// Field `i` of the static table (1-61) or the dynamic one (62 on: the newest first).
    fn entry(&self, i: usize) -> Result<(&[u8], &[u8]), Malformed> {
        if i == 0 {
            return Err(Malformed);
        }
        if i <= STATIC.len() {
            return Ok(STATIC[i - 1]);
        }
        let newest = i - STATIC.len() - 1;
        let at = self
            .entries
            .len()
            .checked_sub(newest + 1)
            .ok_or(Malformed)?;
        let (off, n, v) = self.entries[at];
        Ok((&self.arena[off..off + n], &self.arena[off + n..off + n + v]))
    }

    /// Adds a field to the dynamic table, evicting the oldest to make room (§4.4); one larger
    /// than the table empties it.
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - size);
        if self.dead >= COMPACT_AT && self.dead * 2 >= self.arena.len() {
            self.arena.drain(..self.dead);
            for e in self.entries.iter_mut() {
                e.0 -= self.dead;
            }
            self.dead = 0;
        }
        let off = self.arena.len();
        self.arena.extend_from_slice(name);
        self.arena.extend_from_slice(value);
        self.entries.push_back((off, name.len(), value.len()));
        self.size += size;
    }

    /// Evicts the oldest entries until the table's size is at most `max`.
    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some((off, n, v)) = self.entries.pop_front() else {
                break;
            };
            self.size -= n + v + ENTRY_OVERHEAD;
            self.dead = off + n + v;
        }
        if self.entries.is_empty() {
            self.arena.clear();
            self.dead = 0;
            self.size = 0;
        }
    }
}

/// The string literal at `block[*at]` (§5.2), plain, appended to `out`.
fn string(block: &[u8], at: &mut usize, out: &mut Vec<u8>) -> Result<(), Malformed> {
    let coded = *block.get(*at).ok_or(Malformed)? & 0x80 != 0;
    let len = unhuffman::int(block, at, 7)?;
    let raw = block.get(*at..*at + len).ok_or(Malformed)?;
    *at += len;
    if coded {
        unhuffman::decode_into(raw, out)
    } else {
        out.extend_from_slice(raw);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both decoders, block by block: the same fields, and the same table afterwards (the
    /// next block's indexes tell).
    fn same_as_loona(blocks: &[Vec<u8>], limit: usize) {
        let mut ours = Decoder::new(limit);
        let mut theirs = loona_hpack::Decoder::new();
        theirs.set_max_table_size(limit);
        for b in blocks {
            let mut got = Vec::new();
            ours.decode(b, |n, v| got.push((n.to_vec(), v.to_vec())))
                .unwrap();
            assert_eq!(got, theirs.decode(b).unwrap());
        }
    }

    #[test]
    fn blocks_decode_as_loona_decodes_them_through_insertions_and_evictions() {
        let mut enc = loona_hpack::Encoder::new();
        let mut blocks = Vec::new();
        for i in 0..200u32 {
            let date = format!("Sat, 28 Nov 2026 16:{:02}:{:02} GMT", i / 60, i % 60);
            let len = (1294 + i).to_string();
            // A new name each time: the encoder indexes it (a literal with indexing), large
            // ones evict several older entries, one of 1,000+ bytes empties the table.
            let name = format!("x-h{}", i % 50);
            let big = vec![b'a' + (i % 26) as u8; (i as usize * 37) % 1500];
            blocks.push(enc.encode([
                (&b":status"[..], &b"200"[..]),
                (&b"server"[..], &b"nginx/1.22.1"[..]),
                (&b"date"[..], date.as_bytes()),
                (&b"content-length"[..], len.as_bytes()),
                (name.as_bytes(), &big[..]),
                (&b"etag"[..], &b"\"6568a1f0-50e\""[..]),
            ]));
        }
        same_as_loona(&blocks, 4096);
    }

    #[test]
    fn coded_strings_indexed_names_and_size_updates() {
        // RFC 7541 C.4.1 (Huffman-coded `www.example.com`, with indexing), then a block that
        // refers to it (62), then a size update to 0 (the table empties) and a literal.
        let c41: &[u8] = &[
            0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab,
            0x90, 0xf4, 0xff,
        ];
        let blocks = vec![
            c41.to_vec(),
            vec![0x82, 0xbe],
            vec![0x20, 0x04, 0x03, b'f', b'o', b'o'],
        ];
        same_as_loona(&blocks, 4096);
        let mut d = Decoder::new(4096);
        let mut got = Vec::new();
        for b in &blocks {
            d.decode(b, |n, v| got.push((n.to_vec(), v.to_vec())))
                .unwrap();
        }
        assert_eq!(
            got[3],
            (b":authority".to_vec(), b"www.example.com".to_vec())
        );
        assert_eq!(
            got[5],
            (b":authority".to_vec(), b"www.example.com".to_vec())
        );
        assert!(d.is_empty(), "the size update to 0 emptied the table");
    }

    #[test]
    fn bad_blocks_are_refused() {
        let mut d = Decoder::new(4096);
        // Index 0, an index past the table, a truncated string, a size update above our
        // limit, a size update after a field.
        for b in [
            &[0x80][..],
            &[0xbe][..],
            &[0x40, 0x05, b'a'][..],
            &[0x3f, 0xe2, 0x1f][..],
            &[0x82, 0x20][..],
        ] {
            assert_eq!(d.decode(b, |_, _| {}), Err(Malformed), "{b:?}");
        }
    }

    #[test]
    fn the_arena_stays_bounded_however_many_entries_pass_through() {
        let mut d = Decoder::new(4096);
        let mut block = Vec::new();
        for i in 0..10_000u32 {
            block.clear();
            block.push(0x40);
            block.push(4);
            block.extend_from_slice(b"x-id");
            let v = i.to_string();
            block.push(v.len() as u8);
            block.extend_from_slice(v.as_bytes());
            let mut got = None;
            d.decode(&block, |_, v| got = Some(v.to_vec())).unwrap();
            assert_eq!(got.unwrap(), v.as_bytes());
        }
        // Each entry is 32 + 4 + up to 4 bytes: the table holds ~100 of them.
        assert!(d.len() <= 4096 / 36);
        assert!(d.arena.len() <= 2 * COMPACT_AT + 4096, "{}", d.arena.len());
        // The newest entry is index 62.
        let mut got = None;
        d.decode(&[0xbe], |_, v| got = Some(v.to_vec())).unwrap();
        assert_eq!(got.unwrap(), b"9999");
    }
}
