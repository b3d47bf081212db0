//! A small, fast zlib writer for orchestration subjects.
//!
//! A subject's JSON is about 200 bytes. zlib at the level Arvo's `pako` uses spends most of its
//! time on such an input clearing its 64 KiB hash table: for one subject, more than compressing.
//! This writer keeps its working memory per thread and sized to the input: greedy LZ77 matching
//! through a hash table of 3-byte prefixes, then one final block with Huffman codes built for the
//! input (or the fixed codes of RFC 1951 when they are smaller, as for very short inputs), in a
//! zlib wrapper (RFC 1950) with the Adler-32 of the input. Any inflater reads it (arvo-core's
//! `pako`, zlib, this crate's parser), and a subject comes out as small as zlib makes it. The bytes
//! differ from zlib's, which nothing compares: arvo-core parses a subject by inflating it.

use std::cell::RefCell;

/// zlib header: deflate with a 32 KiB window (`0x78`), "fastest" compression level, no preset
/// dictionary; `0x7801` is a multiple of 31, as RFC 1950 requires.
const HEADER: [u8; 2] = [0x78, 0x01];

/// Deflate's largest match distance (the window).
const WINDOW: usize = 32 * 1024;
/// Deflate's shortest and longest matches.
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
/// The hash table's largest size (entries); smaller inputs get a table about their size.
const MAX_TABLE_BITS: u32 = 14;

/// Base lengths of the length symbols 257..=285, and their extra bits.
const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195,
    227, 258,
];
const LENGTH_EXTRA: [u8; 29] =
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/// Base distances of the distance symbols 0..=29, and their extra bits.
const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
    4097, 6145, 8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

/// The order in which a dynamic block lists the code lengths of its code-length code.
const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
/// End of block, in the literal/length alphabet.
const END_OF_BLOCK: usize = 256;
/// Symbols of the literal/length alphabet (286 and 287 exist only in the fixed code).
const LITERALS: usize = 288;
const DISTANCES: usize = 30;
const CODE_LENGTHS: usize = 19;

/// Compresses `input` into a complete zlib stream.
pub(super) fn compress(input: &[u8]) -> Vec<u8> {
    thread_local! {
        static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => {
            let out = scratch.compress(input);
            // An unusually long input (a subject with a large `meta`) does not leave its working
            // memory behind on the thread.
            if scratch.tokens.capacity() > KEPT_SCRATCH_TOKENS {
                *scratch = Scratch::default();
            }
            out
        }
        Err(_) => Scratch::default().compress(input),
    })
}

/// The most tokens whose working memory a thread keeps between calls (subjects need a few
/// hundred).
const KEPT_SCRATCH_TOKENS: usize = 16 * 1024;

/// Working memory kept between calls, so that a call allocates only its output.
#[derive(Default)]
struct Scratch {
    tokens: Vec<Token>,
    /// The literal/length and distance symbols the tokens use, each once.
    used_literals: Vec<u16>,
    used_distances: Vec<u16>,
    table: Vec<u32>,
    huffman: HuffmanScratch,
    ops: Vec<LengthOp>,
}

impl Scratch {
    fn compress(&mut self, input: &[u8]) -> Vec<u8> {
        let counts = self.tokenize(input);
        let (used_literals, used_distances) = (&self.used_literals[..], &self.used_distances[..]);
        let literal = Code::<LITERALS>::for_counts(&counts.literal, used_literals, 15, &mut self.huffman);
        let distance = Code::<DISTANCES>::for_counts(&counts.distance, used_distances, 15, &mut self.huffman);
        let header = DynamicHeader::new(&literal, &distance, &mut self.ops, &mut self.huffman);
        let body_bits = |literal: &Code<LITERALS>, distance: &Code<DISTANCES>| {
            body_bits(&counts.literal, used_literals, literal)
                + body_bits(&counts.distance, used_distances, distance)
        };
        let dynamic_bits = header.bits(&self.ops) + body_bits(&literal, &distance);

        let mut bits = BitWriter { out: Vec::with_capacity(input.len() / 2 + 64), acc: 0, len: 0 };
        bits.out.extend_from_slice(&HEADER);
        if dynamic_bits < body_bits(&FIXED.literal, &FIXED.distance) {
            bits.put(1, 1); // BFINAL: the only block
            bits.put(2, 2); // BTYPE 10: dynamic Huffman codes
            header.write(&self.ops, &mut bits);
            write_tokens(&self.tokens, &mut bits, &literal, &distance);
        } else {
            bits.put(1, 1);
            bits.put(1, 2); // BTYPE 01: fixed Huffman codes
            write_tokens(&self.tokens, &mut bits, &FIXED.literal, &FIXED.distance);
        }
        let mut out = bits.finish();
        out.extend_from_slice(&adler2::adler32_slice(input).to_be_bytes());
        out
    }

