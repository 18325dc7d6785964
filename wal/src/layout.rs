//! The log file's bytes: header, state word, records. Pure encoding and decoding, no I/O: a record
//! is stored through the [`LineStreamer`] its caller hands in (`store_record_lines`).
//!
//! ```text
//! file offset 0                                   64      72     128      136   DATA_OFFSET (4096)
//!      +------------------------------------------+-------+------+--------+-----+------------------+
//!      | header: written once at create, sealed   | state | zero | capa-  | zero| data area:       |
//!      | by its CRC32C                            | word  |      | city   |     | `capacity` bytes |
//!      +------------------------------------------+-------+------+--------+-----+------------------+
//!
//! header (64 B, line 0)
//!      0        8         12        16          32            40          48         60      64
//!      +--------+---------+---------+-----------+-------------+-----------+----------+-------+
//!      | magic  | version | framing | uuid      | data offset | capacity  | reserved | crc32c|
//!      | 8 B    | u32     | u32     | 16 B      | u64         | u64       | zero     | u32   |
//!      +--------+---------+---------+-----------+-------------+-----------+----------+-------+
//!      the CRC32C covers bytes 0..60.
//!
//! state word (8 B at offset 64, alone in cache line 1, outside the header's checksum)
//!      bit 0                        36                 56        64
//!      +----------------------------+------------------+---------+
//!      | tail: see below (u36)      | generation (u20) | check   |
//!      +----------------------------+------------------+---------+
//!      check: CRC-8 (polynomial 0x07, initial value 0xFF) of the word's first 7 bytes (catches
//!      every flip of up to three bits: a damaged word is an error, never a different tail or
//!      generation; and a zeroed word is an error, not tail 0 of generation 0).
//!      raw log:    tail = bytes in the log, exactly (persisted after the bytes below it).
//!      record log: tail = a watermark: every record below it is durable; more records of the
//!                  current generation may follow it, each self-validating (open scans them).
//!      generation 0 is never given to a record: in a record log it means "scrub pending" (the
//!      rewind that wrapped the generations was interrupted before the data area was zeroed).
//!
//! capacity word (8 B at offset 128, alone in cache line 2; format version 6 on: older formats
//! keep zeros here and their capacity in the header)
//!      bit 0                        36                           56        64
//!      +----------------------------+----------------------------+---------+
//!      | capacity (u36)             | zero                       | check   |
//!      +----------------------------+----------------------------+---------+
//!      the data area's bytes now: the header's capacity at create, raised by each growth (never
//!      lowered). check: the state word's CRC-8. Stored with one aligned 8-byte store, and
//!      persisted only after the file has been grown to hold it and the growth synced; no append
//!      reaches past the old capacity before it is persisted.
//!
//! record (framing `Records`; 64-byte aligned from version 5, 8-byte before; relative offsets
//! count from DATA_OFFSET)
//!      0          4             8                   16                 16 + len     next boundary
//!      +----------+-------------+-------------------+------------------+------------+
//!      | len u32  | generation  | check u64         | payload          | zero pad   |
//!      | payload  | u32 (u20)   |                   | len bytes        |            |
//!      +----------+-------------+-------------------+------------------+------------+
//!      check (versions 4 and 5): XXH3-64 of the payload with the seed
//!      `offset | generation << 36` (the record's relative offset, 36 bits, and its generation,
//!      20): a record copied to the wrong
//!      place fails it, and so does one whose generation field was damaged (a whole record left
//!      from an older generation passes its check and is refused by the generation test); XXH3
//!      mixes the input's length in, so a damaged len hashes another range. Version 3's check,
//!      still read and written in version-3 logs: XXH3-64 (seed 0) over len, generation, the
//!      offset (u64) and the payload. Not a CRC: a CRC cannot see a change to a stretch of
//!      payload that carries its own CRC of the same polynomial (a page image with its
//!      checksum, say), and torn records mixing two versions made exactly such changes.
//! ```
//!
//! All integers are little-endian; no `usize` reaches the file. The state word and the capacity
//! word are the only things that change in place (besides the data area's zeroing when
//! generations wrap): each is written as one aligned 8-byte store, the unit that is
//! failure-atomic, and persisted only after what it covers is (every byte below the tail; the
//! grown file).

use nvpage_storage::LineStreamer;
use uuid::Uuid;

/// Identifies an nvpage log file.
pub const MAGIC: [u8; 8] = *b"NVPAGLOG";
/// The log format this build creates. Version 6: the data area's capacity is kept in a
/// capacity word of its own ([`CAPACITY_WORD_OFFSET`]), so a log can grow while open (a
/// header's capacity is sealed by the header's checksum, and 64 bytes are not stored
/// atomically); the header keeps the capacity at create. Version 5: records are padded to
/// whole cache lines (64 bytes), so every append's streaming stores fill whole lines; a store that ends mid-line is
/// written back as a partial line, and on this project's machine an append ending mid-line ran
/// at two thirds of the rate (4,096 + 16 bytes: 2.07 against 2.71 M/s with the header line full,
/// measured with nothing but the copy and the fence; records of 64, 256 and 4,096 bytes: 2.7,
/// 2.5 and 1.7 M/s with 8-byte alignment, 4.1, 3.7 and 2.0 with 64). Raw logs are version 5 too,
/// their layout unchanged. Version 4: a record's check is XXH3-64 of its payload seeded with its
/// offset and generation, one pass the hash crate can run with the CPU's widest
/// vectors; version 3 hashed a 16-byte prefix of those fields and then the payload, streamed.
/// Version 3: the state word's check starts from 0xFF, so a zeroed word fails it (version 2's
/// started from 0: eight zero bytes passed as tail 0, generation 0 — an empty raw log, a record
/// log's pending zeroing). Version 2: record logs
/// keep a watermark in the state word and records past it (version 1 persisted an exact tail
/// for every append).
pub const FORMAT_VERSION: u32 = 6;
/// The first format with a capacity word: a log of an older format keeps the size it was
/// created with.
pub const GROWABLE_VERSION: u32 = 6;
/// The first format whose records carry the seeded check ([`RecordCheck::Seeded`], and from
/// [`LINE_RECORDS_VERSION`] on [`RecordCheck::SeededLines`]); older ones [`RecordCheck::Prefixed`].
pub const SEEDED_CHECK_VERSION: u32 = 4;
/// The first format whose records are padded to whole lines ([`LINE_RECORD_ALIGN`]); older ones
/// to [`RECORD_ALIGN`].
pub const LINE_RECORDS_VERSION: u32 = 5;
/// The oldest log format this build opens: version 3, 4 and 5 logs are read, appended to and
/// rewound in their own format (their records keep their check and alignment, and they keep
/// their size: only version 6 has the capacity word a growth needs); only new logs are version
/// 6.
pub const OLDEST_READABLE_VERSION: u32 = 3;

