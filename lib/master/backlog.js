'use strict'

const { Journal, SEGMENTS_IN_ROOM } = require('./journal')
const { formatBytes } = require('../shared/format-bytes')
const { DeadLetters } = require('./dead-letters')
const LogLimiter = require('../shared/log-limiter')
const { briefError } = require('../shared/logger')

// How often the buffer's directory is checked for having been deleted.
const DIR_CHECK_MS = 1000

/**
 * The disk buffer (journal.js) and the dead letters (dead-letters.js) as
 * the balancer runs them: the buffer created when `buffer` is on, opened
 * (what a previous run left read, unless it was written for another
 * destination) before the workers start, replayed to them before new
 * traffic, its failures logged and counted, closed last; the dead letters
 * counted at start, and those queued for replay delivered at start and at
 * each rolling restart.
 */
class Backlog {
  constructor ({ options, counters, logger }) {
    this.options = options
    this.counters = counters
    this.logger = logger
    this.log = new LogLimiter()
    this.dirTimer = null
    this.dirState = null // 'lost' (the directory could not be made again), 'mending' (not all written again yet)
  }

  /**
   * A journal for the disk buffer, or null when it is off; not open yet.
   * `destination`: what the workers write to (LoadBalancer#destination),
   * recorded with the buffer.
   */
  create (destination = null) {
    const { buffer, bufferDir: dir, bufferMaxBytes: maxBytes, bufferSync: sync } = this.options
    return buffer ? new Journal({ dir, maxBytes, sync, destination }) : null
  }

  /** The dead-letter directory, its content counted. */
  deadLetters (destination = null) {
    const deadLetters = new DeadLetters({ dir: this.options.deadLetterDir })
    deadLetters.open(destination)
    if (deadLetters.files > 0) this.logger.warn({ dir: deadLetters.dir, files: deadLetters.files, messages: deadLetters.messages }, `${deadLetters.messages} messages given up by earlier runs are kept as dead letters (collector status lists them, collector replay delivers them again)`)
    return deadLetters
  }

  /** What the pool reports of the disk buffer and the dead letters, logged (rate-limited) and counted. */
  watch (pool, journal) {
    pool.on('deadLettered', (n, entry) => {
      this.counters.deadLettered(n, entry.reason)
      this.logger.error({ reason: entry.reason, detail: entry.detail, messages: n, file: entry.file }, `a batch of ${n} messages was given up (${entry.reason}: ${entry.detail}) and kept as a dead letter; collector replay delivers it again once the cause is fixed (deadLettered)`)
    })
    pool.on('deadLetterFailed', (err, droppedAs) => {
      this.log.log(this.logger, 'error', 'deadLetter', () => ({ error: briefError(err), dir: this.options.deadLetterDir }), `a batch given up could not be kept as a dead letter: it is dropped (dropped.${droppedAs})`)
    })
    pool.on('kept', (n) => this.counters.kept(n))
    pool.on('bufferWriteFailed', (err) => {
      this.counters.event('bufferWriteFailed', err && err.code ? err.code : 'error')
      this.log.log(this.logger, 'error', 'write', () => ({ error: briefError(err), dir: journal.dir }), 'disk buffer write failed: batches are held in memory, not on disk (events.bufferWriteFailed)')
    })
    if (journal !== null && this.dirTimer === null) {
      this.dirTimer = setInterval(() => this.restoreDir(journal), DIR_CHECK_MS)
      this.dirTimer.unref()
    }
    pool.on('bufferReadFailed', (err) => {
      this.log.log(this.logger, 'error', 'read', () => ({ error: briefError(err), dir: journal.dir }), 'disk buffer read failed: the batch is dropped (dropped.bufferUnreadable)')
    })
  }

  /**
   * What a previous run left in the disk buffer goes out before new traffic
   * (the listener opens after this): each origin's batches to one worker,
   * in order, as redeliveries, so the writers recognise what they stored.
   */
  replay (journal, workers, { batches, found, damaged, setAside, small }) {
    if (small) {
      this.logger.warn({ dir: journal.dir, room: small.room, maxBytes: journal.maxBytes, segmentBytes: small.segmentBytes }, `disk buffer: its file system has room for ${formatBytes(small.room)}, less than --buffer-max-bytes ${formatBytes(journal.maxBytes)}: segments of ${formatBytes(small.segmentBytes)} instead, so that ${SEGMENTS_IN_ROOM} fit; once the disk is full, new batches are held in memory, not on disk (events.bufferWriteFailed)`)
    }
    if (setAside) {
      this.logger.error({ dir: journal.dir, writtenFor: setAside.destination, now: journal.destination, keptIn: setAside.dir }, `disk buffer: what it held was written for ${setAside.destination}, not ${journal.destination}: not replayed here, kept in ${setAside.dir}; to replay it there, run this collector writing to ${setAside.destination} with --buffer-dir ${setAside.dir}`)
    }
    if (damaged.records > 0) {
      this.counters.damaged(damaged.records, damaged.bytes)
      this.logger.error({ dir: journal.dir, records: damaged.records, bytes: damaged.bytes }, `disk buffer: ${damaged.records} damaged records skipped (${damaged.bytes} bytes: cut short by a crash or corrupted); the rest is replayed`)
    }
    if (batches.length === 0) return
    const unplaced = this.deliver(batches, workers)
    this.logger.warn({ dir: journal.dir, ...found }, `disk buffer: replaying ${found.messages} messages left by a previous run (${found.segments} segments, ${found.bytes} bytes); what was stored already is recognised by its key`)
    if (unplaced > 0 && this.options.affinity === 'strict') this.logger.warn({ dir: journal.dir, batches: unplaced }, `disk buffer: ${unplaced} replayed batches were formed for a pool of another size (or by an earlier version): each goes to the worker of its origin, not of its keys, so a key's replayed messages may run beside its new ones and its kept state see them out of order; replay with the --instances that wrote them to avoid this`)
  }