    /// Greedy LZ77 matching into `self.tokens`; returns how often each symbol is used.
    fn tokenize(&mut self, input: &[u8]) -> Counts {
        let mut counts = Counts { literal: [0; LITERALS], distance: [0; DISTANCES] };
        let tokens = &mut self.tokens;
        tokens.clear();
        let (used_literals, used_distances) = (&mut self.used_literals, &mut self.used_distances);
        used_literals.clear();
        used_distances.clear();
        let count = |counts: &mut [u32], used: &mut Vec<u16>, symbol: usize| {
            if counts[symbol] == 0 {
                used.push(symbol as u16);
            }
            counts[symbol] += 1;
        };
        let table_bits = (usize::BITS - input.len().max(64).leading_zeros()).min(MAX_TABLE_BITS);
        // Each entry holds a position + 1 (0: empty), truncated past 4 GiB: a candidate is only a
        // hint, checked against the input before it is used.
        let table = &mut self.table;
        table.clear();
        table.resize(1 << table_bits, 0);
        let hash = |at: usize| -> usize {
            let word = u32::from(input[at]) | u32::from(input[at + 1]) << 8 | u32::from(input[at + 2]) << 16;
            (word.wrapping_mul(0x9E37_79B1) >> (32 - table_bits)) as usize
        };
        let position = |at: usize| (at as u32).wrapping_add(1);
        let last_hashed = input.len().saturating_sub(MIN_MATCH - 1);
        let mut at = 0;
        while at < input.len() {
            let mut length = 0;
            let mut from = 0;
            if at < last_hashed {
                let slot = hash(at);
                let candidate = table[slot] as usize;
                table[slot] = position(at);
                if candidate > 0 && candidate <= at && at - (candidate - 1) <= WINDOW {
                    from = candidate - 1;
                    let limit = (input.len() - at).min(MAX_MATCH);
                    length = input[from..from + limit]
                        .iter()
                        .zip(&input[at..at + limit])
                        .take_while(|(a, b)| a == b)
                        .count();
                }
            }
            if length >= MIN_MATCH {
                // Both fit: length ≤ 258, distance ≤ 32768.
                let token = Token::Match { length: length as u16, distance: (at - from) as u16 };
                count(&mut counts.literal, used_literals, 257 + length_symbol(length as u16));
                count(&mut counts.distance, used_distances, distance_symbol((at - from) as u16));
                tokens.push(token);
                // Index the positions the match covers, so later text can refer to them.
                for inside in at + 1..(at + length).min(last_hashed) {
                    table[hash(inside)] = position(inside);
                }
                at += length;
            } else {
                count(&mut counts.literal, used_literals, usize::from(input[at]));
                tokens.push(Token::Literal(input[at]));
                at += 1;
            }
        }
        count(&mut counts.literal, used_literals, END_OF_BLOCK);
        counts
    }
}

/// One LZ77 item: a literal byte, or a match of `length` bytes `distance` back.
#[derive(Clone, Copy)]
enum Token {
    Literal(u8),
    Match { length: u16, distance: u16 },
}

/// How often the tokens use each symbol.
struct Counts {
    literal: [u32; LITERALS],
    distance: [u32; DISTANCES],
}

/// The bits the `used` symbols take with `code`, not counting extra bits (the same with any code).
fn body_bits<const N: usize>(counts: &[u32; N], used: &[u16], code: &Code<N>) -> u64 {
    used.iter()
        .map(|&symbol| u64::from(counts[usize::from(symbol)]) * u64::from(code.lengths[usize::from(symbol)]))
        .sum()
}

fn write_tokens(
    tokens: &[Token],
    bits: &mut BitWriter,
    literal: &Code<LITERALS>,
    distance: &Code<DISTANCES>,
) {
    for token in tokens {
        match *token {
            Token::Literal(byte) => literal.write(bits, usize::from(byte)),
            Token::Match { length, distance: back } => {
                let symbol = length_symbol(length);
                literal.write(bits, 257 + symbol);
                bits.put(u32::from(length - LENGTH_BASE[symbol]), u32::from(LENGTH_EXTRA[symbol]));
                let symbol = distance_symbol(back);
                distance.write(bits, symbol);
                bits.put(u32::from(back - DISTANCE_BASE[symbol]), u32::from(DISTANCE_EXTRA[symbol]));
            }
        }
    }
    literal.write(bits, END_OF_BLOCK);
}

