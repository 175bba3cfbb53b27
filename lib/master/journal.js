'use strict'

const fs = require('node:fs')
const path = require('node:path')
const BufferError = require('../../exceptions/buffer-error')
const { makeDir, PRIVATE_DIR, PRIVATE_FILE } = require('../shared/make-dir')
const { writeJsonFile } = require('../shared/json-file')
const { takeLock, releaseLock, setAsideForOther, freeBytes } = require('./journal-dir')
const { createBatch } = require('./batch')
const { recordHead, scanRecords, writeWhole } = require('./journal-record')
const { restoreLost, located } = require('./journal-restore')
const { Segment, LIVE_SUFFIX, LIST_EVERY_MS, syncDirectory, closeQuietly, readLiveOffsets, listedReleased, listReleased, removeFiles, removeOrphanLists } = require('./journal-segment')

/*
 * The master's disk buffer: every batch the master forms is appended here
 * before it goes to a worker (or instead, while the workers are full), and
 * released when its worker acknowledges it.
 *
 * A directory of segment files, `<n>.ccj`, appended to in order, of records
 * (journal-record.js, the one owner of the record format; the dead letters
 * are files of the same records). One positional writev per batch. A segment is
 * deleted once every record in it is released; at open, the records of
 * segments left behind (a crash, a stop during an outage) are handed back
 * to be delivered again, with their batch ids and origins, so every message
 * keeps its key. Beside each segment, the list of its records not released
 * (`<n>.ccj.live`), written at a stop and every second while it runs
 * (journal-segment.js listReleased): the next open hands back those alone,
 * after a crash what was not released a second before; a list older than
 * that names more, and a record stored twice is stored once (its key). A record
 * cut short (a crash mid-write) or damaged fails its length or checksum:
 * it is skipped and counted, and reading resumes at the next record that
 * checks out.
 */
const SUFFIX = '.ccj'
const SYNC_INTERVAL_MS = 1000
const SYNC_POLICIES = Object.freeze(['none', 'interval', 'batch'])
const MAX_SEGMENT_BYTES = 64 * 1024 * 1024
const MIN_SEGMENT_BYTES = 64 * 1024
// On a file system with less room than the bound, segments are sized so
// that this many fit: one segment is never the whole disk (see append).
const SEGMENTS_IN_ROOM = 8

class Journal {
  /**
   * @param {{ dir: string, maxBytes: number, sync?: string }} options
   *   sync: 'none' (the page cache: survives a process crash), 'interval'
   *   (fdatasync once a second when written: a machine crash loses at most
   *   that second) or 'batch' (fdatasync per batch)
   * @param {string|null} [options.destination] what the workers write to
   *   (no credentials): recorded in the directory; a buffer written for
   *   another one is set aside at open, not replayed
   */
  constructor ({ dir, maxBytes, sync = 'none', destination = null }) {
    this.dir = path.resolve(dir)
    this.maxBytes = maxBytes
    this.sync = sync
    this.destination = destination
    this.segmentBytes = Math.min(MAX_SEGMENT_BYTES, Math.max(MIN_SEGMENT_BYTES, Math.floor(maxBytes / 16)))
    this.segments = new Map() // seq → Segment, oldest first
    this.active = null
    this.bytes = 0 // on disk, over every segment
    this.messages = 0 // in records not yet released
    this.records = 0
    this.syncs = 0
    this.writeErrors = 0
    this.lastWriteError = null
    this.failing = false // the last write failed (a full disk): see release()
    this.unwritten = 0 // bytes of batches held in memory as their write failed (heldUnwritten)
    this.dirty = false
    this.syncTimer = null
    this.listTimer = null
    this.locked = false
    this.detached = false // the directory was deleted and another process holds it now (journal-restore.js)
    this.nameless = { records: 0, messages: 0 } // left at close in segments with no name: lost
    this.readableByWorkers = true // batches are sent as where they lie here (WorkerHandle#sendsWhere) until a worker cannot read them
  }

