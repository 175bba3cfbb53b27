'use strict'

const ipc = require('./ipc')
const { BatchReader } = require('./batch-codec')
const { LEVELS } = require('./logger')

const FAILURE_LOG_INTERVAL_MS = 1000

/**
 * Runs a Worker instance inside a forked process: processes batches in
 * arrival order, acknowledges each batch, answers stats requests, and on
 * SHUTDOWN finishes the queue, flushes, closes and reports CLOSED.
 */
class WorkerRuntime {
  constructor (worker, channel = process) {
    this.worker = worker
    this.channel = channel
    this.queue = []
    this.running = false
    this.shuttingDown = false
    this.processed = 0
    this.failed = 0
    this.failuresSinceLog = 0
    this.lastFailureLog = 0
    this.idleWaiters = []
  }

  /** A pino-like logger whose records go to the master's logger. */
  createLogger () {
    const logger = { level: 'info', child: () => logger }
    for (const level of LEVELS) logger[level] = (fields, msg) => this.log(level, fields, msg)
    return logger
  }

  log (level, fields, msg) {
    if (typeof fields === 'string') [fields, msg] = [{}, fields]
    if (fields && fields.err instanceof Error) fields = { ...fields, err: { message: fields.err.message, code: fields.err.code, stack: fields.err.stack } }
    this.send([ipc.LOG, level, fields || {}, msg])
  }

  send (message, cb) {
    if (!this.channel.connected) return cb && cb()
    this.channel.send(message, cb)
  }

  onMessage (message) {
    if (!Array.isArray(message)) return
    switch (message[0]) {
      case ipc.BATCH: return this.enqueue(message)
      case ipc.STATS_REQ: return this.replyStats(message[1])
      case ipc.ROLE: return this.setLeader(Boolean(message[1] && message[1].leader))
      case ipc.SHUTDOWN: return this.shutdown()
    }
  }

  enqueue (batch) {
    this.queue.push(batch)
    if (!this.running) this.run()
  }

  async run () {
    this.running = true
    while (this.queue.length > 0) {
      const [, kind, bytes] = this.queue.shift()
      const processedBefore = this.processed
      const failedBefore = this.failed
      const reader = new BatchReader(bytes, kind)
      for (let message = reader.next(); message !== null; message = reader.next()) {
        const pending = this.process(message)
        if (pending) await pending
      }
      this.send([ipc.ACK, this.processed - processedBefore, this.failed - failedBefore])
    }
    this.running = false
    for (const resolve of this.idleWaiters.splice(0)) resolve()
  }

  // A synchronous doWork stays synchronous; a returned promise is awaited
  // before the next message, so messages are processed one at a time, in order.
  process (message) {
    let result
    try {
      result = this.worker.doWork(message)
    } catch (err) {
      this.fail(err)
      return null
    }
    if (result && typeof result.then === 'function') {
      return result.then(() => { this.processed++ }, (err) => this.fail(err))
    }
    this.processed++
    return null
  }

  fail (err) {
    this.failed++
    this.failuresSinceLog++
    const now = Date.now()
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) return
    this.log('error', { err, failures: this.failuresSinceLog }, 'doWork failed')
    this.lastFailureLog = now
    this.failuresSinceLog = 0
  }

  async replyStats (requestId) {
    let custom = null
    try {
      custom = await this.worker.stats()
    } catch (err) {
      custom = { error: err.message }
    }
    this.send([ipc.STATS_RES, requestId, { processed: this.processed, failed: this.failed, ...custom }])
  }

  setLeader (isLeader) {
    this.worker.leader = isLeader
    try {
      const result = this.worker.onLeader(isLeader)
      if (result && typeof result.catch === 'function') result.catch((err) => this.log('error', { err }, 'onLeader failed'))
    } catch (err) {
      this.log('error', { err }, 'onLeader failed')
    }
  }

  idle () {
    if (!this.running && this.queue.length === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Finish everything received, flush, close, report CLOSED, exit. */
  async shutdown () {
    if (this.shuttingDown) return
    this.shuttingDown = true
    await this.idle()
    await this.step('flush')
    await this.step('close')
    this.send([ipc.CLOSED], () => process.exit(0))
  }

  async step (name) {
    try {
      await this.worker[name]()
    } catch (err) {
      this.log('error', { err }, `${name}() failed`)
    }
  }
}

module.exports = WorkerRuntime
