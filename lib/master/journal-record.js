'use strict'

const fs = require('node:fs')
const zlib = require('node:zlib')
const { PRIVATE_FILE } = require('../shared/make-dir')
const { createBatch } = require('./batch')

/*
 * A batch as a record of the disk buffer's segments (journal.js) and of the
 * dead letters' files (dead-letters.js): the one owner of the format.
 *   magic u32 'CCJ2' | body length u32 | CRC-32 of the body u32 | body
 *   body: kind u8 | count u32 | batch id f64 | receivedAt f64 |
 *         slot u16 | pool size u16 | origin length u8 | origin (latin1) |
 *         the batch's bytes
 * (big-endian; the batch bytes are the master's batch format, see
 * lib/shared/batch-codec.js). Slot and pool size: the worker slot the batch
 * was formed for, among how many (NO_SLOT, 0 when not known). Records of
 * the earlier layout, magic 'CCJ1', have neither: they are still read.
 */
const MAGIC = 0x43434a32
const MAGIC_V1 = 0x43434a31
const HEAD = 12
const META = 1 + 4 + 8 + 8 + 2 + 2 + 1
const META_V1 = 1 + 4 + 8 + 8 + 1
const NO_SLOT = 0xffff

/**
 * A record's head (magic, length, CRC-32, then the body up to the batch's
 * bytes) for `batch` with its bytes `bytes`, under `origin`.
 */
function recordHead (batch, bytes, origin) {
  const meta = Buffer.allocUnsafe(HEAD + META + origin.length)
  meta.writeUInt32BE(MAGIC, 0)
  meta.writeUInt32BE(META + origin.length + bytes.length, 4)
  meta[HEAD] = batch.kind
  meta.writeUInt32BE(batch.count, HEAD + 1)
  meta.writeDoubleBE(batch.id, HEAD + 5)
  meta.writeDoubleBE(batch.receivedAt, HEAD + 13)
  const formedFor = batch.formedFor
  meta.writeUInt16BE(formedFor === null ? NO_SLOT : formedFor.slot, HEAD + 21)
  meta.writeUInt16BE(formedFor === null ? 0 : formedFor.of, HEAD + 23)
  meta[HEAD + 25] = origin.length
  meta.latin1Write(origin, HEAD + META)
  meta.writeUInt32BE(zlib.crc32(bytes, zlib.crc32(meta.subarray(HEAD))), 8)
  return meta
}

/**
 * A file of its own holding one batch as a record (the dead letters, see
 * dead-letters.js): created owner-only (never over an existing file),
 * written and synced, or removed again and the error thrown.
 * @param {string} file
 * @param {import('./batch').Batch} batch
 * @param {Buffer} bytes its bytes
 * @param {string} [origin] the origin it is written under (default its own)
 */
function writeRecordFile (file, batch, bytes, origin = batch.origin) {
  const fd = fs.openSync(file, 'wx', PRIVATE_FILE)
  try {
    const head = recordHead(batch, bytes, origin)
    const written = fs.writevSync(fd, [head, bytes])
    if (written !== head.length + bytes.length) throw Object.assign(new Error(`short write (${written} of ${head.length + bytes.length} bytes)`), { code: 'EIO' })
    fs.fdatasyncSync(fd)
  } catch (err) {
    closeQuietly(fd)
    fs.rmSync(file, { force: true })
    throw err
  }
  closeQuietly(fd)
}

/**
 * The batches of a file of records (writeRecordFile's, or a segment's),
 * their bytes in memory and marked redelivered (a worker may have seen
 * them), and what did not check out: `{ batches, damaged: { records, bytes } }`.
 */
function readRecordFile (file) {
  const buf = fs.readFileSync(file)
  const batches = []
  const damaged = { records: 0, bytes: 0 }
  scanRecords(buf, (r) => {
    const batch = createBatch(r.kind, buf.subarray(r.dataOffset, r.dataOffset + r.dataLength), r.count, r.id, r.origin, r.receivedAt, r.formedFor)
    batch.redeliver()
    batches.push(batch)
  }, (bytes) => {
    damaged.records++
    damaged.bytes += bytes
  })
  return { batches, damaged }
}

/**
 * Calls `record({ kind, count, id, receivedAt, formedFor, origin, start,
 * dataOffset, dataLength })` (`start`: where the record's head begins) for each record of `buf` that checks out, and
 * `damaged(bytes)` for each stretch that does not (a torn tail, a record
 * whose checksum fails); after damage, reading resumes at the next magic
 * number whose record checks out.
 */
function scanRecords (buf, record, damaged) {
  let offset = 0
  let badFrom = -1
  const endDamage = (at) => {
    if (badFrom >= 0) damaged(at - badFrom)
    badFrom = -1
  }
  while (offset < buf.length) {
    const parsed = parseRecord(buf, offset)
    if (parsed) {
      endDamage(offset)
      record(parsed)
      offset = parsed.dataOffset + parsed.dataLength
    } else {
      if (badFrom < 0) badFrom = offset
      offset = nextMagic(buf, offset + 1)
    }
  }
  endDamage(buf.length)
}

function parseRecord (buf, offset) {
  if (offset + HEAD + META_V1 > buf.length) return null
  const magic = buf.readUInt32BE(offset)
  if (magic !== MAGIC && magic !== MAGIC_V1) return null
  const meta = magic === MAGIC ? META : META_V1
  const bodyLength = buf.readUInt32BE(offset + 4)
  const body = offset + HEAD
  if (bodyLength < meta || body + bodyLength > buf.length) return null
  if (zlib.crc32(buf.subarray(body, body + bodyLength)) !== buf.readUInt32BE(offset + 8)) return null
  const originLength = buf[body + meta - 1]
  const dataOffset = body + meta + originLength
  if (dataOffset > body + bodyLength) return null
  const slot = magic === MAGIC ? buf.readUInt16BE(body + 21) : NO_SLOT
  return {
    kind: buf[body],
    count: buf.readUInt32BE(body + 1),
    id: buf.readDoubleBE(body + 5),
    receivedAt: buf.readDoubleBE(body + 13),
    formedFor: slot === NO_SLOT ? null : { slot, of: buf.readUInt16BE(body + 23) },
    origin: buf.latin1Slice(body + meta, dataOffset),
    start: offset,
    dataOffset,
    dataLength: body + bodyLength - dataOffset
  }
}

// 'CCJ', the magic of either layout without its version.
const MAGIC_PREFIX = Buffer.from('CCJ', 'latin1')

function nextMagic (buf, from) {
  const at = buf.indexOf(MAGIC_PREFIX, from)
  return at < 0 ? buf.length : at
}

function closeQuietly (fd) {
  try { fs.closeSync(fd) } catch {}
}

// A record at `position`, whole. A write the kernel cuts short (a full disk,
// the file size limit) goes on with the rest, so that what stops it is the
// kernel's own error (ENOSPC, EFBIG), not one made up here.
function writeWhole (fd, meta, bytes, position) {
  const size = meta.length + bytes.length
  let done = fs.writevSync(fd, [meta, bytes], position)
  if (done === size) return
  const record = Buffer.concat([meta, bytes])
  while (done < size) {
    const n = fs.writeSync(fd, record, done, size - done, position + done)
    if (n === 0) throw Object.assign(new Error(`write made no progress (${done} of ${size} bytes)`), { code: 'EIO' })
    done += n
  }
}

module.exports = { recordHead, scanRecords, writeRecordFile, readRecordFile, writeWhole }