pub(crate) const MAGIC_OFFSET: usize = 0;
pub(crate) const VERSION_OFFSET: usize = MAGIC_OFFSET + MAGIC.len();
pub(crate) const FRAMING_OFFSET: usize = VERSION_OFFSET + size_of::<u32>();
pub(crate) const UUID_OFFSET: usize = FRAMING_OFFSET + size_of::<u32>();
pub(crate) const DATA_OFFSET_OFFSET: usize = UUID_OFFSET + 16;
pub(crate) const CAPACITY_OFFSET: usize = DATA_OFFSET_OFFSET + size_of::<u64>();
pub(crate) const RESERVED_OFFSET: usize = CAPACITY_OFFSET + size_of::<u64>();
pub(crate) const HEADER_CRC_OFFSET: usize = 60;
/// Bytes of the header.
pub const HEADER_LEN: usize = HEADER_CRC_OFFSET + size_of::<u32>();

/// Cache line size the layout is built around.
pub const LINE: usize = 64;
/// File offset of the 8-byte state word: the first byte of the line after the header.
pub const STATE_OFFSET: usize = HEADER_LEN.next_multiple_of(LINE);
/// File offset of the 8-byte capacity word (format 6 on): the first byte of the line after the
/// state word's, so that flushing one never writes the other back.
pub const CAPACITY_WORD_OFFSET: usize = STATE_OFFSET + LINE;
/// File offset of the data area: one OS page in, so an `msync` of data never covers the state.
pub const DATA_OFFSET: usize = 4096;

/// Bits of the state word holding the tail.
pub const TAIL_BITS: u32 = 36;
/// Bits of the state word holding the generation.
pub const GENERATION_BITS: u32 = 20;
/// Where the state word's check byte starts.
pub const CHECK_SHIFT: u32 = TAIL_BITS + GENERATION_BITS;
/// The largest data area: the tail must fit its 36 bits (64 GiB - 1).
pub const MAX_CAPACITY: u64 = (1 << TAIL_BITS) - 1;
/// Generations are 20 bits. A record log never reuses one while a record of it may remain: the
/// rewind that would wrap zeroes the data area first (`Log::rewind`); a raw log reads nothing
/// past its tail, so its generations may simply wrap.
pub const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;
/// The generation of a new log, and of a record log after the data area is zeroed.
pub const FIRST_GENERATION: u32 = 1;
/// The smallest file `create` accepts: the header page plus one line of data.
pub const MIN_FILE_BYTES: u64 = DATA_OFFSET as u64 + LINE as u64;

pub(crate) const REC_LEN_OFFSET: usize = 0;
pub(crate) const REC_GEN_OFFSET: usize = REC_LEN_OFFSET + size_of::<u32>();
pub(crate) const REC_CHECK_OFFSET: usize = REC_GEN_OFFSET + size_of::<u32>();
/// Bytes of a record's header; the payload follows.
pub const RECORD_HEADER_LEN: usize = REC_CHECK_OFFSET + size_of::<u64>();
/// Records of format versions 3 and 4 start on 8-byte boundaries.
pub const RECORD_ALIGN: u64 = 8;
/// Records of format version 5 on, and so their ends, start on cache-line boundaries.
pub const LINE_RECORD_ALIGN: u64 = LINE as u64;

const _: () = assert!(RESERVED_OFFSET <= HEADER_CRC_OFFSET);
const _: () = assert!(CHECK_SHIFT == 56, "the check is the word's top byte");
const _: () = assert!(HEADER_LEN == 64 && HEADER_LEN <= LINE);
const _: () = assert!(STATE_OFFSET.is_multiple_of(LINE) && STATE_OFFSET >= HEADER_LEN);
const _: () =
    assert!(STATE_OFFSET.is_multiple_of(8), "the state word must be an aligned 8-byte store");
const _: () = assert!(CAPACITY_WORD_OFFSET.is_multiple_of(LINE));
const _: () = assert!(CAPACITY_WORD_OFFSET + LINE <= DATA_OFFSET);
const _: () = assert!(MAX_CAPACITY < 1 << CHECK_SHIFT, "a capacity fits below the check byte");
const _: () = assert!(DATA_OFFSET.is_multiple_of(LINE) && DATA_OFFSET.is_power_of_two());
const _: () =
    assert!(RECORD_HEADER_LEN == 16 && (RECORD_HEADER_LEN as u64).is_multiple_of(RECORD_ALIGN));
const _: () = assert!(LINE_RECORD_ALIGN.is_multiple_of(RECORD_ALIGN));
const _: () = assert!((DATA_OFFSET as u64).is_multiple_of(LINE_RECORD_ALIGN));

/// How the data area is divided, fixed at create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// libpmemlog's byte stream: appends are concatenated as they are, with no per-append
    /// header or checksum; the persisted tail alone says what is in the log.
    Raw,
    /// Framed records (length, generation, an XXH3-64 check): each append is one record,
    /// checked at open and again when read.
    Records,
}

impl Framing {
    fn code(self) -> u32 {
        match self {
            Framing::Raw => 1,
            Framing::Records => 2,
        }
    }

