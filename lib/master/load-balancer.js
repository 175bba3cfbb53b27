'use strict'

const EventEmitter = require('node:events')
const protocols = require('../protocols')
const WorkerPool = require('./worker-pool')
const { strategies } = require('./distribution')
const { normalizeOptions } = require('./options')
const { remoteOf } = require('../shared/batch-codec')
const { MasterCounters } = require('./counters')
const { checkChoices, claimListen, workersListener } = require('./reuseport')
const { Dispatcher } = require('./dispatcher')
const ListenerSupervisor = require('./listener-supervisor')
const Backlog = require('./backlog')
const { summarize, collectStats, readinessOf, warnIfStalled, STALL_WARN_MS } = require('./summary')
const MetricsEndpoint = require('./metrics-endpoint')

/**
 * The master of a collector: receives on one socket (a registered protocol),
 * distributes every message to forked workers in batches, and supervises
 * them. It keeps the lifecycle and composes the parts, one concern each:
 * the dispatcher (the hot path: worker choice, refusals, allow),
 * the listener supervisor (open, retry, reopen, kernel drops), the backlog
 * (the disk buffer's open, replay and close), the worker pool, the metrics
 * server and the summary.
 *
 * For subclasses: override `distribute(workers, message)` or `key(message)`
 * (a string is hashed, an integer mixed); a `key` of your own may come
 * with `entryKey(buf, offset)`, the same key read from the batch entry
 * at `offset` (lib/shared/batch-codec.js), so that the native receive path
 * need not build a message per datagram (which of these the native path
 * can use without a message per datagram is decided in one place,
 * dispatcher.js entryPlan, and logged at start as `dispatch`);
 * define `parts(buf, start, end)` to split a message (its bytes
 * `buf[start, end)`) into parts distributed and counted each on its own,
 * the sender's and arrival shared: null keeps it whole (lib/master/split.js);
 * override `destination()` to say what the workers write to (the disk
 * buffer and the dead letters record it, see docs/disk-buffer.md);
 * extend `doStart()` (runs once per start: `await super.doStart()` binds and
 * forks, so prepare what the workers need before it) and `doStop()` (drains;
 * release what doStart acquired after `await super.doStop()`); declare extra
 * option keys in `static optionKeys`. Methods starting with `_` are internal.
 *
 * Events: 'listening' (address), 'listenerError' (error, delay), 'error'
 * (only when retry is off or every worker is down), 'workerExit' (info),
 * 'workerRespawned' ({ id, slot, pid }), 'stopped'.
 */
class LoadBalancer extends EventEmitter {
  /**
   * Option keys a subclass accepts beyond LoadBalancer's own (any other
   * key is refused as a likely typo): `static optionKeys = [...super.optionKeys, 'mine']`.
   * Keys of a parsed config object are accepted by themselves.
   */
  static optionKeys = []

  /** @param {object} options see docs/options.md; a parsed config object works too */
  constructor (options = {}) {
    super()
    this.options = normalizeOptions(options, new.target.optionKeys)
    this.logger = this.options.logger
    this.protocol = protocols.get(this.options.protocol)
    this.strategy = typeof this.options.distribution === 'function' ? this.options.distribution : strategies[this.options.distribution]
    this.counters = new MasterCounters()
    this.pool = null
    this.journal = null
    this.deadLetters = null
    this.state = 'idle' // → starting → running → stopping → stopped
    this.startedAt = 0
    this._rrNext = 0
    // Each part is given what it uses of the balancer, no more.
    const parts = { options: this.options, counters: this.counters, logger: this.logger }
    this.dispatcher = new Dispatcher({
      ...parts,
      strategy: this.strategy,
      name: this.constructor.name,
      distribute: (workers, message) => this.distribute(workers, message),
      entryKey: (buf, offset) => this.entryKey(buf, offset),
      parts: typeof this.parts === 'function' ? (buf, start, end) => this.parts(buf, start, end) : null,
      pool: () => this.pool,
      journal: () => this.journal,
      balancer: this // the `this` of a distribution strategy (DistributeFn)
    })
    this.ctx = this.dispatcher.protocolContext((err) => this.supervisor.fail(err))
    this.supervisor = new ListenerSupervisor({
      ...parts,
      ctx: this.ctx,
      open: () => this.options.receive === 'reuseport' ? workersListener(this.pool, this.options) : this.protocol.start(this.ctx),
      isRunning: () => this.state === 'running',
      emit: (event, ...args) => this.emit(event, ...args)
    })
    this.backlog = new Backlog(parts)
    this.metrics = new MetricsEndpoint(this, parts)
    if (this.options.receive === 'reuseport') checkChoices(this._declared(), this.constructor.name)
  }

