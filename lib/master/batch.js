'use strict'

/**
 * A batch as the master keeps it until its worker acknowledges it: `bytes`
 * in the batch format (lib/shared/batch-codec.js), or null while they lie
 * only in the disk buffer (`at`: where, see journal.js); `id` and `origin`
 * name it for good (a message's key is made from them, see
 * lib/shared/batch-ids.js), so a batch delivered again, to another worker or
 * by another run, is recognised. Its state changes only through the
 * methods below (the journal and the worker handle call them): one owner
 * of the record, whoever holds it.
 */
class Batch {
  constructor (kind, bytes, count, id, origin, receivedAt, formedFor) {
    this.id = id
    this.kind = kind
    this.bytes = bytes
    this.size = bytes ? bytes.length : 0 // its bytes' length, kept while they lie on disk only
    this.count = count
    this.origin = origin
    // { slot, of }: the worker slot it was formed for, in a pool of `of`; null when not known (a record of an
    // earlier version). Replayed by a later run, it goes to that slot's worker: its keys' (Backlog#deliver).
    this.formedFor = formedFor
    this.redelivered = false
    this.receivedAt = receivedAt
    this.sentAt = 0
    this.strikes = [] // how each worker that died by itself while processing it ended, since one got through it
    this.at = null
    this.unwritten = 0 // bytes held in memory because the disk buffer could not take them (Journal#heldUnwritten)
  }

  /** Written to the disk buffer at `at` ({ segment, dataOffset, dataLength }). */
  journaled (at) {
    this.at = at
  }

  /** Out of the disk buffer (acknowledged, or given up by name); returns where it was, or null. */
  unjournaled () {
    const at = this.at
    this.at = null
    return at
  }

  /** Waiting in the backlog, or sent: with its bytes on disk, they are not kept in memory. */
  shelved () {
    if (this.at !== null) this.bytes = null
  }

  /** Its bytes, read back from the disk buffer. */
  loaded (bytes) {
    this.bytes = bytes
  }

  sent () {
    this.sentAt = Date.now()
  }

  /** A worker died by itself while processing it (`cause`: how it ended); returns the strikes in a row. */
  struck (cause) {
    this.strikes.push(cause)
    return this.strikes.length
  }

  /** A worker got through it (doWork for every message): the strikes start over. */
  cleared () {
    if (this.strikes.length > 0) this.strikes = []
  }

  /** To be delivered again: a worker holding it died, or a previous run left it. */
  redeliver () {
    this.redelivered = true
  }
}

function createBatch (kind, bytes, count, id, origin, receivedAt, formedFor = null) {
  return new Batch(kind, bytes, count, id, origin, receivedAt, formedFor)
}

module.exports = { createBatch, Batch }