    fn from_code(code: u32) -> Option<Self> {
        match code {
            1 => Some(Framing::Raw),
            2 => Some(Framing::Records),
            _ => None,
        }
    }

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Framing::Raw => "raw",
            Framing::Records => "records",
        }
    }
}

impl std::fmt::Display for Framing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogHeader {
    /// The file's format version ([`FORMAT_VERSION`] for a log this build creates; an older
    /// readable one, [`OLDEST_READABLE_VERSION`] on, for a log created before).
    pub version: u32,
    /// How the data area is divided.
    pub framing: Framing,
    /// The database the log belongs to.
    pub uuid: Uuid,
    /// Usable bytes of the data area when the log was created (libpmemlog's `nbyte`). A log
    /// of format [`GROWABLE_VERSION`] on may have grown since: its capacity word holds the
    /// current capacity ([`Decoded::capacity`], [`crate::Log::nbyte`]).
    pub capacity: u64,
}

/// Why a header does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderFault {
    /// The magic is not a log's.
    NotALog,
    /// A log of another format version (the one found).
    Version(u32),
    /// Damaged: what is wrong, in words.
    Corrupt(String),
}

impl LogHeader {
    /// The header's 64 bytes, sealed.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[MAGIC_OFFSET..VERSION_OFFSET].copy_from_slice(&MAGIC);
        b[VERSION_OFFSET..FRAMING_OFFSET].copy_from_slice(&self.version.to_le_bytes());
        b[FRAMING_OFFSET..UUID_OFFSET].copy_from_slice(&self.framing.code().to_le_bytes());
        b[UUID_OFFSET..DATA_OFFSET_OFFSET].copy_from_slice(self.uuid.as_bytes());
        b[DATA_OFFSET_OFFSET..CAPACITY_OFFSET].copy_from_slice(&(DATA_OFFSET as u64).to_le_bytes());
        b[CAPACITY_OFFSET..RESERVED_OFFSET].copy_from_slice(&self.capacity.to_le_bytes());
        let crc = crc32c::crc32c(&b[..HEADER_CRC_OFFSET]);
        b[HEADER_CRC_OFFSET..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a header: magic, checksum, version, framing, data offset, capacity.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Self, HeaderFault> {
        if b[MAGIC_OFFSET..VERSION_OFFSET] != MAGIC {
            return Err(HeaderFault::NotALog);
        }
        let stored = u32_at(b, HEADER_CRC_OFFSET);
        let computed = crc32c::crc32c(&b[..HEADER_CRC_OFFSET]);
        if stored != computed {
            return Err(HeaderFault::Corrupt(format!(
                "header checksum {stored:#010x} does not match computed {computed:#010x}"
            )));
        }
        let version = u32_at(b, VERSION_OFFSET);
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(HeaderFault::Version(version));
        }
        let framing = Framing::from_code(u32_at(b, FRAMING_OFFSET)).ok_or_else(|| {
            HeaderFault::Corrupt(format!("unknown framing {}", u32_at(b, FRAMING_OFFSET)))
        })?;
        let data_offset = u64_at(b, DATA_OFFSET_OFFSET);
        if data_offset != DATA_OFFSET as u64 {
            return Err(HeaderFault::Corrupt(format!(
                "data offset {data_offset}, this format puts data at {DATA_OFFSET}"
            )));
        }
        let capacity = u64_at(b, CAPACITY_OFFSET);
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(HeaderFault::Corrupt(format!("capacity {capacity} out of range")));
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[UUID_OFFSET..DATA_OFFSET_OFFSET]);
        Ok(Self { version, framing, uuid: Uuid::from_bytes(uuid), capacity })
    }

    /// How this log's records are checked.
    pub fn record_check(&self) -> RecordCheck {
        RecordCheck::of_version(self.version)
    }
}

/// How a record is checked and laid out: fixed by the log's format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordCheck {
    /// Version 5: [`RecordCheck::Seeded`]'s check, records padded to whole lines.
    SeededLines,
    /// Version 4: XXH3-64 of the payload, seeded with the record's offset and generation.
    Seeded,
    /// Version 3: XXH3-64 (seed 0) over the header's first 8 bytes, the offset and the payload.
    Prefixed,
}

impl RecordCheck {
    /// The records of format `version`.
    pub fn of_version(version: u32) -> Self {
        if version >= LINE_RECORDS_VERSION {
            RecordCheck::SeededLines
        } else if version >= SEEDED_CHECK_VERSION {
            RecordCheck::Seeded
        } else {
            RecordCheck::Prefixed
        }
    }

    /// Where records start, and so where they end: every record's size is a multiple of it.
    pub fn align(self) -> u64 {
        match self {
            RecordCheck::SeededLines => LINE_RECORD_ALIGN,
            RecordCheck::Seeded | RecordCheck::Prefixed => RECORD_ALIGN,
        }
    }

    /// Bytes a record with a payload of `len` bytes occupies in this format, padding included.
    pub fn record_size(self, len: u64) -> u64 {
        (RECORD_HEADER_LEN as u64 + len).next_multiple_of(self.align())
    }
}

/// The state word's two fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    /// Raw log: bytes of the data area in the log. Record log: the watermark, below which every
    /// record is durable (records may follow it). Either way everything below it is durable.
    pub tail: u64,
    /// The current generation (20 bits).
    pub generation: u32,
}

impl State {
    /// The word as it is stored, check byte included.
    pub fn encode(self) -> u64 {
        debug_assert!(self.tail <= MAX_CAPACITY && self.generation <= GENERATION_MASK);
        let low = self.tail | (u64::from(self.generation) << TAIL_BITS);
        low | (u64::from(word_check(low)) << CHECK_SHIFT)
    }

    /// Splits a stored word; a word whose check byte does not match is `Err` (the caller
    /// still checks the tail against the capacity).
    pub fn decode(word: u64) -> Result<Self, String> {
        let low = word & ((1 << CHECK_SHIFT) - 1);
        let stored = (word >> CHECK_SHIFT) as u8;
        let computed = word_check(low);
        if stored != computed {
            return Err(format!(
                "check byte {stored:#04x} does not match computed {computed:#04x}"
            ));
        }
        Ok(Self { tail: low & MAX_CAPACITY, generation: (low >> TAIL_BITS) as u32 })
    }