  /** Picks the worker for a message. Round-robin unless `distribution` says otherwise; override freely. */
  distribute (workers, message) {
    return this.strategy(workers, message)
  }

  /**
   * What the workers write to, without credentials (a MongoCollector:
   * its database's hosts and name), or null when the balancer cannot say.
   * Recorded with the disk buffer and each dead letter, so that neither is
   * replayed into another destination by a later run of the same name.
   * Called once per start, before the workers fork.
   */
  destination () {
    return null
  }

  /** Flow key for `hash` distribution: the source address and port (a string is hashed, an integer mixed). */
  key (message) {
    const remote = remoteOf(message)
    return remote ? `${remote.address}:${remote.port}` : ''
  }

  // What this balancer declares by overriding LoadBalancer's extension
  // points, the one place that reads it: the dispatcher chooses the native
  // path's entry plan from it, and receive 'reuseport' refuses a choice of its own.
  _declared () {
    return {
      distribute: this.distribute !== LoadBalancer.prototype.distribute,
      key: this.key !== LoadBalancer.prototype.key,
      entryKey: typeof this.entryKey === 'function',
      parts: typeof this.parts === 'function'
    }
  }

  /** The listener in use, or null (closed, or reopening after an error). */
  get listener () {
    return this.supervisor.listener
  }

  /** Binds (or connects) once every worker is online. */
  start (cb) {
    // A balancer runs once: a start after stop() is refused, not the first start's promise again.
    if (this.state === 'stopping' || this.state === 'stopped') return withCallback(Promise.reject(new Error(`cannot start a balancer that is ${this.state}: make a new one`)), cb)
    if (!this.starting) this.starting = this.doStart()
    return withCallback(this.starting, cb)
  }

  async doStart () {
    if (this.state !== 'idle') throw new Error(`cannot start a balancer that is ${this.state}: make a new one`)
    this.state = 'starting'
    this.startedAt = Date.now()
    try {
      await this.metrics.start()
    } catch (err) {
      this.state = 'stopped'
      throw err
    }
    this.dispatcher.prepare(this._declared())
    let found = null
    try {
      const destination = this.destination()
      this.journal = this.backlog.create(destination)
      found = this.journal ? this.journal.open() : null
      this.deadLetters = this.backlog.deadLetters(destination)
      // receive 'reuseport': what each worker binds; null in master mode.
      this.pool = this._createPool(this.options.receive === 'reuseport' ? await claimListen(this.ctx, this.options) : null)
      await this.pool.start()
    } catch (err) {
      await this._abortStart()
      throw err
    }
    if (found) this.backlog.replay(this.journal, this.pool.rotation, found)
    this.backlog.replayDeadLetters(this.deadLetters, this.journal, this.pool.rotation)
    try {
      await this.supervisor.open({ first: true })
    } catch (err) {
      await this.pool.stop()
      await this._abortStart()
      throw err
    }
    this.state = 'running'
    this.stallTimer = setInterval(() => warnIfStalled(this), STALL_WARN_MS)
    this.stallTimer.unref()
    this.logger.info({ name: this.options.name, protocol: this.options.protocol, receiver: this.receiver(), address: this.address(), metrics: this.metricsAddress(), instances: this.options.instances, ...this._dispatchNote() }, 'collector started')
  }

  // Whether the native receive path builds a message per datagram, and why (dispatcher.js entryPlan).
  _dispatchNote () {
    return this.receiver() === 'native' ? { dispatch: this.dispatcher.plan.describe } : {}
  }

  async _abortStart () {
    this.backlog.close(this.journal)
    await this.metrics.stop()
    this.state = 'stopped'
  }

