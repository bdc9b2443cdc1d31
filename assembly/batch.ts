// RecordBatch v2 builder. The 61-byte header: baseOffset i64, batchLength i32, partitionLeaderEpoch
// i32, magic i8 (2), crc u32 (CRC32C of everything after it), attributes i16 (codec, transactional,
// control), lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch
// i16, baseSequence i32, record count i32; then the records, compressed as one block when a codec is set.
//
// Each open batch owns one heap region (TLSF allocator of the `minimal` runtime, so freed regions
// coalesce and memory stays bounded by the peak of concurrently open batches). The first 61 bytes
// of a region are reserved for the header, written at finish, when the producer knows the
// sequence numbers. JS copies a record's key/value/header bytes into the shared staging area once;
// append encodes the record from there into the batch region.

import { crc32c } from './crc32c'
import { compressBound, compressInto, NOT_BUILT } from './codecs/index'
import { uvarintSize, uvarlongSize, writeUvarint, writeUvarlong, zigzag32, zigzag64 } from './varint'

export const HEADER_SIZE: i32 = 61
const CRC_OFFSET: usize = 17
const ATTRIBUTES_OFFSET: usize = 21

/** Status codes shared with src/edge/wasm/core.ts. */
export const ERR_OUT_OF_MEMORY: i32 = -1
export const ERR_CODEC_NOT_BUILT: i32 = -2
export const ERR_CODEC_FAILED: i32 = -3

// Batch handle layout (a 12-byte heap block): region pointer, region capacity, bytes used.
@inline function regionOf(h: usize): usize { return load<usize>(h, 0) }
@inline function capacityOf(h: usize): i32 { return load<i32>(h, 4) }
@inline function lengthOf(h: usize): i32 { return load<i32>(h, 8) }

// ---------------------------------------------------------------------------------------------
// Staging: one buffer for the whole module; JS writes a record here right before batchAppend.
// Layout: key bytes, value bytes, then per header: i32 keyLen, key, i32 valueLen (-1 null), value.

const STAGING_DEFAULT: i32 = 64 << 10
let staging: usize = 0
let stagingCap: i32 = 0

/** Returns the staging pointer with room for `size` bytes (contents not kept), or 0 if out of memory. */
export function stagingReserve(size: i32): usize {
  if (staging != 0 && size <= stagingCap) return staging
  // A huge record should not pin its staging buffer forever; stagingTrim gives it back.
  const cap = max(size, STAGING_DEFAULT)
  if (staging != 0) heap.free(staging)
  staging = tryAlloc(cap)
  stagingCap = staging == 0 ? 0 : cap
  return staging
}

/** Current staging capacity, so JS can skip stagingReserve while a record fits. */
export function stagingCapacity(): i32 {
  return stagingCap
}

/** Frees staging after an unusually large record grew it; returns whether it did. */
export function stagingTrim(): bool {
  if (stagingCap <= STAGING_DEFAULT * 4) return false
  heap.free(staging)
  staging = 0
  stagingCap = 0
  return true
}

// heap.alloc traps when memory cannot grow. Refusing what cannot fit under the wasm32 limit turns
// the common case (an oversized request) into a status code; an engine that caps memory lower
// still traps, which core.ts reports as WasmCoreError.
function tryAlloc(size: i32): usize {
  if (!canGrowFor(size)) return 0
  return heap.alloc(<usize>size)
}

function canGrowFor(size: i32): bool {
  if (size < 0) return false
  // TLSF grows memory by the block size plus bookkeeping (< 64 KiB).
  const pagesNeeded = ((size + (64 << 10)) >>> 16) + 1
  return memory.size() + pagesNeeded <= 65536
}

// ---------------------------------------------------------------------------------------------

/** Opens a batch with room for `capacity` bytes of records; returns a handle or 0 (out of memory). */
export function batchOpen(capacity: i32): usize {
  const cap = HEADER_SIZE + max(capacity, 64)
  const h = tryAlloc(12)
  if (h == 0) return 0
  const region = tryAlloc(cap)
  if (region == 0) {
    heap.free(h)
    return 0
  }
  store<usize>(h, region, 0)
  store<i32>(h, cap, 4)
  store<i32>(h, HEADER_SIZE, 8)
  return h
}

function ensureCapacity(h: usize, needed: i32): bool {
  const cap = capacityOf(h)
  if (needed <= cap) return true
  // Doubling keeps appends amortised O(1); TLSF realloc grows in place when the next block is free.
  let next = cap < 0x40000000 ? cap << 1 : needed
  if (next < needed) next = needed
  if (!canGrowFor(next)) return false
  store<usize>(h, heap.realloc(regionOf(h), <usize>next), 0)
  store<i32>(h, next, 4)
  return true
}

/**
 * Appends one record whose bytes are in staging. keyLen/valueLen are -1 for null.
 * Returns the batch's new uncompressed size (header included) or ERR_OUT_OF_MEMORY.
 */