    /// The generation after `g`, wrapping (a record log never wraps without zeroing first).
    pub(crate) fn next_generation(g: u32) -> u32 {
        g.wrapping_add(1) & GENERATION_MASK
    }
}

/// The capacity word (format [`GROWABLE_VERSION`] on): the data area's bytes now, sealed by the
/// state word's check byte. Returns the word as it is stored.
pub fn encode_capacity(capacity: u64) -> u64 {
    debug_assert!(capacity <= MAX_CAPACITY);
    capacity | (u64::from(word_check(capacity)) << CHECK_SHIFT)
}

/// The capacity a stored capacity word holds; `Err` says what is wrong with it (its check byte,
/// or bits that no capacity sets).
pub fn decode_capacity(word: u64) -> Result<u64, String> {
    let low = word & ((1 << CHECK_SHIFT) - 1);
    let (stored, computed) = ((word >> CHECK_SHIFT) as u8, word_check(low));
    if stored != computed {
        return Err(format!("check byte {stored:#04x} does not match computed {computed:#04x}"));
    }
    if low > MAX_CAPACITY {
        return Err(format!("capacity {low} passes the format's {MAX_CAPACITY}"));
    }
    Ok(low)
}

/// The check byte of the state and capacity words: CRC-8 with polynomial 0x07 over the word's
/// low 56 bits (little-endian bytes). For messages this short the polynomial has Hamming
/// distance 4: every flip of up to three bits of the word changes the check (the state word's
/// unit test tries every one- and two-bit flip).
/// It starts from 0xFF rather than 0, so that the check of seven zero bytes is not zero: a word
/// of zeros (a zeroed line, a block read back as zeros) is damage, not a state.
fn word_check(low: u64) -> u8 {
    let mut crc = 0xFFu8;
    for byte in &low.to_le_bytes()[..7] {
        crc ^= byte;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 { (crc << 1) ^ 0x07 } else { crc << 1 };
        }
    }
    crc
}

/// Bytes a record with a payload of `len` bytes occupies in the format this build creates,
/// padding included ([`RecordCheck::record_size`] for another).
pub fn record_size(len: u64) -> u64 {
    RecordCheck::of_version(FORMAT_VERSION).record_size(len)
}

/// A record's header, sealed with its check ([`RecordCheck`]) over its fields, offset and
/// payload (the concatenation of `payload`'s parts).
pub(crate) fn record_header(
    check: RecordCheck,
    offset: u64,
    generation: u32,
    len: u64,
    payload: &[&[u8]],
) -> [u8; RECORD_HEADER_LEN] {
    let mut h = [0u8; RECORD_HEADER_LEN];
    h[REC_LEN_OFFSET..REC_GEN_OFFSET].copy_from_slice(&(len as u32).to_le_bytes());
    h[REC_GEN_OFFSET..REC_CHECK_OFFSET].copy_from_slice(&generation.to_le_bytes());
    let sum = record_check(check, &h, offset, payload);
    h[REC_CHECK_OFFSET..RECORD_HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
    h
}

/// Stores the record of `payload` at relative `offset` of generation `generation`, in the
/// format this build creates ([`RecordCheck::SeededLines`]), through `out`: every line of the
/// record, padding included (`out` holds exactly the record's lines), the header's line last. A
/// payload of more than 240 bytes is hashed in the same loop that stores it (`crate::xxh3`):
/// the first lines go out before any hashing, then each stripe is hashed a few lines behind the
/// stores (`xxh3::hash_long`), so that the hash runs while the streaming stores before it drain
/// rather than before the first store. The bytes are exactly those of `record_header`, the
/// payload and zero padding.
///
/// # Panics
/// If `out` does not hold exactly the record's lines, or `payload` passes `u32::MAX` bytes.
pub(crate) fn store_record_lines(
    out: &mut LineStreamer<'_>,
    offset: u64,
    generation: u32,
    payload: &[u8],
) {
    // A payload too short for XXH3's long path is hashed after its lines, not in the loop: it
    // stays on the baseline path, inlined into the append (a call to the AVX2 build cost more
    // than the two or three line stores it would narrow).
    #[cfg(target_arch = "x86_64")]
    if payload.len() >= crate::xxh3::LONG_MIN
        && let Some(avx2) = crate::xxh3::Avx2::detect()
    {
        // SAFETY: `avx2` proves the CPU runs AVX2.
        return unsafe { store_record_lines_avx2(avx2, out, offset, generation, payload) };
    }
    let store = |out: &mut LineStreamer<'_>, i, line: &[u8; LINE]| out.store(i, line);
    store_record_lines_in(crate::xxh3::Acc::new(), store, out, offset, generation, payload);
}

/// [`store_record_lines`] compiled for AVX2: the hash's lanes in [`crate::xxh3::Acc256`], and
/// a line two 32-byte stores (`LineStreamer::store_avx2`). What it gained: see `crate::xxh3`'s
/// module note.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn store_record_lines_avx2(
    avx2: crate::xxh3::Avx2,
    out: &mut LineStreamer<'_>,
    offset: u64,
    generation: u32,
    payload: &[u8],
) {
    // SAFETY: this function is compiled for AVX2, so it runs only where its caller found it.
    let store =
        |out: &mut LineStreamer<'_>, i, line: &[u8; LINE]| unsafe { out.store_avx2(i, line) };
    let lanes = crate::xxh3::Acc256::new(avx2);
    store_record_lines_in(lanes, store, out, offset, generation, payload);
}