/// The length symbol (minus 257) of a match length (3..=258): past the first 8, each power of two
/// is split into four symbols.
fn length_symbol(length: u16) -> usize {
    if length == 258 {
        return 28;
    }
    let v = usize::from(length - 3);
    if v < 8 {
        return v;
    }
    let log = (usize::BITS - 1 - v.leading_zeros()) as usize;
    4 * (log - 1) + ((v >> (log - 2)) & 3)
}

/// The distance symbol of a match distance (1..=32768): past the first 4, each power of two is
/// split into two symbols.
fn distance_symbol(distance: u16) -> usize {
    let v = usize::from(distance - 1);
    if v < 4 {
        return v;
    }
    let log = (usize::BITS - 1 - v.leading_zeros()) as usize;
    2 * log + ((v >> (log - 1)) & 1)
}

/// A canonical Huffman code over `N` symbols: each symbol's length in bits (0: unused) and its
/// code, bit-reversed to be written least significant bit first.
struct Code<const N: usize> {
    lengths: [u8; N],
    codes: [u16; N],
}

impl<const N: usize> Code<N> {
    /// The canonical code for these lengths (RFC 1951, 3.2.2).
    fn from_lengths(lengths: [u8; N]) -> Self {
        let mut count = [0u16; 16];
        for &length in &lengths {
            count[usize::from(length)] += 1;
        }
        count[0] = 0;
        let mut next = [0u16; 16];
        let mut code = 0u16;
        for bits in 1..16 {
            code = (code + count[bits - 1]) << 1;
            next[bits] = code;
        }
        let mut codes = [0u16; N];
        for (symbol, &length) in lengths.iter().enumerate() {
            if length > 0 {
                let code = &mut next[usize::from(length)];
                codes[symbol] = code.reverse_bits() >> (16 - u32::from(length));
                *code += 1;
            }
        }
        Code { lengths, codes }
    }

    /// A Huffman code for these frequencies, no code longer than `max_bits`. Fewer than two used
    /// symbols still get two codes of one bit, as zlib writes them (inflaters reject some
    /// one-symbol codes).
    fn for_counts(counts: &[u32; N], used: &[u16], max_bits: u8, scratch: &mut HuffmanScratch) -> Self {
        let mut lengths = [0u8; N];
        let leaves = &mut scratch.leaves;
        leaves.clear();
        leaves.extend(
            used.iter().map(|&symbol| u64::from(counts[usize::from(symbol)]) << 16 | u64::from(symbol)),
        );
        if leaves.len() < 2 {
            let first = leaves.first().map_or(0, |&leaf| symbol_of(leaf));
            lengths[first] = 1;
            lengths[usize::from(first == 0)] = 1;
            return Code::from_lengths(lengths);
        }
        loop {
            scratch.leaves.sort_unstable();
            if huffman_lengths(scratch, &mut lengths) <= max_bits {
                return Code::from_lengths(lengths);
            }
            // Flatten the frequencies until the deepest code fits.
            for leaf in &mut scratch.leaves {
                let weight = (*leaf >> 17).max(1);
                *leaf = weight << 16 | (*leaf & 0xFFFF);
            }
        }
    }

    fn write(&self, bits: &mut BitWriter, symbol: usize) {
        bits.put(u32::from(self.codes[symbol]), u32::from(self.lengths[symbol]));
    }
}

/// Working memory of [`huffman_lengths`].
#[derive(Default)]
struct HuffmanScratch {
    /// Each used symbol as `weight << 16 | symbol`, so that they sort by weight as integers.
    leaves: Vec<u64>,
    /// Weight, then depth, of each node.
    weight: Vec<u32>,
    parent: Vec<u16>,
}

/// The symbol of a packed leaf.
fn symbol_of(leaf: u64) -> usize {
    (leaf & 0xFFFF) as usize
}