  /**
   * Takes the directory (creating it, owner-only) and reads what a previous
   * run left: `{ batches, found: { segments, records, messages, bytes },
   * damaged: { records, bytes }, setAside }`, batches oldest first, their
   * bytes left on disk (read()); `setAside` ({ dir, destination }, else
   * null): what the directory held was written for another destination and
   * was moved there instead (journal-dir.js); `small` ({ room, segmentBytes },
   * else null): the file system has less room than maxBytes, segments are
   * made smaller to fit it.
   * @throws {BufferError} directory unusable or held by another live process
   */
  open () {
    try {
      makeDir(this.dir, PRIVATE_DIR)
    } catch (err) {
      throw new BufferError(this.dir, `cannot create the directory (${err.code || err.message})`, err)
    }
    this.locked = takeLock(this.dir)
    const setAside = setAsideForOther(this.dir, this.destination)
    removeOrphanLists(this.dir, SUFFIX)
    const found = { segments: 0, records: 0, messages: 0, bytes: 0 }
    const damaged = { records: 0, bytes: 0 }
    const batches = []
    let last = 0
    for (const seq of this.segmentNumbers()) {
      last = seq
      const segment = this.readSegment(seq, batches, damaged)
      if (segment === null) continue
      found.segments++
      found.records += segment.live
      found.messages += segment.messages
      found.bytes += segment.size
    }
    const small = this.fitToDisk()
    // Past every segment on disk, kept or not: a name is never used twice
    // for other bytes, so a worker of a killed run still reading a batch
    // where the master said it lies (where()) reads that batch or nothing.
    this.startSegment(last + 1)
    if (this.sync === 'interval') this.syncTimer = setInterval(() => this.syncNow(), SYNC_INTERVAL_MS).unref()
    this.listTimer = setInterval(() => listReleased(this.segments.values(), (err) => this.writeFailed(err)), LIST_EVERY_MS).unref()
    return { batches, found, damaged, setAside, small }
  }

  // The room the buffer has (free space, and what it holds already) below
  // maxBytes: segments sized so that SEGMENTS_IN_ROOM fit, or the one
  // segment being written could fill the disk alone. null: room enough.
  fitToDisk () {
    const room = freeBytes(this.dir) + this.bytes
    if (room >= this.maxBytes) return null
    this.segmentBytes = Math.max(MIN_SEGMENT_BYTES, Math.min(this.segmentBytes, Math.floor(room / SEGMENTS_IN_ROOM)))
    return { room, segmentBytes: this.segmentBytes }
  }

  segmentNumbers () {
    return fs.readdirSync(this.dir)
      .filter((name) => name.endsWith(SUFFIX) && /^\d+$/.test(name.slice(0, -SUFFIX.length)))
      .map((name) => Number(name.slice(0, -SUFFIX.length)))
      .sort((a, b) => a - b)
  }

  fileOf (seq) {
    return path.join(this.dir, `${String(seq).padStart(10, '0')}${SUFFIX}`)
  }

  // The records of one segment left behind, appended to `batches`; the
  // segment stays until they are released. null: nothing in it to deliver.
  readSegment (seq, batches, damaged) {
    const file = this.fileOf(seq)
    const buf = fs.readFileSync(file)
    const segment = new Segment(seq, file, null, buf.length)
    const live = readLiveOffsets(file)
    scanRecords(buf, (record) => {
      if (listedReleased(live, record.dataOffset)) return // released before the run ended
      const batch = createBatch(record.kind, null, record.count, record.id, record.origin, record.receivedAt, record.formedFor)
      batch.redeliver()
      batch.journaled({ segment, dataOffset: record.dataOffset, dataLength: record.dataLength })
      segment.live++
      segment.messages += record.count
      segment.offsets.add(record.dataOffset)
      batches.push(batch)
    }, (bytes) => {
      damaged.records++
      damaged.bytes += bytes
    })
    if (segment.live === 0) {
      removeFiles(file)
      return null
    }
    segment.fd = fs.openSync(file, 'r')
    this.segments.set(seq, segment)
    this.bytes += segment.size
    this.messages += segment.messages
    this.records += segment.live
    return segment
  }