/// The body of [`store_record_lines`], with the hash's lanes and the line store of the
/// instruction set it is compiled for. Its closures are compiled without the AVX2 build's
/// target feature (see `xxh3::hash_long`): each has one call site, so the compiler inlines it
/// into that build (checked in the release binary's disassembly: no call out of the loop but
/// `memcpy`, the hash's final merge and the panics).
#[inline(always)]
fn store_record_lines_in(
    lanes: impl crate::xxh3::Lanes,
    store: impl Fn(&mut LineStreamer<'_>, usize, &[u8; LINE]),
    out: &mut LineStreamer<'_>,
    offset: u64,
    generation: u32,
    payload: &[u8],
) {
    let len = payload.len();
    let lines = (RecordCheck::SeededLines.record_size(len as u64) / LINE as u64) as usize;
    assert_eq!(out.lines(), lines, "the record of {len} bytes is {lines} lines");
    let mut head = [0u8; LINE];
    let len32 = u32::try_from(len).expect("a record's length fits its u32 field");
    head[REC_LEN_OFFSET..REC_GEN_OFFSET].copy_from_slice(&len32.to_le_bytes());
    head[REC_GEN_OFFSET..REC_CHECK_OFFSET].copy_from_slice(&generation.to_le_bytes());
    // Line `l` (from 1) holds payload bytes `64 l - 16..64 l + 48`: lines `1..full` whole ones,
    // the rest (at most one) the payload's end and zeros.
    let full = (RECORD_HEADER_LEN + len) / LINE;
    let whole = |l: usize| -> &[u8; LINE] {
        let from = l * LINE - RECORD_HEADER_LEN;
        payload[from..from + LINE].try_into().expect("a line")
    };
    let store_rest = |out: &mut LineStreamer<'_>| {
        for l in full.max(1)..lines {
            let from = l * LINE - RECORD_HEADER_LEN;
            let mut part = [0u8; LINE];
            part[..len - from].copy_from_slice(&payload[from..]);
            store(out, l, &part);
        }
    };
    let check = if len < crate::xxh3::LONG_MIN {
        (1..full).for_each(|l| store(out, l, whole(l)));
        store_rest(out);
        record_check(RecordCheck::SeededLines, &head, offset, &[payload])
    } else {
        // Line `s + 1` at the call for stripe `s` (the line holding the stripe's last 16 bytes):
        // every whole line, as `full - 2 < (len - 1) / 64`, the body's stripes.
        let check = crate::xxh3::hash_long(lanes, check_seed(&head, offset), payload, |s| {
            if s + 1 < full {
                store(out, s + 1, whole(s + 1));
            }
        });
        store_rest(out);
        check
    };
    head[REC_CHECK_OFFSET..RECORD_HEADER_LEN].copy_from_slice(&check.to_le_bytes());
    let first = len.min(LINE - RECORD_HEADER_LEN);
    head[RECORD_HEADER_LEN..RECORD_HEADER_LEN + first].copy_from_slice(&payload[..first]);
    store(out, 0, &head);
}

/// A record's check (see [`RecordCheck`]). `h` holds the header's first 8 bytes (length,
/// generation); `payload` the payload in parts. A payload in one part is hashed in one call
/// (`twox-hash` picks AVX2 or SSE2 at run time); parts are streamed, which gives the same value.
fn record_check(check: RecordCheck, h: &[u8], offset: u64, payload: &[&[u8]]) -> u64 {
    use std::hash::Hasher;
    use twox_hash::XxHash3_64;
    use twox_hash::xxhash3_64::{DEFAULT_SECRET_LENGTH, RawHasher, SecretBuffer};
    match (check, payload) {
        (RecordCheck::Seeded | RecordCheck::SeededLines, [one]) => {
            XxHash3_64::oneshot_with_seed(check_seed(h, offset), one)
        }
        (RecordCheck::Seeded | RecordCheck::SeededLines, parts) => {
            // The secret derived from the seed, on the stack (`XxHash3_64::with_seed` would
            // allocate it): the value is the one-shot's.
            let secret = [0u8; DEFAULT_SECRET_LENGTH];
            let Ok(buffer) = SecretBuffer::with_seed(check_seed(h, offset), secret) else {
                unreachable!("the secret is exactly DEFAULT_SECRET_LENGTH bytes");
            };
            let mut x = RawHasher::new(buffer);
            parts.iter().for_each(|p| x.write(p));
            x.finish()
        }
        (RecordCheck::Prefixed, parts) => {
            // Seed 0: the default secret, borrowed, nothing allocated.
            let mut x = RawHasher::new(SecretBuffer::default());
            x.write(&h[..REC_CHECK_OFFSET]);
            x.write(&offset.to_le_bytes());
            parts.iter().for_each(|p| x.write(p));
            x.finish()
        }
    }
}

/// Version 4's seed: the offset (below 2^36, [`MAX_CAPACITY`]) and, above it, the generation.
fn check_seed(h: &[u8], offset: u64) -> u64 {
    debug_assert!(offset <= MAX_CAPACITY && u32_at(h, REC_GEN_OFFSET) <= GENERATION_MASK);
    offset | u64::from(u32_at(h, REC_GEN_OFFSET)) << TAIL_BITS
}

/// The generations a record may carry where it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Generations {
    /// The oldest allowed: the previous record's (generations never decrease along the log).
    pub min: u32,
    /// The newest allowed: the log's current generation.
    pub max: u32,
}

impl Generations {
    /// Any generation up to `g`, the log's current one (the first record may be of any).
    pub(crate) fn up_to(g: u32) -> Self {
        Self { min: FIRST_GENERATION, max: g }
    }

    /// Exactly `g`: records past the watermark must be of the current generation.
    pub(crate) fn exactly(g: u32) -> Self {
        Self { min: g, max: g }
    }
}

