//! The HPACK pre-decoding of the engine's HTTP/2 codec (`http2::unhuffman`): Huffman-coded
//! strings come out plain and the block decodes to the same fields; blocks without coded
//! strings are left alone; a truncated block is refused. (Its cost against nginx: bench/h2.sh.)

use synlab::http2::unhuffman::{plain, Malformed};

/// RFC 7541 C.4.1: the first request, Huffman-coded: `:authority: www.example.com` as a
/// literal with indexing whose value is coded.
const C41: &[u8] = &[
    0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4,
    0xff,
];

fn fields(block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut d = loona_hpack::Decoder::new();
    d.decode(block).unwrap()
}

#[test]
fn coded_strings_come_out_plain_and_decode_to_the_same_fields() {
    let mut out = Vec::new();
    assert_eq!(plain(C41, &mut out), Ok(true));
    assert_eq!(&out[..4], &C41[..4]);
    // 15: plain (no H bit), 15 bytes.
    assert_eq!(out[4], 15);
    assert_eq!(&out[5..], b"www.example.com");
    assert_eq!(fields(&out), fields(C41));
    // A block with no coded string is left to decode as it is.
    let again = out.clone();
    assert_eq!(plain(&again, &mut out), Ok(false));
}

#[test]
fn long_strings_and_literal_names_and_a_truncated_block() {
    let mut enc = loona_hpack::Encoder::new();
    let long = vec![b'x'; 300];
    let block = enc.encode([(&b"x-long"[..], &long[..]), (&b":status"[..], &b"200"[..])]);
    let mut out = Vec::new();
    assert_eq!(plain(&block, &mut out), Ok(false));
    assert_eq!(out, block, "a block without coded strings is copied whole");
    assert_eq!(fields(&out), fields(&block));
    assert_eq!(plain(&C41[..10], &mut out), Err(Malformed));
}