/// Sets the Huffman code length of each leaf of `scratch.leaves` (at least two, sorted by
/// weight) and returns the longest. Two queues instead of a heap: the leaves in order, and the
/// merged nodes, which are made in order of weight.
fn huffman_lengths(scratch: &mut HuffmanScratch, lengths: &mut [u8]) -> u8 {
    let HuffmanScratch { leaves, weight, parent } = scratch;
    let count = leaves.len();
    let nodes = 2 * count - 1;
    // Nodes 0..count are the leaves, count.. the merged nodes; a node's parent comes after it.
    weight.clear();
    weight.extend(leaves.iter().map(|&leaf| (leaf >> 16) as u32));
    weight.resize(nodes, 0);
    parent.clear();
    parent.resize(nodes, 0);
    let (mut leaf, mut merged) = (0, count);
    for next in count..nodes {
        let mut smallest = || {
            let node = if leaf < count && (merged >= next || weight[leaf] <= weight[merged]) {
                leaf += 1;
                leaf - 1
            } else {
                merged += 1;
                merged - 1
            };
            parent[node] = next as u16;
            weight[node]
        };
        // Weights are at most the input's length plus one (`u32` for inputs up to 4 GiB).
        weight[next] = smallest().saturating_add(smallest());
    }
    // Depths from the root (the last node) down, in place of the weights.
    let root = nodes - 1;
    weight[root] = 0;
    for node in (0..root).rev() {
        weight[node] = weight[usize::from(parent[node])] + 1;
    }
    let mut longest = 0;
    for (&depth, &leaf) in weight.iter().zip(leaves.iter()) {
        let depth = u8::try_from(depth).unwrap_or(u8::MAX);
        lengths[symbol_of(leaf)] = depth;
        longest = longest.max(depth);
    }
    longest
}

/// The fixed codes of RFC 1951, 3.2.6.
struct FixedCodes {
    literal: Code<LITERALS>,
    distance: Code<DISTANCES>,
}

static FIXED: std::sync::LazyLock<FixedCodes> = std::sync::LazyLock::new(|| {
    let literal = std::array::from_fn(|symbol| match symbol {
        0..=143 => 8,
        144..=255 => 9,
        256..=279 => 7,
        _ => 8,
    });
    FixedCodes { literal: Code::from_lengths(literal), distance: Code::from_lengths([5; DISTANCES]) }
});

/// One code-length instruction of a dynamic block's header: a length (0..=15), or a repeat
/// (16: the previous length 3–6 times, 17: zero 3–10 times, 18: zero 11–138 times) with its count.
#[derive(Clone, Copy)]
struct LengthOp {
    symbol: u8,
    repeat: u8,
}

impl LengthOp {
    /// The repeat count's extra bits: their number and their value.
    fn extra(self) -> (u32, u32) {
        match self.symbol {
            16 => (2, u32::from(self.repeat) - 3),
            17 => (3, u32::from(self.repeat) - 3),
            18 => (7, u32::from(self.repeat) - 11),
            _ => (0, 0),
        }
    }
}

/// A dynamic block's header (RFC 1951, 3.2.7): how many literal/length and distance lengths it
/// lists, and the code that encodes them (the instructions themselves are in a scratch vector).
struct DynamicHeader {
    literal_count: usize,
    distance_count: usize,
    length_code: Code<CODE_LENGTHS>,
    length_code_count: usize,
}

impl DynamicHeader {
    /// Writes the run-length instructions of the two codes' lengths into `ops`.
    fn new(
        literal: &Code<LITERALS>,
        distance: &Code<DISTANCES>,
        ops: &mut Vec<LengthOp>,
        scratch: &mut HuffmanScratch,
    ) -> Self {
        let used = |lengths: &[u8]| lengths.iter().rposition(|&n| n > 0).map_or(0, |last| last + 1);
        let literal_count = used(&literal.lengths).max(257);
        let distance_count = used(&distance.lengths).max(1);
        let mut all = [0u8; LITERALS + DISTANCES];
        all[..literal_count].copy_from_slice(&literal.lengths[..literal_count]);
        all[literal_count..literal_count + distance_count]
            .copy_from_slice(&distance.lengths[..distance_count]);
        ops.clear();
        run_lengths(&all[..literal_count + distance_count], ops);
        let mut op_counts = [0u32; CODE_LENGTHS];
        let (mut used, mut used_count) = ([0u16; CODE_LENGTHS], 0);
        for op in ops.iter() {
            if op_counts[usize::from(op.symbol)] == 0 {
                used[used_count] = u16::from(op.symbol);
                used_count += 1;
            }
            op_counts[usize::from(op.symbol)] += 1;
        }
        let length_code = Code::for_counts(&op_counts, &used[..used_count], 7, scratch);
        let length_code_count = CODE_LENGTH_ORDER
            .iter()
            .rposition(|&symbol| length_code.lengths[symbol] > 0)
            .map_or(0, |i| i + 1)
            .max(4);
        DynamicHeader { literal_count, distance_count, length_code, length_code_count }
    }