/// Checks the record at relative `offset` in `data` (the data area, up to where records may be)
/// and returns its payload range and generation. `Err` says what is wrong, in words for the error.
pub(crate) fn check_record(
    data: &[u8],
    offset: u64,
    gens: Generations,
    check: RecordCheck,
) -> Result<(std::ops::Range<usize>, u32), String> {
    let at = offset as usize;
    let rest = data.len() - at;
    if rest < RECORD_HEADER_LEN {
        return Err(format!("{rest} bytes left, too few for a record header"));
    }
    let h = &data[at..at + RECORD_HEADER_LEN];
    let len = u64::from(u32_at(h, REC_LEN_OFFSET));
    if check.record_size(len) > rest as u64 {
        return Err(format!("length {len} runs past the end ({rest} bytes left)"));
    }
    let found = u32_at(h, REC_GEN_OFFSET);
    if !(gens.min..=gens.max).contains(&found) {
        return Err(if gens.min == gens.max {
            format!("generation {found}, the log is at generation {}", gens.max)
        } else {
            format!("generation {found} outside {}..={}", gens.min, gens.max)
        });
    }
    let payload = at + RECORD_HEADER_LEN..at + RECORD_HEADER_LEN + len as usize;
    let stored = u64_at(h, REC_CHECK_OFFSET);
    let computed = record_check(check, h, offset, &[&data[payload.clone()]]);
    if stored != computed {
        return Err(format!("check {stored:#018x} does not match computed {computed:#018x}"));
    }
    Ok((payload, found))
}

/// What [`scan_records`] finds in a record log's data area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// Where the records end, relative to the data area.
    pub end: u64,
    /// How many records lie below `end`.
    pub records: u64,
}

/// Damage [`scan_records`] found below the watermark, where every record was durable: never the
/// end of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanFault {
    /// The offset of the damaged record, relative to the data area.
    pub offset: u64,
    /// What is wrong with it, in words.
    pub reason: String,
}

/// The scan an open runs over a record log's data area (`area`, the whole capacity) and its
/// decoded state word, on the bytes alone: every record below the watermark `state.tail` must be
/// whole, checked, and of a generation no older than the one before it and no newer than
/// `state.generation` (else a [`ScanFault`]: those records were durable); past the watermark it
/// reads on while records are whole and of exactly `state.generation`, and the first that is
/// not ends the log. A state of generation 0 ("zeroing pending") holds no records.
/// Records are checked as `check` says (the log's format version). [`crate::Log::open`] uses
/// it; it takes no file, so it can be checked on any bytes quickly.
pub fn scan_records(area: &[u8], state: State, check: RecordCheck) -> Result<Scan, ScanFault> {
    if state.generation == 0 {
        return Ok(Scan { end: 0, records: 0 });
    }
    let mark = match usize::try_from(state.tail) {
        Ok(m) if m <= area.len() => m,
        _ => {
            let reason = format!("the watermark passes the capacity {}", area.len());
            return Err(ScanFault { offset: state.tail, reason });
        }
    };
    let mut records = 0;
    for r in RecordWalk::new(&area[..mark], 0, Generations::up_to(state.generation), check) {
        r?;
        records += 1;
    }
    let mut end = mark as u64;
    for (pos, payload) in RecordWalk::new(area, end, Generations::exactly(state.generation), check)
        .map_while(Result::ok)
    {
        end = pos + check.record_size(payload.len() as u64);
        records += 1;
    }
    Ok(Scan { end, records })
}

/// The records of `data` from offset `at` on, each checked by [`check_record`] with a
/// generation in `gens` and no older than the one before it: `(offset, payload)`, or the
/// damaged record as a [`ScanFault`] once, after which the walk ends. It ends at the end of
/// `data`, so a record running past it is damaged. [`scan_records`] and the log's
/// [`crate::Records`] both read records through it.
#[derive(Debug)]
pub(crate) struct RecordWalk<'a> {
    data: &'a [u8],
    at: u64,
    gens: Generations,
    check: RecordCheck,
    failed: bool,
}

impl<'a> RecordWalk<'a> {
    pub(crate) fn new(data: &'a [u8], at: u64, gens: Generations, check: RecordCheck) -> Self {
        Self { data, at, gens, check, failed: false }
    }
}

impl<'a> Iterator for RecordWalk<'a> {
    type Item = Result<(u64, &'a [u8]), ScanFault>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.data.len() as u64 {
            return None;
        }
        let at = self.at;
        match check_record(self.data, at, self.gens, self.check) {
            Ok((range, generation)) => {
                self.gens.min = generation;
                self.at += self.check.record_size((range.end - range.start) as u64);
                Some(Ok((at, &self.data[range])))
            }
            Err(reason) => {
                self.failed = true;
                Some(Err(ScanFault { offset: at, reason }))
            }
        }
    }
}

/// What a log file's bytes hold, found by [`decode_log`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The header.
    pub header: LogHeader,
    /// Usable bytes of the data area: the capacity word's (format [`GROWABLE_VERSION`] on), else
    /// the header's.
    pub capacity: u64,
    /// The state word, decoded and checked against the capacity.
    pub state: State,
    /// A record log's records ([`scan_records`]); `None` for a raw log, which has none.
    pub scan: Option<Scan>,
}

/// Why a log file's bytes do not decode ([`decode_log`]); an open reports each as the
/// [`crate::WalError`] of the same name, with the file's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogFault {
    /// The header does not decode (a wrong magic, even in a file too short for a header page,
    /// is [`HeaderFault::NotALog`]).
    Header(HeaderFault),
    /// The capacity word (format [`GROWABLE_VERSION`] on) is damaged, or names a capacity
    /// below the header's (a log never shrinks).
    Capacity {
        /// The word as stored.
        word: u64,
        /// What is wrong, in words.
        reason: String,
    },
    /// Shorter than a header page, or than its capacity says.
    Truncated {
        /// The bytes a log needs.
        expected_bytes: u64,
        /// The bytes found.
        found_bytes: u64,
    },
    /// The header names another database.
    Foreign {
        /// The database UUID the caller expected.
        expected: Uuid,
        /// The one found.
        found: Uuid,
    },
    /// The state word is damaged, or its tail passes the capacity.
    State {
        /// The word as stored.
        word: u64,
        /// What is wrong, in words.
        reason: String,
    },
    /// A record below the watermark is damaged.
    Record(ScanFault),
}

