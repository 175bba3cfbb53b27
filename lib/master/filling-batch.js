'use strict'

const { KIND_UDP, KIND_TCP, entrySize, writeEntry, entryReceivedAt, remoteOf } = require('../shared/batch-codec')

const BATCH_BYTES = 256 * 1024
const NO_REMOTE = Object.freeze({ address: '', port: 0 })

/**
 * The batch a worker handle is filling, in the master: messages appended in
 * the batch format (lib/shared/batch-codec.js) into one buffer that is
 * reused from batch to batch, with their count, kind (UDP or TCP: one kind
 * per batch) and when its first message arrived (its entry's receivedAt:
 * the kernel's time for the native UDP path). The handle decides when it
 * is sent (worker-handle.js); this holds the bytes until then.
 */
class FillingBatch {
  constructor () {
    this.bytes = Buffer.allocUnsafe(BATCH_BYTES)
    this.length = 0
    this.count = 0
    this.kind = KIND_UDP
    this.since = 0
  }

  /** The message's kind and the room its entry takes: { kind, size, remote }. */
  static entryOf (message) {
    const remote = remoteOf(message) || NO_REMOTE
    return { kind: message.rinfo ? KIND_UDP : KIND_TCP, size: entrySize(message.data, remote.address), remote }
  }

  /** Whether an entry of `kind` and `size` must start another batch (this one holds messages of another kind, or has no room left). */
  full (kind, size) {
    return this.count > 0 && (kind !== this.kind || this.length + size > this.bytes.length)
  }

  /** Whether an entry of `size` is too large for any batch of this size (it goes alone). */
  oversize (size) {
    return size > this.bytes.length
  }

  append (message, { kind, remote }) {
    const receivedAt = message.receivedAt === undefined ? Date.now() : message.receivedAt
    this.kind = kind
    this.length = writeEntry(this.bytes, this.length, message.data, remote.address, remote.port, receivedAt)
    this.counted(receivedAt)
  }

  /** A UDP entry already in batch format (`buf[start, end)`, from the native receive path): one copy, nothing decoded. */
  appendEntry (buf, start, end) {
    this.kind = KIND_UDP
    buf.copy(this.bytes, this.length, start, end)
    this.length += end - start
    this.counted(this.count === 0 ? entryReceivedAt(buf, start) : 0)
  }

  counted (receivedAt) {
    if (this.count === 0) this.since = receivedAt
    this.count++
  }

  /**
   * Empties it; returns { kind, bytes, count, since }, or null when it held
   * nothing. `bytes` is a copy, or with `copy` false a view of the buffer,
   * valid until the next message is appended.
   */
  take (copy = true) {
    if (this.count === 0) return null
    let bytes = this.bytes.subarray(0, this.length)
    if (copy) {
      bytes = Buffer.allocUnsafeSlow(this.length)
      this.bytes.copy(bytes, 0, 0, this.length)
    }
    const taken = { kind: this.kind, bytes, count: this.count, since: this.since }
    this.length = 0
    this.count = 0
    return taken
  }
}

/** An entry of `size` alone, in a buffer of its own. */
function entryAlone (message, { remote }, size) {
  const bytes = Buffer.allocUnsafe(size)
  writeEntry(bytes, 0, message.data, remote.address, remote.port, message.receivedAt)
  return bytes
}

module.exports = { FillingBatch, entryAlone, BATCH_BYTES }