    fn bits(&self, ops: &[LengthOp]) -> u64 {
        let instructions: u64 = ops
            .iter()
            .map(|&op| u64::from(self.length_code.lengths[usize::from(op.symbol)]) + u64::from(op.extra().0))
            .sum();
        5 + 5 + 4 + 3 * self.length_code_count as u64 + instructions
    }

    /// HLIT, HDIST, HCLEN, the code-length code, then the code lengths.
    fn write(&self, ops: &[LengthOp], bits: &mut BitWriter) {
        bits.put((self.literal_count - 257) as u32, 5);
        bits.put((self.distance_count - 1) as u32, 5);
        bits.put((self.length_code_count - 4) as u32, 4);
        for &symbol in &CODE_LENGTH_ORDER[..self.length_code_count] {
            bits.put(u32::from(self.length_code.lengths[symbol]), 3);
        }
        for &op in ops {
            self.length_code.write(bits, usize::from(op.symbol));
            let (count, value) = op.extra();
            bits.put(value, count);
        }
    }
}

/// Appends the code lengths to `ops` as run-length instructions.
fn run_lengths(lengths: &[u8], ops: &mut Vec<LengthOp>) {
    let mut at = 0;
    while at < lengths.len() {
        let length = lengths[at];
        let mut run = lengths[at..].iter().position(|&n| n != length).unwrap_or(lengths.len() - at);
        at += run;
        if length == 0 {
            while run >= 11 {
                let repeat = run.min(138);
                ops.push(LengthOp { symbol: 18, repeat: repeat as u8 });
                run -= repeat;
            }
            if run >= 3 {
                ops.push(LengthOp { symbol: 17, repeat: run as u8 });
                run = 0;
            }
        } else {
            ops.push(LengthOp { symbol: length, repeat: 1 });
            run -= 1;
            while run >= 3 {
                let repeat = run.min(6);
                ops.push(LengthOp { symbol: 16, repeat: repeat as u8 });
                run -= repeat;
            }
        }
        ops.extend(std::iter::repeat_n(LengthOp { symbol: length, repeat: 1 }, run));
    }
}

/// Writes bits least significant first, as deflate packs them.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    len: u32,
}

