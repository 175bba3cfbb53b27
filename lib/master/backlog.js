'use strict'

const { Journal } = require('./journal')
const LogLimiter = require('../shared/log-limiter')
const { briefError } = require('../shared/logger')

/**
 * The disk buffer (journal.js) as the balancer runs it: created when
 * `buffer` is on, opened (what a previous run left read) before the workers
 * start, replayed to them before new traffic, its failures logged and
 * counted, closed last.
 */
class Backlog {
  constructor ({ options, counters, logger }) {
    this.options = options
    this.counters = counters
    this.logger = logger
    this.log = new LogLimiter()
  }

  /** A journal for the disk buffer, or null when it is off; not open yet. */
  create () {
    const { buffer, bufferDir: dir, bufferMaxBytes: maxBytes, bufferSync: sync } = this.options
    return buffer ? new Journal({ dir, maxBytes, sync }) : null
  }

  /** What the pool reports of the disk buffer, logged (rate-limited) and counted. */
  watch (pool, journal) {
    pool.on('kept', (n) => this.counters.kept(n))
    pool.on('bufferWriteFailed', (err) => {
      this.counters.event('bufferWriteFailed', err && err.code ? err.code : 'error')
      this.log.log(this.logger, 'error', 'write', () => ({ error: briefError(err), dir: journal.dir }), 'disk buffer write failed: batches are held in memory, not on disk (events.bufferWriteFailed)')
    })
    pool.on('bufferReadFailed', (err) => {
      this.log.log(this.logger, 'error', 'read', () => ({ error: briefError(err), dir: journal.dir }), 'disk buffer read failed: the batch is dropped (dropped.bufferUnreadable)')
    })
  }

  /**
   * What a previous run left in the disk buffer goes out before new traffic
   * (the listener opens after this): each origin's batches to one worker,
   * in order, as redeliveries, so the writers recognise what they stored.
   */
  replay (journal, workers, { batches, found, damaged }) {
    if (damaged.records > 0) {
      this.counters.damaged(damaged.records, damaged.bytes)
      this.logger.error({ dir: journal.dir, records: damaged.records, bytes: damaged.bytes }, `disk buffer: ${damaged.records} damaged records skipped (${damaged.bytes} bytes: cut short by a crash or corrupted); the rest is replayed`)
    }
    if (batches.length === 0) return
    const slots = new Map()
    for (const batch of batches) {
      if (!slots.has(batch.origin)) slots.set(batch.origin, workers[slots.size % workers.length])
      slots.get(batch.origin).redeliver(batch)
      this.counters.replayed(batch.count)
    }
    this.logger.warn({ dir: journal.dir, ...found }, `disk buffer: replaying ${found.messages} messages left by a previous run (${found.segments} segments, ${found.bytes} bytes); what was stored already is recognised by its key`)
  }

  close (journal) {
    if (!journal) return
    journal.close()
    if (journal.messages > 0) this.logger.warn({ dir: journal.dir, messages: journal.messages, bytes: journal.bytes }, `${journal.messages} messages stay in the disk buffer for the next start`)
  }
}

module.exports = Backlog