  /**
   * Each batch, as a redelivery, to the worker of the slot it was formed
   * for, when this pool has that many slots: its keys' slot (flow affinity),
   * so a key's replayed messages run, ahead of its new ones, on the worker
   * that takes those; with kept state (--affinity strict), on another the
   * new ones met state the replayed ones had not yet written (an operator's
   * trial: gap counts ×16 after a master SIGKILL). A batch formed for a pool
   * of another size (or written by an earlier version) goes by its origin:
   * each origin's batches to one worker, in order. Returns how many went so.
   */
  deliver (batches, workers) {
    const bySlot = new Map(workers.map((worker) => [worker.slot, worker]))
    const byOrigin = new Map()
    let unplaced = 0
    for (const batch of batches) {
      const formedFor = batch.formedFor
      let worker = formedFor !== null && formedFor.of === this.options.instances ? bySlot.get(formedFor.slot) : undefined
      if (worker === undefined) {
        worker = byOrigin.get(batch.origin)
        if (worker === undefined) byOrigin.set(batch.origin, worker = workers[byOrigin.size % workers.length])
        unplaced++
      }
      worker.redeliver(batch)
      this.counters.replayed(batch.count)
    }
    return unplaced
  }

  /**
   * The dead letters `collector replay` queued, delivered now (at start,
   * after the buffer's own replay, and after each rolling restart): written
   * to the disk buffer first when it is on (their files go once they are
   * there), else handed to the workers from memory (their files go then: a
   * master killed before they are stored loses them, as it loses all it
   * holds without the buffer). Counted as `replayed`. Those written for
   * another destination, or unreadable, stay queued, said in the log.
   */
  replayDeadLetters (deadLetters, journal, workers) {
    if (workers.length === 0) return
    const { taken, elsewhere, unreadable } = deadLetters.takeQueued()
    for (const entry of elsewhere) this.logger.error({ file: entry.file, writtenFor: entry.target, now: deadLetters.target }, `dead letter ${entry.name} was written for ${entry.target}, not ${deadLetters.target}: not replayed here`)
    for (const entry of unreadable) this.logger.error({ file: entry.file }, `dead letter ${entry.name} does not read back whole: not replayed`)
    let messages = 0
    for (const { entry, batches } of taken) {
      let written = true
      for (const batch of batches) {
        if (journal !== null && !journal.append(batch)) {
          written = false
          this.counters.event('bufferWriteFailed', journal.lastWriteError && journal.lastWriteError.code ? journal.lastWriteError.code : 'error')
        }
        messages += batch.count
      }
      // A dead letter the buffer could not take (a full disk) stays queued: delivered from memory now, and again
      // at the next start or restart if a crash takes this copy (stored once either way: its messages' keys).
      if (written) deadLetters.remove(entry)
      else this.logger.warn({ file: entry.file, err: journal.lastWriteError }, `dead letter ${entry.name} could not be written to the disk buffer: delivered from memory, and kept queued until it is`)
      this.deliver(batches, workers)
    }
    if (taken.length > 0) this.logger.warn({ dir: deadLetters.dir, files: taken.length, messages }, `dead letters: replaying ${messages} messages (${taken.length} batches) queued by collector replay`)
  }

  // The buffer's directory (or its lock) deleted while the collector runs:
  // made again, and what it held not yet stored written into it again.
  // Each loss is counted once, however many seconds it takes to mend.
  restoreDir (journal) {
    let moved
    try {
      moved = journal.restoreLost()
    } catch (err) {
      if (this.dirState !== 'lost') this.counters.event('bufferDirLost', err.code || 'error')
      this.dirState = 'lost'
      this.log.log(this.logger, 'error', 'dir', () => ({ error: briefError(err), dir: journal.dir }), `disk buffer ${err.message}: what it holds not yet stored is kept only in this process, lost if the master is killed, and kept as dead letters at stop (events.bufferDirLost)`)
      return
    }
    if (moved === null) return
    if (this.dirState !== 'mending') this.counters.event('bufferDirRestored', moved.segments > 0 ? 'deleted' : 'lockDeleted')
    this.dirState = moved.left > 0 ? 'mending' : null
    if (moved.left > 0) this.counters.event('bufferWriteFailed', journal.lastWriteError && journal.lastWriteError.code ? journal.lastWriteError.code : 'error')
    const what = `disk buffer: ${journal.dir} ${moved.segments > 0 ? 'was deleted' : 'lost its lock file'} while the collector ran: made again, its lock taken, and ${moved.messages} messages not yet stored written into it again (events.bufferDirRestored)`
    if (moved.left === 0) this.logger.error({ dir: journal.dir, ...moved }, what)
    else this.log.log(this.logger, 'error', 'mend', () => ({ dir: journal.dir, ...moved, error: briefError(journal.lastWriteError) }), `${what}; ${moved.left} batches could not be written yet (events.bufferWriteFailed): tried again every second`)
  }

  close (journal) {
    clearInterval(this.dirTimer)
    this.dirTimer = null
    if (!journal) return
    if (journal.active !== null) this.restoreDir(journal)
    journal.close()
    const { nameless } = journal
    if (nameless.messages > 0) this.logger.error({ dir: journal.dir, ...nameless }, `disk buffer: ${nameless.messages} messages were in segments whose directory was deleted and could not be made again: not kept for the next start`)
    if (journal.messages > nameless.messages) this.logger.warn({ dir: journal.dir, messages: journal.messages, bytes: journal.bytes }, `${journal.messages - nameless.messages} messages stay in the disk buffer for the next start`)
  }
}

module.exports = Backlog