/// Decodes a whole log file's bytes as an open does: the header (magic, version, checksum,
/// geometry), the capacity word (format [`GROWABLE_VERSION`] on: check byte, at least the
/// header's capacity), the file's length against the capacity, the database UUID if
/// `expect_uuid` names one, the state word (check byte; tail within the capacity), then a
/// record log's data area with [`scan_records`]. [`crate::Log::open`] runs exactly this over the mapped file before it
/// changes anything; it takes no file, so it can be checked on any bytes quickly.
pub fn decode_log(image: &[u8], expect_uuid: Option<Uuid>) -> Result<Decoded, LogFault> {
    let found_bytes = image.len() as u64;
    if image.len() < DATA_OFFSET {
        if image.len() >= MAGIC.len() && image[..MAGIC.len()] != MAGIC {
            return Err(LogFault::Header(HeaderFault::NotALog));
        }
        return Err(LogFault::Truncated { expected_bytes: MIN_FILE_BYTES, found_bytes });
    }
    let mut head = [0u8; HEADER_LEN];
    head.copy_from_slice(&image[..HEADER_LEN]);
    let header = LogHeader::decode(&head).map_err(LogFault::Header)?;
    let capacity = match header.version {
        v if v >= GROWABLE_VERSION => {
            let word = u64_at(image, CAPACITY_WORD_OFFSET);
            let fault = |reason| LogFault::Capacity { word, reason };
            let capacity = decode_capacity(word).map_err(fault)?;
            if capacity < header.capacity {
                let at_create = header.capacity;
                return Err(fault(format!(
                    "capacity {capacity} is below the {at_create} at create"
                )));
            }
            capacity
        }
        _ => header.capacity,
    };
    let expected_bytes = DATA_OFFSET as u64 + capacity;
    if found_bytes < expected_bytes {
        return Err(LogFault::Truncated { expected_bytes, found_bytes });
    }
    if let Some(expected) = expect_uuid.filter(|u| *u != header.uuid) {
        return Err(LogFault::Foreign { expected, found: header.uuid });
    }
    let word = u64_at(image, STATE_OFFSET);
    let state = State::decode(word).map_err(|reason| LogFault::State { word, reason })?;
    if state.tail > capacity {
        let reason = format!("tail {} passes the capacity {capacity}", state.tail);
        return Err(LogFault::State { word, reason });
    }
    let scan = match header.framing {
        Framing::Raw => None,
        Framing::Records => {
            let area = &image[DATA_OFFSET..expected_bytes as usize];
            Some(scan_records(area, state, header.record_check()).map_err(LogFault::Record)?)
        }
    };
    Ok(Decoded { header, capacity, state, scan })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// The little-endian u64 at `at` in `b` (the log's XXH3 reads its words with it too).
#[inline(always)]
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_every_bit_flip_is_caught() {
        let h = LogHeader {
            version: FORMAT_VERSION,
            framing: Framing::Records,
            uuid: Uuid::new_v4(),
            capacity: 1 << 20,
        };
        let b = h.encode();
        assert_eq!(LogHeader::decode(&b), Ok(h));
        let v3 = LogHeader { version: 3, ..h };
        assert_eq!(LogHeader::decode(&v3.encode()), Ok(v3), "version 3 is still read");
        for version in [2, FORMAT_VERSION + 1] {
            let other = LogHeader { version, ..h };
            assert_eq!(LogHeader::decode(&other.encode()), Err(HeaderFault::Version(version)));
        }
        for bit in 0..HEADER_LEN * 8 {
            let mut c = b;
            c[bit / 8] ^= 1 << (bit % 8);
            assert!(LogHeader::decode(&c).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn state_word_round_trips_and_every_bit_flip_is_caught() {
        for s in [
            State { tail: MAX_CAPACITY, generation: GENERATION_MASK },
            State { tail: 0, generation: FIRST_GENERATION },
            State { tail: 4128 * 7, generation: 12_345 },
        ] {
            let w = s.encode();
            assert_eq!(State::decode(w), Ok(s));
            for bit in 0..64 {
                assert!(State::decode(w ^ (1 << bit)).is_err(), "{s:?} bit {bit}");
                for other in 0..bit {
                    let w2 = w ^ (1 << bit) ^ (1 << other);
                    assert!(State::decode(w2).is_err(), "{s:?} bits {bit}, {other}");
                }
            }
        }
        assert_eq!(State::next_generation(GENERATION_MASK), 0);
        // "Zeroing pending" is a state; a word of zeros is not.
        let pending = State { tail: 0, generation: 0 };
        assert_ne!(pending.encode(), 0);
        assert_eq!(State::decode(pending.encode()), Ok(pending));
        assert!(State::decode(0).is_err());
        assert!(State::decode(u64::MAX).is_err());
    }

    #[test]
    fn capacity_word_round_trips_and_every_bit_flip_is_caught() {
        for capacity in [1, 4096, 64 << 20, MAX_CAPACITY] {
            let w = encode_capacity(capacity);
            assert_eq!(decode_capacity(w), Ok(capacity));
            for bit in 0..64 {
                assert!(decode_capacity(w ^ (1 << bit)).is_err(), "{capacity} bit {bit}");
            }
        }
        // A word of zeros (a zeroed line) is damage, not a capacity of 0.
        assert!(decode_capacity(0).is_err());
        // Bits above the capacity's 36, sealed, are refused too: no capacity sets them.
        let past = MAX_CAPACITY + 1;
        assert!(decode_capacity(past | u64::from(word_check(past)) << CHECK_SHIFT).is_err());
    }

    #[test]
    fn records_check_and_reject_moves() {
        let payload = b"hello, log";
        for check in [RecordCheck::SeededLines, RecordCheck::Seeded, RecordCheck::Prefixed] {
            let h = record_header(check, 8, 3, payload.len() as u64, &[&payload[..]]);
            let mut data = vec![0u8; 8];
            data.extend_from_slice(&h);
            data.extend_from_slice(payload);
            data.resize(8 + check.record_size(payload.len() as u64) as usize, 0);
            let (r, g) = check_record(&data, 8, Generations::exactly(3), check).unwrap();
            assert_eq!((&data[r], g), (&payload[..], 3));
            assert!(check_record(&data, 8, Generations::exactly(4), check).is_err());
            assert!(check_record(&data, 8, Generations { min: 1, max: 4 }, check).is_ok());
            assert!(check_record(&data, 8, Generations { min: 4, max: 9 }, check).is_err());
            let moved = check_record(&data[8..], 0, Generations::exactly(3), check);
            assert!(moved.is_err(), "the offset is in the checksum");
            let other = if check == RecordCheck::Prefixed {
                RecordCheck::Seeded
            } else {
                RecordCheck::Prefixed
            };
            assert!(check_record(&data, 8, Generations::exactly(3), other).is_err());
            // The same record from another generation, at the same place, fails too.
            let mut regen = data.clone();
            regen[8 + REC_GEN_OFFSET..8 + REC_CHECK_OFFSET].copy_from_slice(&4u32.to_le_bytes());
            assert!(check_record(&regen, 8, Generations::exactly(4), check).is_err());
        }
    }

    #[test]
    fn records_stored_line_by_line_are_the_framed_bytes() {
        let payload: Vec<u8> =
            (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        let check = RecordCheck::SeededLines;
        let lens =
            (0..=300).chain([1000, 1023, 1024, 1025, 4095, 4096, 4097, 4144, 65_536, 70_000]);
        for len in lens {
            for (offset, generation) in [(0, 1), (4160, 7), (MAX_CAPACITY & !63, GENERATION_MASK)] {
                let p = &payload[..len];
                let size = check.record_size(len as u64) as usize;
                let mut want = record_header(check, offset, generation, len as u64, &[p]).to_vec();
                want.extend_from_slice(p);
                want.resize(size, 0);
                // Garbage where the record goes: every byte must be stored.
                let mut got = vec![0xA5u8; size];
                store_record_lines(&mut LineStreamer::new(&mut got), offset, generation, p);
                assert!(got == want, "len {len} offset {offset}");
                if offset > 1 << 20 {
                    continue;
                }
                let mut data = vec![0u8; offset as usize];
                data.extend_from_slice(&got);
                let (r, g) = check_record(&data, offset, Generations::exactly(generation), check)
                    .map_err(|e| format!("len {len}: {e}"))
                    .unwrap();
                assert_eq!((&data[r], g), (p, generation));
            }
        }
    }

    #[test]
    #[should_panic(expected = "is 4 lines")]
    fn a_record_stored_into_too_few_lines_is_refused() {
        let mut buf = vec![0u8; 128];
        store_record_lines(&mut LineStreamer::new(&mut buf), 0, 1, &[1u8; 200]);
    }

    #[test]
    #[should_panic(expected = "is 4 lines")]
    fn a_record_stored_into_too_many_lines_is_refused() {
        // Lines past the record would keep whatever they held.
        let mut buf = vec![0u8; 512];
        store_record_lines(&mut LineStreamer::new(&mut buf), 0, 1, &[1u8; 200]);
    }

    #[test]
    fn a_payload_in_parts_has_the_check_of_the_whole() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        for check in [RecordCheck::Seeded, RecordCheck::Prefixed] {
            for len in [0, 1, 16, 17, 128, 129, 240, 241, 1024, 4096, 5000] {
                let whole = record_header(check, 4096, 7, len as u64, &[&payload[..len]]);
                for cut in [0, 1.min(len), len / 3, len / 2, len] {
                    let (a, b) = payload[..len].split_at(cut);
                    let parts = record_header(check, 4096, 7, len as u64, &[a, b]);
                    assert_eq!(parts, whole, "{check:?} len {len} cut {cut}");
                }
            }
        }
    }

    /// Both builds of the line loop — the baseline (SSE2 lanes on x86_64, `LineStreamer::store`)
    /// and, where the CPU has AVX2, the AVX2 one (`Acc256` lanes, `LineStreamer::store_avx2`) —
    /// write the bytes of the gathered form: the header of `record_header`, the payload, zeros
    /// to the line. Into a buffer, so the line stores are plain copies; the streaming stores of
    /// both are checked by storage's `lines_and_a_stored_range_persist_together`. The log's own
    /// tests reach only the build this CPU takes for each length.
    #[test]
    fn every_line_loop_writes_the_gathered_record() {
        use nvpage_storage::LineStreamer;
        // Miri interprets every byte of the hash and the line stores; its lengths stop just past
        // a page, beyond every boundary of the loop (short record, stripe, block).
        let lens: &[usize] = if cfg!(miri) {
            &[0, 1, 47, 49, 240, 241, 1024, 1087, 4144]
        } else {
            &[0, 1, 47, 48, 49, 240, 241, 255, 1024, 1087, 4080, 4096, 4144, 65_536]
        };
        for &len in lens {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let (offset, generation) = (64 * 1234, 7);
            let size = RecordCheck::SeededLines.record_size(len as u64) as usize;
            let mut want = vec![0u8; size];
            let head = record_header(
                RecordCheck::SeededLines,
                offset,
                generation,
                len as u64,
                &[&payload],
            );
            want[..RECORD_HEADER_LEN].copy_from_slice(&head);
            want[RECORD_HEADER_LEN..RECORD_HEADER_LEN + len].copy_from_slice(&payload);
            let mut ways: Vec<(&str, Vec<u8>)> = Vec::new();
            let mut buf = vec![0xAAu8; size];
            let store = |out: &mut LineStreamer<'_>, i, line: &[u8; LINE]| out.store(i, line);
            let acc = crate::xxh3::Acc::new();
            store_record_lines_in(
                acc,
                store,
                &mut LineStreamer::new(&mut buf),
                offset,
                generation,
                &payload,
            );
            ways.push(("baseline", buf));
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = crate::xxh3::Avx2::detect() {
                let mut buf = vec![0xAAu8; size];
                // SAFETY: `avx2` proves the CPU runs AVX2.
                unsafe {
                    store_record_lines_avx2(
                        avx2,
                        &mut LineStreamer::new(&mut buf),
                        offset,
                        generation,
                        &payload,
                    )
                };
                ways.push(("AVX2", buf));
            }
            for (way, got) in ways {
                assert!(got == want, "{way}, payload of {len} bytes");
            }
        }
    }
}