impl BitWriter {
    /// Appends the `count` (≤ 32) low bits of `value`.
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.len;
        self.len += count;
        // Fewer than 32 bits were pending, so at most 63 are now: flush four bytes at a time.
        if self.len >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.len -= 32;
        }
    }

    /// Pads the last byte with zero bits and returns the bytes.
    fn finish(mut self) -> Vec<u8> {
        let bytes = self.len.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Read as _;

    use proptest::prelude::*;

    use super::*;

    fn inflate(stream: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(stream).read_to_end(&mut out).unwrap();
        out
    }

    fn zlib_default(input: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(input).unwrap();
        encoder.finish().unwrap()
    }

    const SUBJECT_JSON: &str = r#"{"orchestrator":{"name":"arvo.orc.calc.average","version":"1.0.0"},"execution":{"id":"0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0","initiator":"com.bench.client","domain":null},"meta":{"redirectto":"com.bench.client"}}"#;

    #[test]
    fn a_subject_inflates_back_and_is_about_as_small_as_zlibs() {
        let ours = compress(SUBJECT_JSON.as_bytes());
        assert_eq!(inflate(&ours), SUBJECT_JSON.as_bytes());
        let zlib = zlib_default(SUBJECT_JSON.as_bytes());
        assert!(ours.len() < SUBJECT_JSON.len(), "{} bytes from {}", ours.len(), SUBJECT_JSON.len());
        assert!(ours.len() <= zlib.len() + 8, "ours {} bytes, zlib {}", ours.len(), zlib.len());
        assert_eq!(block_type(&ours), 2, "a subject is worth a dynamic block");
    }

    /// The block type (1: fixed codes, 2: dynamic) of a stream this writer made.
    fn block_type(stream: &[u8]) -> u8 {
        (stream[2] >> 1) & 3
    }

    #[test]
    fn a_short_input_keeps_the_fixed_codes() {
        assert_eq!(block_type(&compress(b"{\"a\":1}")), 1);
    }

    #[test]
    fn codes_are_limited_to_their_longest_length_and_complete() {
        // Fibonacci frequencies make a Huffman tree as deep as there are symbols.
        let mut counts = [0u32; 30];
        let (mut a, mut b) = (1u32, 1u32);
        for count in &mut counts {
            *count = a;
            (a, b) = (b, a.saturating_add(b));
        }
        let used: Vec<u16> = (0..30).collect();
        let code = Code::for_counts(&counts, &used, 15, &mut HuffmanScratch::default());
        assert!(code.lengths.iter().all(|&n| (1..=15).contains(&n)), "{:?}", code.lengths);
        // Kraft: a complete prefix code has sum(2^-length) = 1.
        let kraft: u64 = code.lengths.iter().map(|&n| 1u64 << (15 - n)).sum();
        assert_eq!(kraft, 1 << 15);
        // The same with one symbol only: two one-bit codes.
        let code = Code::for_counts(&[0, 0, 7], &[2], 15, &mut HuffmanScratch::default());
        assert_eq!(code.lengths, [1, 0, 1]);
    }

    #[test]
    fn long_zero_runs_in_the_code_lengths() {
        // Symbols far apart leave runs of unused lengths longer than one instruction holds (138).
        let input: Vec<u8> = (0..3000u32).map(|i| if i % 7 == 0 { 255 } else { (i % 3) as u8 }).collect();
        let ours = compress(&input);
        assert_eq!(block_type(&ours), 2);
        assert_eq!(inflate(&ours), input);
    }

    /// The exact bytes of a known input: a change to the writer is seen here (every output must
    /// still inflate, which the other tests check; this one keeps the format from drifting).
    #[test]
    fn known_bytes() {
        assert_eq!(compress(b""), [0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
        let ours = compress(b"abcabcabcabc");
        assert_eq!(inflate(&ours), b"abcabcabcabc");
        // A fixed-code block: three literals and one match of length 9 at distance 3.
        assert_eq!(ours, [0x78, 0x01, 0x4b, 0x4c, 0x4a, 0x86, 0x23, 0x00, 0x1d, 0xe0, 0x04, 0x99]);
    }

    #[test]
    fn long_runs_and_far_matches() {
        // Runs longer than the longest match; text repeated just inside the window (32,000 bytes
        // back) and just outside it (40,000 bytes back, which must not be matched).
        let noise = |n: u32, seed: u32| -> Vec<u8> {
            (0..n).map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 24) as u8).collect()
        };
        let mut input = vec![b'x'; 1000];
        let block = noise(32_000, 7);
        input.extend_from_slice(&block);
        input.extend_from_slice(&block[..3000]);
        let far = noise(40_000, 11);
        input.extend_from_slice(&far);
        input.extend_from_slice(&far[..3000]);
        input.extend_from_slice(&[0, 1, 2]);
        let ours = compress(&input);
        assert_eq!(inflate(&ours), input);
        // The repeat inside the window was matched: the output is well below the noise's size.
        assert!(ours.len() < 1000 + 32_000 + 40_000 + 3000, "{} bytes", ours.len());
    }

    /// Every match length and distance gets the symbol whose range holds it (RFC 1951, 3.2.5).
    #[test]
    fn every_length_and_distance_has_the_right_symbol() {
        for length in 3..=258u16 {
            let symbol = length_symbol(length);
            let offset = length - LENGTH_BASE[symbol];
            assert!(offset < 1 << LENGTH_EXTRA[symbol], "length {length}: symbol {symbol}");
            if symbol + 1 < LENGTH_BASE.len() {
                assert!(length < LENGTH_BASE[symbol + 1], "length {length}: symbol {symbol}");
            }
        }
        assert_eq!(length_symbol(258), 28, "258 has its own symbol");
        assert_eq!(length_symbol(257), 27);
        for distance in 1..=32_768u32 {
            let symbol = distance_symbol(distance as u16);
            let offset = distance - u32::from(DISTANCE_BASE[symbol]);
            assert!(offset < 1 << DISTANCE_EXTRA[symbol], "distance {distance}: symbol {symbol}");
        }
    }

    proptest! {
        #[test]
        fn any_bytes_inflate_back(input in proptest::collection::vec(any::<u8>(), 0..2048)) {
            prop_assert_eq!(inflate(&compress(&input)), input);
        }

        #[test]
        fn repetitive_text_inflates_back(parts in proptest::collection::vec("[a-c\"{}:,]{1,12}", 0..200)) {
            let input = parts.concat().into_bytes();
            prop_assert_eq!(inflate(&compress(&input)), input);
        }
    }
}