  startSegment (seq) {
    if (this.detached) throw new BufferError(this.dir, 'was deleted and is now held by another process: no new segment is made there')
    const file = this.fileOf(seq)
    const fd = fs.openSync(file, 'wx+', PRIVATE_FILE)
    if (this.sync !== 'none') syncDirectory(this.dir)
    this.active = new Segment(seq, file, fd, 0)
    this.segments.set(seq, this.active)
  }

  /** Whether the buffer holds maxBytes or more (fullWith: with `forming` bytes of batches being filled for it): new batches are refused until some are released. */
  get full () { return this.fullWith(0) }
  fullWith (forming) { return this.bytes + this.unwritten + forming >= this.maxBytes || this.unwritten >= this.segmentBytes }

  // A batch whose append failed, held in memory instead: its bytes count as the buffer's until released,
  // a segment's worth at most (a full disk let the master hold all its input in memory).
  heldUnwritten (batch) {
    batch.unwritten = batch.bytes.length
    this.unwritten += batch.unwritten
  }

  /**
   * Appends a batch (one writev) and notes where it lies (`batch.at`).
   * Returns false when it could not be written (the disk is full, an I/O
   * error: `lastWriteError`); nothing of it is left in the file then.
   * A write that fails while every record of the active segment is
   * released (stored: the segment only takes room) starts a new segment,
   * the old one deleted, and is tried once more.
   */
  append (batch) {
    const at = this.write(recordHead(batch, batch.bytes, batch.origin), batch.bytes, batch.count)
    if (at === null) return false
    batch.journaled(at)
    return true
  }

  // A record (its head, then its data) appended to the active segment:
  // where its data lies, or null when it could not be written.
  write (meta, data, count, retry = true) {
    if (this.active.size >= this.segmentBytes && !this.rotate()) return null
    const segment = this.active
    try {
      writeWhole(segment.fd, meta, data, segment.size)
      if (this.sync === 'batch') this.syncSegment(segment)
    } catch (err) {
      try { fs.ftruncateSync(segment.fd, segment.size) } catch {}
      this.failing = true
      if (retry && segment.live === 0 && segment.size > 0 && this.rotate()) return this.write(meta, data, count, false)
      this.writeFailed(err)
      return null
    }
    this.failing = false
    const at = { segment, dataOffset: segment.size + meta.length, dataLength: data.length }
    segment.offsets.add(at.dataOffset)
    segment.size += meta.length + data.length
    segment.live++
    segment.messages += count
    this.bytes += meta.length + data.length
    this.messages += count
    this.records++
    this.dirty = true
    return at
  }

  // false: the next segment could not be created (out of file descriptors,
  // of inodes), counted as a failed write; the active one stays, to retry.
  rotate () {
    const old = this.active
    if (this.sync !== 'none') this.syncSegment(old)
    try {
      this.startSegment(old.seq + 1)
    } catch (err) {
      this.writeFailed(err)
      return false
    }
    if (old.live === 0) this.remove(old)
    return true
  }

  /**
   * The directory deleted while the collector runs, or its lock: made again
   * and what it held written into it again (journal-restore.js). null when
   * nothing was lost, else `{ segments, records, messages, left }`.
   * @throws {BufferError} it cannot be made again, or another live process holds it now
   */
  restoreLost () {
    return restoreLost(this)
  }

  /**
   * The bytes of a batch that lies here (batch.at): in `into` when it is
   * large enough (a view of it, valid until `into` is written again), else
   * in a buffer of their own.
   */
  read (batch, into = null) {
    const { segment, dataOffset, dataLength } = located(batch.at)
    const bytes = into !== null && into.length >= dataLength ? into.subarray(0, dataLength) : Buffer.allocUnsafeSlow(dataLength)
    let done = 0
    while (done < dataLength) {
      const n = fs.readSync(segment.fd, bytes, done, dataLength - done, dataOffset + done)
      if (n === 0) throw new BufferError(this.dir, `${path.basename(segment.file)} ends before a record it holds (truncated while open?)`)
      done += n
    }
    return bytes
  }

