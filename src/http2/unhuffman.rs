//! HPACK's Huffman-coded strings made plain, through one table per thread and a cache of the
//! strings decoded lately: `loona_hpack`'s decoder builds a Huffman table (257 entries in nested
//! HashMaps) for every coded string, which against nginx (every response header coded) was 60 %
//! of the client's CPU (perf, bench/h2.sh: ~200 us per response). The codec's decoder
//! ([`super::hpack`]) and HTTP/3's QPACK reader (`quic::h3`, the same code) take each string
//! from here ([`decode_into`]); [`plain`] rewrites a whole block with its strings plain
//! (RFC 7541 §6: the same fields for any decoder).

use loona_hpack::huffman::HuffmanDecoder;

/// Why a block could not be rewritten (it is then not HPACK: a compression error).
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed;

/// An integer with an `n`-bit prefix at `b[*at]` (RFC 7541 §5.1); moves `at` past it.
pub(super) fn int(b: &[u8], at: &mut usize, n: u8) -> Result<usize, Malformed> {
    let mask = (1usize << n) - 1;
    let mut v = (*b.get(*at).ok_or(Malformed)? as usize) & mask;
    *at += 1;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let byte = *b.get(*at).ok_or(Malformed)?;
        *at += 1;
        v += ((byte & 0x7f) as usize) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        if shift > 28 {
            return Err(Malformed);
        }
    }
}

/// Writes `v` with an `n`-bit prefix whose high bits are `flags` (RFC 7541 §5.1).
pub(super) fn put_int(out: &mut Vec<u8>, flags: u8, n: u8, mut v: usize) {
    let mask = (1usize << n) - 1;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    v -= mask;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Copies the string literal at `b[*at]` to `out` uncoded.
fn string(
    b: &[u8],
    at: &mut usize,
    out: &mut Vec<u8>,
    huff: &mut Decoded,
) -> Result<(), Malformed> {
    let coded = *b.get(*at).ok_or(Malformed)? & 0x80 != 0;
    let len = int(b, at, 7)?;
    let raw = b.get(*at..*at + len).ok_or(Malformed)?;
    *at += len;
    if coded {
        let plain = huff.decode(raw)?;
        put_int(out, 0, 7, plain.len());
        out.extend_from_slice(plain);
    } else {
        put_int(out, 0, 7, len);
        out.extend_from_slice(raw);
    }
    Ok(())
}

/// Coded strings decoded lately, by their coded bytes: a server's response headers repeat
/// (content-length, last-modified, etag) and the crate's decoder walks bits through HashMaps
/// (70 % of the client's CPU against nginx once the table was built once). A direct-mapped
/// cache: one hash and one compare a string, no allocation once its slot holds it (a SipHash
/// map cost ~2 % of the client's CPU, perf).
struct Decoded {
    table: HuffmanDecoder,
    slots: Vec<Slot>,
}

/// A coded string and its plain form (`coded` empty: none yet).
#[derive(Default)]
struct Slot {
    coded: Vec<u8>,
    plain: Vec<u8>,
}

/// How many decoded strings are kept (a power of two; a string evicts the one in its slot).
const SLOTS: usize = 256;

/// FNV-1a: short strings, one pass.
fn slot_of(raw: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in raw {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)) as usize & (SLOTS - 1)
}

impl Decoded {
    fn decode(&mut self, raw: &[u8]) -> Result<&[u8], Malformed> {
        let slot = &mut self.slots[slot_of(raw)];
        if slot.coded.is_empty() || slot.coded != raw {
            slot.plain = self.table.decode(raw).map_err(|_| Malformed)?;
            slot.coded.clear();
            slot.coded.extend_from_slice(raw);
        }
        Ok(&slot.plain)
    }
}

thread_local! {
    /// The Huffman table, built once per thread (the worker's loop is one).
    static HUFF: std::cell::RefCell<Decoded> = std::cell::RefCell::new(Decoded {
        table: HuffmanDecoder::new(),
        slots: (0..SLOTS).map(|_| Slot::default()).collect(),
    });
}

/// The Huffman-coded string `raw`, plain, appended to `out` (from the thread's cache). QPACK
/// codes its strings with HPACK's Huffman code (RFC 9204 §4.1.2): `quic::h3` reads them here.
pub(crate) fn decode_into(raw: &[u8], out: &mut Vec<u8>) -> Result<(), Malformed> {
    HUFF.with(|h| {
        let mut h = h.borrow_mut();
        out.extend_from_slice(h.decode(raw)?);
        Ok(())
    })
}

/// `block` with every Huffman-coded string plain, into `out` (cleared first); false when the
/// block has none (`out` is then not needed: decode `block` as it is).
pub fn plain(block: &[u8], out: &mut Vec<u8>) -> Result<bool, Malformed> {
    HUFF.with(|h| rewrite(block, out, &mut h.borrow_mut()))
}

fn rewrite(block: &[u8], out: &mut Vec<u8>, huff: &mut Decoded) -> Result<bool, Malformed> {
    out.clear();
    let mut at = 0;
    let mut any = false;
    while at < block.len() {
        let first = block[at];
        let start = at;
        // The representation's index prefix (RFC 7541 §6): indexed (7), literal with
        // indexing (6), size update (5, no strings), without / never indexed (4).
        let (prefix, strings) = if first & 0x80 != 0 {
            (7, false)
        } else if first & 0x40 != 0 {
            (6, true)
        } else if first & 0x20 != 0 {
            (5, false)
        } else {
            (4, true)
        };
        let index = int(block, &mut at, prefix)?;
        out.extend_from_slice(&block[start..at]);
        if strings {
            if index == 0 {
                any |= block.get(at).ok_or(Malformed)? & 0x80 != 0;
                string(block, &mut at, out, huff)?;
            }
            any |= block.get(at).ok_or(Malformed)? & 0x80 != 0;
            string(block, &mut at, out, huff)?;
        }
    }
    Ok(any)
}
