'use strict'

const { createNoopLogger } = require('../lib/logger')

/**
 * Base class of a collector's worker. Extend it and override what you need;
 * every hook may return a Promise.
 *
 * - `init()`: once, before the first message (connect to the database…).
 * - `doWork(message)`: per message. UDP: `{ data: Buffer, rinfo }`; TCP:
 *   `{ data: Buffer, remote: { address, port } }`. A throw (or rejection)
 *   is counted as failed and logged; the worker keeps going.
 * - `flush()`: on stop and before a rolling restart replaces this worker:
 *   write out anything buffered.
 * - `close()`: last; release resources (close the database last of all).
 * - `stats()`: extra counters, reported per worker in the master's stats().
 * - `onLeader(isLeader)`: exactly one worker of a collector is the leader
 *   at any time (for singleton jobs such as sweeping idle streams).
 *
 * The runtime sets `this.logger` (forwarded to the master's logger),
 * `this.slot`, `this.collectorName` and `this.leader`.
 */
class Worker {
  constructor (options = {}) {
    this.options = options
    this.logger = createNoopLogger()
    this.slot = 0
    this.collectorName = ''
    this.leader = false
  }

  async init () {}

  async doWork (message) { // eslint-disable-line no-unused-vars
    throw new Error(`${this.constructor.name} must implement doWork(message)`)
  }

  async flush () {}

  async close () {}

  stats () {
    return {}
  }

  onLeader (isLeader) { // eslint-disable-line no-unused-vars
  }
}

module.exports = Worker