  /** Whether the batch lies here in a segment the next start finds (not one whose directory went, see journal-restore.js). */
  keeps (batch) {
    return batch.at !== null && located(batch.at).segment.file !== null
  }

  /** Where a batch's bytes lie here, for a worker to read them (lib/worker/disk-buffer-reads.js): [file, offset, length]. */
  where (batch) {
    const { segment, dataOffset, dataLength } = located(batch.at)
    return [segment.file, dataOffset, dataLength]
  }

  /** The batch is done with (acknowledged, or given up by name): its segment goes once all of its batches are. */
  release (batch) {
    this.unwritten -= batch.unwritten
    batch.unwritten = 0
    const first = batch.unjournaled()
    if (!first) return
    const at = located(first, true)
    const segment = at.segment
    segment.offsets.delete(at.dataOffset)
    segment.unlisted = true
    segment.live--
    segment.messages -= batch.count
    this.messages -= batch.count
    this.records--
    if (segment.live !== 0) return
    if (segment !== this.active) this.remove(segment)
    // Full with the active segment alone (a small bound): all of it released,
    // a new one takes over and this one goes, or the buffer would say full
    // with nothing in it until the next batch came. The same while writes
    // fail (a full disk): its room is freed now, for the dead letters too.
    else if (this.full || this.failing) this.rotate()
  }

  remove (segment) {
    this.segments.delete(segment.seq)
    this.bytes -= segment.size
    closeQuietly(segment.fd)
    if (segment.file === null) return // its name went with its directory
    try {
      removeFiles(segment.file)
    } catch (err) { // a file that cannot be deleted (EACCES, EROFS) only takes room: counted, never thrown at an acknowledgement
      this.writeFailed(err)
    }
  }

  syncNow () {
    if (!this.dirty || !this.active) return
    this.syncSegment(this.active)
  }

  syncSegment (segment) {
    try {
      fs.fdatasyncSync(segment.fd)
      this.syncs++
      if (segment === this.active) this.dirty = false
    } catch (err) {
      this.writeFailed(err)
    }
  }

  /**
   * Flushes (unless sync is none) and closes. Segments whose records are
   * all released are deleted; the others stay for the next open, each with
   * the list of its records not released.
   */
  close () {
    clearInterval(this.syncTimer)
    clearInterval(this.listTimer)
    this.syncTimer = null
    if (this.active && this.sync !== 'none') this.syncNow()
    // What stays is still counted (segments, bytes) for the summary after stop.
    for (const segment of [...this.segments.values()]) {
      if (segment.live === 0) this.remove(segment)
      else this.keep(segment)
      segment.fd = null
    }
    this.active = null
    if (this.locked) releaseLock(this.dir)
    this.locked = false
  }

  // A segment that stays: its records not released, listed beside it. A
  // list that cannot be written leaves the previous one (naming more) or
  // none: the next open hands back more than is left, never less.
  keep (segment) {
    closeQuietly(segment.fd)
    if (segment.file === null) { // its directory deleted, and not made again: nothing to keep it in
      this.nameless.records += segment.live
      this.nameless.messages += segment.messages
      return
    }
    try {
      writeJsonFile(segment.file + LIVE_SUFFIX, { offsets: [...segment.offsets] })
    } catch (err) {
      this.writeFailed(err)
    }
  }

  writeFailed (err) {
    this.writeErrors++
    this.lastWriteError = err
  }

  /** For stats(): `{ dir, bytes, maxBytes, segments, records, messages, sync, syncs, writeErrors }`. */
  stats () {
    return {
      dir: this.dir,
      bytes: this.bytes,
      maxBytes: this.maxBytes,
      segments: this.segments.size,
      records: this.records,
      messages: this.messages,
      sync: this.sync,
      syncs: this.syncs,
      writeErrors: this.writeErrors
    }
  }
}

module.exports = { Journal, SYNC_POLICIES, SEGMENTS_IN_ROOM }
