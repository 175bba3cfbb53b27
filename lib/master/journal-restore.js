'use strict'

const fs = require('node:fs')
const BufferError = require('../../exceptions/buffer-error')
const { makeDir, PRIVATE_DIR } = require('../shared/make-dir')
const { takeLock, setAsideForOther, lockHolder } = require('./journal-dir')
const { scanRecords } = require('./journal-record')
const { isUnlinked } = require('./journal-segment')

/**
 * The directory deleted while the collector runs (a cleanup script, an
 * `rm -rf`), or its lock: the segments live on only as files open here,
 * which a master killed now would lose, and another collector could take
 * the directory. It is made again with its lock, and the records not
 * released are copied into new segments, where their batches are from
 * then on (located()). null when nothing was lost; else `{ segments,
 * records, messages, left }` copied (`left`: records not copied, a write
 * failed: tried again at the next call).
 * @throws {BufferError} the directory cannot be made again, or another live process holds it now
 */
function restoreLost (journal) {
  if (journal.active === null) return null
  const lost = [...journal.segments.values()].filter((segment) => segment.file === null || isUnlinked(segment))
  if (lost.length === 0 && lockHolder(journal.dir) === process.pid) return null
  try {
    makeDir(journal.dir, PRIVATE_DIR)
  } catch (err) {
    throw new BufferError(journal.dir, `was deleted and cannot be made again (${err.code || err.message})`, err)
  }
  for (const segment of lost) segment.file = null // no name: nothing of it is opened, kept or removed by path again
  try {
    journal.locked = takeLock(journal.dir)
  } catch (err) {
    detach(journal)
    throw err
  }
  journal.detached = false
  setAsideForOther(journal.dir, journal.destination)
  const moved = { segments: lost.length, records: 0, messages: 0, left: 0 }
  if (lost.includes(journal.active)) journal.startSegment(Math.max(journal.active.seq, ...journal.segmentNumbers()) + 1)
  for (const old of lost) copyLive(journal, old, moved)
  return moved
}

// Another process took the directory made again (a second collector of
// the same name): nothing more is written, read or deleted there by path.
// What the lost segments hold is read from their open files, sent to
// workers with its bytes, and given up as dead letters at stop, not kept.
function detach (journal) {
  journal.detached = true
  journal.locked = false
  journal.readableByWorkers = false
}

// The records of a segment that lost its name, not released, written
// again in the active segment; the old one forwards to where they are.
function copyLive (journal, old, moved) {
  const buf = Buffer.allocUnsafe(old.size)
  for (let done = 0; done < old.size;) {
    const n = fs.readSync(old.fd, buf, done, old.size - done, done)
    if (n === 0) break
    done += n
  }
  if (old.movedTo === null) old.movedTo = new Map()
  scanRecords(buf, (record) => {
    if (!old.offsets.has(record.dataOffset)) return
    const data = buf.subarray(record.dataOffset, record.dataOffset + record.dataLength)
    const at = journal.write(buf.subarray(record.start, record.dataOffset), data, record.count)
    if (at === null) {
      moved.left++
      return
    }
    old.movedTo.set(record.dataOffset, at)
    old.offsets.delete(record.dataOffset)
    old.live--
    old.messages -= record.count
    journal.messages -= record.count
    journal.records--
    moved.records++
    moved.messages += record.count
  }, () => {})
  if (old.live === 0) journal.remove(old)
}

// Where a batch's bytes lie now: a segment whose directory was deleted
// forwards each record it held to where restoreLost() wrote it again
// (`forget`: the batch is released, the forwarding goes).
function located (at, forget = false) {
  let here = at
  while (here.segment.movedTo !== null) {
    const next = here.segment.movedTo.get(here.dataOffset)
    if (next === undefined) break
    if (forget) here.segment.movedTo.delete(here.dataOffset)
    here = next
  }
  return here
}

module.exports = { restoreLost, located }