export function batchAppend(
  h: usize, timestampDelta: f64, offsetDelta: i32, keyLen: i32, valueLen: i32, headerCount: i32,
): i32 {
  const ts = zigzag64(<i64>timestampDelta)
  const keyBytes = max(keyLen, 0)
  const valueBytes = max(valueLen, 0)
  let body = 1 + uvarlongSize(ts) + uvarintSize(zigzag32(offsetDelta))
    + uvarintSize(zigzag32(keyLen)) + keyBytes
    + uvarintSize(zigzag32(valueLen)) + valueBytes
    + uvarintSize(zigzag32(headerCount))
  const headersStart = staging + <usize>keyBytes + <usize>valueBytes
  let s = headersStart
  for (let i = 0; i < headerCount; i++) {
    const hk = load<i32>(s)
    const hv = load<i32>(s + 4 + <usize>hk)
    const hvBytes = max(hv, 0)
    body += uvarintSize(zigzag32(hk)) + hk + uvarintSize(zigzag32(hv)) + hvBytes
    s += 8 + <usize>hk + <usize>hvBytes
  }
  const start = lengthOf(h)
  const end = start + uvarintSize(zigzag32(body)) + body
  if (!ensureCapacity(h, end)) return ERR_OUT_OF_MEMORY

  let p = regionOf(h) + <usize>start
  p = writeUvarint(p, zigzag32(body))
  store<u8>(p++, 0) // record attributes: unused
  p = writeUvarlong(p, ts)
  p = writeUvarint(p, zigzag32(offsetDelta))
  p = writeUvarint(p, zigzag32(keyLen))
  memory.copy(p, staging, <usize>keyBytes)
  p += <usize>keyBytes
  p = writeUvarint(p, zigzag32(valueLen))
  memory.copy(p, staging + <usize>keyBytes, <usize>valueBytes)
  p += <usize>valueBytes
  p = writeUvarint(p, zigzag32(headerCount))
  s = headersStart
  for (let i = 0; i < headerCount; i++) {
    const hk = load<i32>(s)
    p = writeUvarint(p, zigzag32(hk))
    memory.copy(p, s + 4, <usize>hk)
    p += <usize>hk
    s += 4 + <usize>hk
    const hv = load<i32>(s)
    const hvBytes = <usize>max(hv, 0)
    p = writeUvarint(p, zigzag32(hv))
    memory.copy(p, s + 4, hvBytes)
    p += hvBytes
    s += 4 + hvBytes
  }
  store<i32>(h, end, 8)
  return end
}

/**
 * Compresses the records section if `codec` != 0, writes the header and the CRC. Returns the
 * finished batch length (its bytes start at batchData(h)) or a negative ERR_ code; on error the
 * batch is left as it was, so the caller can still free it.
 */
export function batchFinish(
  h: usize, codec: i32, level: i32, attributes: i32, recordCount: i32,
  baseTimestamp: f64, maxTimestamp: f64,
  producerIdHigh: i32, producerIdLow: i32, producerEpoch: i32, baseSequence: i32,
): i32 {
  let region = regionOf(h)
  let total = lengthOf(h)
  if (codec != 0) {
    const srcLen = total - HEADER_SIZE
    const bound = compressBound(codec, srcLen)
    if (bound == NOT_BUILT) return ERR_CODEC_NOT_BUILT
    if (bound < 0) return ERR_CODEC_FAILED
    const out = tryAlloc(HEADER_SIZE + bound)
    if (out == 0) return ERR_OUT_OF_MEMORY
    const written = compressInto(codec, level, region + HEADER_SIZE, srcLen, out + HEADER_SIZE, bound)
    if (written < 0) {
      heap.free(out)
      return written == NOT_BUILT ? ERR_CODEC_NOT_BUILT : ERR_CODEC_FAILED
    }
    heap.free(region)
    region = out
    total = HEADER_SIZE + written
    store<usize>(h, region, 0)
    store<i32>(h, total, 4)
    store<i32>(h, total, 8)
  }
  const p = region
  store<u64>(p, 0) // baseOffset: the broker assigns offsets
  store<u32>(p, bswap<u32>(<u32>(total - 12)), 8) // batchLength counts from after this field
  store<u32>(p, 0xffffffff, 12) // partitionLeaderEpoch -1
  store<u8>(p, 2, 16) // magic
  store<u16>(p, bswap<u16>(<u16>(attributes | codec)), ATTRIBUTES_OFFSET)
  store<u32>(p, bswap<u32>(<u32>(recordCount - 1)), 23)
  store<u64>(p, bswap<u64>(<u64><i64>baseTimestamp), 27)
  store<u64>(p, bswap<u64>(<u64><i64>maxTimestamp), 35)
  store<u32>(p, bswap<u32>(<u32>producerIdHigh), 43)
  store<u32>(p, bswap<u32>(<u32>producerIdLow), 47)
  store<u16>(p, bswap<u16>(<u16>producerEpoch), 51)
  store<u32>(p, bswap<u32>(<u32>baseSequence), 53)
  store<u32>(p, bswap<u32>(<u32>recordCount), 57)
  store<u32>(p, bswap<u32>(crc32c(p + ATTRIBUTES_OFFSET, total - <i32>ATTRIBUTES_OFFSET, 0)), CRC_OFFSET)
  return total
}

/** Whether `codec` is compiled into this module (lets JS reject a codec when a batch is opened, not at finish). */
export function codecSupported(codec: i32): bool {
  return codec == 0 || compressBound(codec, 0) != NOT_BUILT
}

/** Start of the batch bytes (header included). */
export function batchData(h: usize): usize {
  return regionOf(h)
}

/** Releases the batch region and handle. */
export function batchFree(h: usize): void {
  heap.free(regionOf(h))
  heap.free(h)
}