  /**
   * Whether the collector can take traffic: the listener bound and every
   * worker slot online. `{ ready, state, listening, workers: { online, expected }, reason? }`.
   */
  readiness () {
    return readinessOf(this)
  }

  /** Where /metrics, /healthz and /readyz are served, or null (off). */
  metricsAddress () {
    return this.metrics.address()
  }

  _createPool (listen) {
    const pool = new WorkerPool(this.options, this.logger, this.journal, listen, this.deadLetters)
    pool.on('received', (n, bytes, dropped) => this.counters.receivedByWorker(n, bytes, dropped))
    pool.on('capacity', () => this.dispatcher.notifyCapacity())
    pool.on('dropped', (reason, n) => this.counters.droppedAccepted(reason, n))
    this.backlog.watch(pool, this.journal)
    pool.on('workerExit', (info) => {
      // A worker asked to stop (rolling restart, stop) that left messages unstored: another takes them, or the stop keeps them.
      // One that never started is the start's failure, said by it.
      if (!info.started) this.logger.debug(info, 'worker exited before it was ready')
      else if (info.expected) this.logger.info(info, `worker stopped before storing ${info.held} messages: ${pool.state === 'running' ? 'the slot\'s next worker takes them' : 'kept by the stop (disk buffer or dead letters)'}`)
      else this.logger.warn(info, 'worker exited; out of rotation')
      this.emit('workerExit', info)
    })
    pool.on('workerRespawned', (h) => this.emit('workerRespawned', { id: h.id, slot: h.slot, pid: h.pid }))
    pool.on('error', (err) => this.emit('error', err))
    return pool
  }

  /**
   * Rolling restart: one worker at a time, the new one online before the
   * old one leaves. The listener's files (TLS certificates) are re-read
   * first; open connections are untouched. Then the dead letters queued
   * for replay (`collector replay`) are delivered.
   */
  restart (cb) {
    const run = async () => {
      if (this.state !== 'running') throw new Error(`cannot restart a balancer that is ${this.state}`)
      this.logger.info({ instances: this.options.instances }, 'rolling restart')
      this.supervisor.reload()
      await this.metrics.reload()
      await this.pool.restart()
      // The new workers may run fixed code: dead letters queued for replay go now.
      this.backlog.replayDeadLetters(this.deadLetters, this.journal, this.pool.rotation)
    }
    return withCallback(run(), cb)
  }

  /** Stop receiving, deliver and process everything received, then stop the workers. Idempotent. */
  stop (cb) {
    if (!this.stopping) this.stopping = this.doStop()
    return withCallback(this.stopping, cb)
  }

  async doStop () {
    this.supervisor.requestStop()
    clearInterval(this.stallTimer)
    if (this.starting) await this.starting.catch(() => {})
    this.state = 'stopping'
    await this.supervisor.shutdown()
    this.dispatcher.releaseWaiters()
    if (this.pool) await this.pool.stop()
    this.backlog.close(this.journal)
    await this.metrics.stop()
    this.state = 'stopped'
    this.logger.info(this.summary(), 'collector stopped')
    this.emit('stopped')
  }

  /** The UDP receive path in use ('native' or 'dgram'); null for other protocols or when not listening. */
  receiver () {
    return this.supervisor.receiver()
  }

  /** The bound (or connected) address, or null. */
  address () {
    return this.supervisor.address()
  }

  /**
   * summary() and every worker's counters, all read at one moment (the
   * parts add up to the totals: Σ workers + retired = processed, failed,
   * dispatched; Σ workers + orphaned = inFlight), with each worker's own
   * stats (`custom`), asked for first and `customAgeMs` old.
   */
  stats () {
    return collectStats(this)
  }

  /** The counters now (no worker stats); `snapshot`: a pool snapshot to take the totals from. */
  summary (snapshot = this.pool ? this.pool.snapshot() : null) {
    return summarize(this, snapshot)
  }
}

function withCallback (promise, cb) {
  if (typeof cb === 'function') promise.then((value) => cb(null, value), cb)
  return promise
}

LoadBalancer.protocols = protocols
LoadBalancer.strategies = strategies

module.exports = LoadBalancer
