'use strict'

const EventEmitter = require('node:events')
const protocols = require('../protocols')
const Backoff = require('../shared/backoff')
const ListenError = require('../../exceptions/listen-error')
const { briefError } = require('../shared/logger')
const WorkerPool = require('./worker-pool')
const { strategies, keyHash, entryStrategy, entryKeyHash } = require('./distribution')
const { normalizeOptions } = require('./options')
const { remoteOf, entryEnd, entryDataLength, entryAddressStart, entryAddressLength, datagramAt } = require('../shared/batch-codec')
const { AllowList } = require('../shared/allow-list')
const LogLimiter = require('../shared/log-limiter')
const { MasterCounters, totalDropped } = require('./counters')
const { Journal } = require('./journal')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { claimPort, listenSpec, workersListener } = require('./reuseport')

// Unacknowledged messages older than this are worth a warning (at most one
// per interval): the workers' database has stalled or falls behind.
const STALL_WARN_MS = 5000
// Sources refused by `allow` are logged at most once per LogLimiter interval, per kind.
const NOT_ALLOWED_LINES = {
  datagram: 'datagrams from a source not in allow are dropped (dropped.notAllowed)',
  connection: 'connections from a source not in allow are closed at accept (eventReasons.connectionsRejected.notAllowed)'
}

/**
 * The master of a collector: receives on one socket (a registered protocol),
 * distributes every message to forked workers in batches, and supervises
 * them.
 *
 * For subclasses: override `distribute(workers, message)` or `key(message)`
 * (a string is hashed, an integer mixed); a `key` of your own may come
 * with `entryKey(buf, offset)`, the same key read from the batch entry
 * at `offset` (lib/shared/batch-codec.js), so that the native receive path
 * need not build a message per datagram;
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
    this.backoff = new Backoff({ initial: this.options.retryDelay })
    this.pool = null
    this.listener = null
    // Kernel drops of listeners closed before the current one (each socket counts from 0).
    this.kernelDropsBefore = 0
    this.state = 'idle' // → starting → running → stopping → stopped
    this.startedAt = 0
    this.restartTimer = null
    this.wakeRetry = null
    this.stopRequested = false
    this.capacityWaiters = []
    this._rrNext = 0
    this.entryStrategy = null
    this.allowList = this.options.allow ? new AllowList(this.options.allow) : null
    this.notAllowedLog = new LogLimiter()
    this.bufferLog = new LogLimiter()
    this.journal = null
    this.ctx = this._createContext()
    this._checkReuseport()
  }

  // receive 'reuseport': the kernel picks the worker (see options.js checkReceive).
  _checkReuseport () {
    if (this.options.receive !== 'reuseport') return
    for (const method of ['distribute', 'key']) {
      if (this[method] !== LoadBalancer.prototype[method]) throw new InvalidOptionError('receive', 'reuseport', `cannot honour a ${method}() of ${this.constructor.name}: the kernel picks the worker by the sender's address and port, so no affinity across senders (one call's two directions) holds`)
    }
  }

  /** Picks the worker for a message. Round-robin unless `distribution` says otherwise; override freely. */
  distribute (workers, message) {
    return this.strategy(workers, message)
  }

  /** Flow key for `hash` distribution: the source address and port (a string is hashed, an integer mixed). */
  key (message) {
    const remote = remoteOf(message)
    return remote ? `${remote.address}:${remote.port}` : ''
  }

  /** Binds (or connects) once every worker is online. */
  start (cb) {
    return withCallback(this._startOnce(), cb)
  }

  _startOnce () {
    if (this.starting) return this.starting
    this.starting = this.doStart()
    return this.starting
  }

  async doStart () {
    if (this.state !== 'idle') throw new Error(`cannot start a balancer that is ${this.state}`)
    this.state = 'starting'
    this.startedAt = Date.now()
    await this._startMetricsServer()
    this.entryStrategy = this._resolveEntryStrategy()
    let found = null
    try {
      found = this._openBuffer()
      this.pool = this._createPool(await this._reuseportSpec())
      await this.pool.start()
    } catch (err) {
      this._closeBuffer()
      await this._stopMetricsServer()
      this.state = 'stopped'
      throw err
    }
    if (found) this._replay(found)
    try {
      await this._openListener({ first: true })
    } catch (err) {
      await this.pool.stop()
      this._closeBuffer()
      await this._stopMetricsServer()
      this.state = 'stopped'
      throw err
    }
    this.state = 'running'
    this.stallTimer = setInterval(() => this._checkStall(), STALL_WARN_MS)
    this.stallTimer.unref()
    this.logger.info({ name: this.options.name, protocol: this.options.protocol, receiver: this.receiver(), address: this.address(), metrics: this.metricsAddress(), instances: this.options.instances }, 'collector started')
  }

  // Up before the workers, so that /readyz says 503 (not nothing) while starting.
  async _startMetricsServer () {
    const { metricsPort: port, metricsHost: host, name } = this.options
    if (port === undefined) return
    const MetricsServer = require('./metrics-server') // loads prom-client only when asked for
    this.metricsServer = new MetricsServer(this, { host, port, name, webConfig: this.options.metricsWebConfig, logger: this.logger })
    try {
      await this.metricsServer.start()
    } catch (err) {
      this.metricsServer = null
      this.state = 'stopped'
      throw ListenError.isBindError(err) ? new ListenError('http', host, port, err) : err
    }
  }

  async _stopMetricsServer () {
    const server = this.metricsServer
    this.metricsServer = null
    if (server) await server.stop()
  }

  /**
   * Whether the collector can take traffic: the listener bound and every
   * worker slot online. `{ ready, state, listening, workers: { online, expected }, reason? }`.
   */
  readiness () {
    const online = this.pool ? this.pool.rotation.length : 0
    const expected = this.options.instances
    const listening = Boolean(this.listener)
    const ready = this.state === 'running' && listening && online === expected
    const reason = ready
      ? undefined
      : this.state !== 'running' ? `state is ${this.state}` : !listening ? 'listener is not bound (reopening)' : `${online} of ${expected} worker slots online`
    return { ready, state: this.state, listening, workers: { online, expected }, ...(reason ? { reason } : {}) }
  }

  /** Where /metrics, /healthz and /readyz are served, or null (off). */
  metricsAddress () {
    return this.metricsServer ? this.metricsServer.address() : null
  }

  // The disk buffer, when on: opened (and what a previous run left read)
  // before the workers start. Returns what was found, or null.
  _openBuffer () {
    const { buffer, bufferDir: dir, bufferMaxBytes: maxBytes, bufferSync: sync } = this.options
    if (!buffer) return null
    this.journal = new Journal({ dir, maxBytes, sync })
    return this.journal.open()
  }

  _closeBuffer () {
    const journal = this.journal
    if (!journal) return
    journal.close()
    if (journal.messages > 0) this.logger.warn({ dir: journal.dir, messages: journal.messages, bytes: journal.bytes }, `${journal.messages} messages stay in the disk buffer for the next start`)
  }

  /**
   * What a previous run left in the disk buffer goes out before new traffic
   * (the listener opens after this): each origin's batches to one worker,
   * in order, as redeliveries, so the writers recognise what they stored.
   */
  _replay ({ batches, found, damaged }) {
    if (damaged.records > 0) {
      this.counters.damaged(damaged.records, damaged.bytes)
      this.logger.error({ dir: this.journal.dir, records: damaged.records, bytes: damaged.bytes }, `disk buffer: ${damaged.records} damaged records skipped (${damaged.bytes} bytes: cut short by a crash or corrupted); the rest is replayed`)
    }
    if (batches.length === 0) return
    const slots = new Map()
    const workers = this.pool.rotation
    for (const batch of batches) {
      if (!slots.has(batch.origin)) slots.set(batch.origin, workers[slots.size % workers.length])
      slots.get(batch.origin).redeliver(batch)
      this.counters.replayed(batch.count)
    }
    this.logger.warn({ dir: this.journal.dir, ...found }, `disk buffer: replaying ${found.messages} messages left by a previous run (${found.segments} segments, ${found.bytes} bytes); what was stored already is recognised by its key`)
  }

  // receive 'reuseport': the port claimed (ListenError if taken) and what
  // each worker binds; null in master mode.
  async _reuseportSpec () {
    if (this.options.receive !== 'reuseport') return null
    try {
      this.ctx.port = await claimPort(this.ctx.host, this.ctx.port)
    } catch (err) {
      throw ListenError.isBindError(err) ? new ListenError(this.options.protocol, this.ctx.host, this.ctx.port, err) : err
    }
    return listenSpec(this.options, this.ctx.port)
  }

  _createPool (listen) {
    const pool = new WorkerPool(this.options, this.logger, this.journal, listen)
    pool.on('received', (n, bytes, dropped) => this.counters.receivedByWorker(n, bytes, dropped))
    pool.on('capacity', () => this._notifyCapacity())
    pool.on('dropped', (reason, n) => this.counters.droppedAccepted(reason, n))
    pool.on('kept', (n) => this.counters.kept(n))
    pool.on('bufferWriteFailed', (err) => {
      this.counters.event('bufferWriteFailed', err && err.code ? err.code : 'error')
      this.bufferLog.log(this.logger, 'error', 'write', () => ({ error: briefError(err), dir: this.journal.dir }), 'disk buffer write failed: batches are held in memory, not on disk (events.bufferWriteFailed)')
    })
    pool.on('bufferReadFailed', (err) => {
      this.bufferLog.log(this.logger, 'error', 'read', () => ({ error: briefError(err), dir: this.journal.dir }), 'disk buffer read failed: the batch is dropped (dropped.bufferUnreadable)')
    })
    pool.on('workerExit', (info) => {
      this.logger.warn(info, 'worker exited; out of rotation')
      this.emit('workerExit', info)
    })
    pool.on('workerRespawned', (h) => this.emit('workerRespawned', { id: h.id, slot: h.slot, pid: h.pid }))
    pool.on('error', (err) => this.emit('error', err))
    return pool
  }

  // The first bind fails the start on an error a retry cannot fix (port in
  // use, no permission, no such address: ListenError, ERR_LISTEN). Otherwise,
  // with retry on, it is retried with backoff until it works (a reopen after
  // the collector ran, a tcp_client whose server is not up yet).
  async _openListener ({ first = false } = {}) {
    for (;;) {
      try {
        this.listener = this.options.receive === 'reuseport' ? workersListener(this.pool, this.options) : await this.protocol.start(this.ctx)
        this._keepPort()
        this.backoff.reset()
        this.emit('listening', this.address())
        return
      } catch (err) {
        if (first && ListenError.isBindError(err)) throw new ListenError(this.options.protocol, this.ctx.host, this.ctx.port, err)
        if (!this.options.retry || this.stopRequested) throw err
        await this._waitRetry(err)
        if (this.stopRequested) throw err
      }
    }
  }

  _waitRetry (err) {
    const delay = this.backoff.next()
    this.counters.listenerRestarted()
    this.logger.warn({ error: briefError(err), delay }, `listener failed (${err.message}); retrying in ${delay} ms`)
    this.emit('listenerError', err, delay)
    return new Promise((resolve) => {
      this.wakeRetry = resolve
      this.restartTimer = setTimeout(resolve, delay)
    })
  }

  // stop() must not wait out (or forever repeat) a retry delay.
  _cancelRetry () {
    clearTimeout(this.restartTimer)
    if (this.wakeRetry) this.wakeRetry()
    this.wakeRetry = null
  }

  // Port 0 means "any port" only the first time: a listener reopened after
  // an error must come back where senders already send.
  _keepPort () {
    const address = this.ctx.port === 0 && this.address()
    if (address && address.port) this.ctx.port = address.port
  }

  // A running listener broke: close it and open a new one after backoff.
  _onListenerFailure (err) {
    if (this.state !== 'running' || this.restarting) return
    if (!this.options.retry) {
      this.logger.error({ error: briefError(err) }, `listener failed: ${err.message}`)
      return this.emit('error', err)
    }
    this.restarting = this._reopenListener(err).finally(() => { this.restarting = null })
  }

  async _reopenListener (err) {
    await this._closeListener()
    await this._waitRetry(err)
    if (this.state !== 'running' || this.stopRequested) return
    await this._openListener().catch((e) => this.logger.error({ error: briefError(e) }, `listener could not be reopened: ${e.message}`))
  }

  async _closeListener () {
    const listener = this.listener
    this.listener = null
    if (!listener) return
    await listener.close().catch(() => {})
    this.kernelDropsBefore += kernelDropsOf(listener)
  }

  // dropped.kernel as it stands: what closed listeners counted plus the current one's.
  _kernelDrops () {
    return this.kernelDropsBefore + (this.listener ? kernelDropsOf(this.listener) : 0)
  }

  _createContext () {
    const { options, logger } = this
    return {
      host: options.host,
      port: options.port,
      options,
      logger,
      dispatch: (message, force) => this._dispatch(message, force),
      dispatchEntries: (buf, end) => this._dispatchEntries(buf, end),
      drop: (reason) => this.counters.dropped(reason),
      dropRefused: () => this._dropRefused(),
      count: (event, reason) => { this.counters.event(event, reason) },
      allowList: this.allowList,
      logNotAllowed: (kind, address) => this._logNotAllowed(kind, address),
      onCapacity: (fn) => this.capacityWaiters.push(fn),
      fail: (err) => this._onListenerFailure(err)
    }
  }

  /**
   * The hot path: pick a worker, append to its batch, count. Returns false
   * when no worker can take the message, counting nothing: the caller waits
   * (onCapacity) or gives it up with `dropRefused()`. `force` goes past
   * maxInFlight rather than refuse (data already accepted).
   */
  _dispatch (message, force) {
    const worker = this._pick(message, force)
    if (worker === null) return false
    worker.push(message)
    this.counters.accepted(message.data.length)
    return true
  }

  /**
   * The hot path of the native UDP receiver: `buf[0, end)` holds datagrams
   * in batch format. Each goes to its worker as bytes; a message object is
   * built only for a `distribute` or `key` of the user's.
   */
  _dispatchEntries (buf, end) {
    if (this.allowList === null) this._dispatchEntryRun(buf, 0, end)
    else this._dispatchAllowedEntries(buf, end)
  }

  // With `allow`: one lookup per datagram on the address bytes of its entry;
  // runs of allowed entries go on as without, refused ones are counted.
  _dispatchAllowedEntries (buf, end) {
    const allowList = this.allowList
    let run = 0
    let offset = 0
    let refused = -1 // the first refused entry: logged once per batch
    while (offset < end) {
      const next = entryEnd(buf, offset)
      if (!allowList.allowsBytes(buf, entryAddressStart(offset), entryAddressLength(buf, offset))) {
        if (run < offset) this._dispatchEntryRun(buf, run, offset)
        this.counters.dropped('notAllowed')
        if (refused < 0) refused = offset
        run = next
      }
      offset = next
    }
    if (run < end) this._dispatchEntryRun(buf, run, end)
    if (refused >= 0) this._logNotAllowed('datagram', () => buf.latin1Slice(entryAddressStart(refused), entryAddressStart(refused) + entryAddressLength(buf, refused)))
  }

  // Entries buf[offset, end) to their workers.
  _dispatchEntryRun (buf, offset, end) {
    const counters = this.counters
    const strategy = this.entryStrategy
    while (offset < end) {
      const next = entryEnd(buf, offset)
      const worker = strategy === null ? this._pick(datagramAt(buf, offset), false) : this._pickEntry(strategy, buf, offset)
      if (worker === null) {
        this._dropRefused()
      } else {
        worker.pushEntry(buf, offset, next)
        counters.accepted(entryDataLength(buf, offset))
      }
      offset = next
    }
  }

  _pickEntry (strategy, buf, offset) {
    const workers = this.pool.rotation
    if (workers.length === 0) return null
    const worker = strategy(workers, buf, offset)
    if (worker.state === 'ready' && !worker.saturated) return worker
    const open = workers.filter((w) => !w.saturated)
    if (open.length > 0) return strategy(open, buf, offset)
    return this._canBuffer() ? worker : null
  }

  // Every worker is full: with room in the disk buffer, the message goes to
  // the worker chosen for it all the same, and waits in the buffer.
  _canBuffer () {
    return this.journal !== null && !this.journal.full
  }

  // distribute() and key() as this instance has them: built-ins that can
  // choose from a batch entry, or null (build a message per datagram).
  _resolveEntryStrategy () {
    if (this.distribute !== LoadBalancer.prototype.distribute) return null
    if (this.key === LoadBalancer.prototype.key) return entryStrategy(this.strategy, this, entryKeyHash)
    return entryStrategy(this.strategy, this, typeof this.entryKey === 'function' ? (buf, offset) => keyHash(this.entryKey(buf, offset)) : null)
  }

  _pick (message, force) {
    const workers = this.pool.rotation
    if (workers.length === 0) return null
    const worker = this._choose(workers, message)
    if (worker.state === 'ready' && (force || !worker.saturated)) return worker
    const open = workers.filter((w) => !w.saturated)
    if (open.length > 0) return this._choose(open, message)
    if (this._canBuffer()) return worker
    return force ? workers[0] : null
  }

  // distribute() may be the user's: one that throws or answers with
  // something other than one of the workers it was given must not take the
  // master down or lose the message. It is counted and logged (once), and
  // the message goes round-robin.
  _choose (workers, message) {
    let worker
    try {
      worker = this.distribute(workers, message)
    } catch (err) {
      return this._distributeFailed(workers, err)
    }
    if (workers.includes(worker)) return worker
    return this._distributeFailed(workers, new TypeError(`distribute() returned ${worker === null ? 'null' : typeof worker}, not one of the workers it was given`))
  }

  _distributeFailed (workers, err) {
    if (this.counters.event('distributeErrors') === 1) this.logger.error({ err }, 'distribute() failed; messages go round-robin when it does (counted in events.distributeErrors)')
    return strategies['round-robin'].call(this, workers)
  }

  // `address`: the source's text, or a function giving it (built only when the line is written).
  _logNotAllowed (kind, address) {
    const fields = () => ({ remote: typeof address === 'function' ? address() : address })
    this.notAllowedLog.log(this.logger, 'warn', kind, fields, NOT_ALLOWED_LINES[kind])
  }

  /**
   * Counts a message _pick or _pickEntry refused; the one place that says
   * why. With workers up and the disk buffer on, a refusal means the buffer
   * is full (bufferFull); otherwise every worker is saturated, or none is up
   * (queueFull), and the buffer, if on, has nowhere to take it from.
   */
  _dropRefused () {
    this.counters.dropped(this.journal !== null && this.pool.rotation.length > 0 ? 'bufferFull' : 'queueFull')
  }

  _notifyCapacity () {
    if (this.capacityWaiters.length === 0) return
    if (!this._canBuffer() && !this.pool.rotation.some((w) => !w.saturated)) return
    for (const fn of this.capacityWaiters.splice(0)) fn()
  }

  /**
   * Rolling restart: one worker at a time, the new one online before the
   * old one leaves. The listener's files (TLS certificates) are re-read
   * first; open connections are untouched.
   */
  restart (cb) {
    const run = async () => {
      if (this.state !== 'running') throw new Error(`cannot restart a balancer that is ${this.state}`)
      this.logger.info({ instances: this.options.instances }, 'rolling restart')
      this._reloadListener()
      await this._reloadMetricsServer()
      await this.pool.restart()
    }
    return withCallback(run(), cb)
  }

  // A renewed file that cannot be used (unreadable, not PEM, key and
  // certificate apart) leaves the one in use in place: logged and counted
  // (events.listenerReloadFailed), the collector keeps running.
  _reloadListener () {
    if (!this.listener || typeof this.listener.reload !== 'function') return
    try {
      this.listener.reload()
    } catch (err) {
      this.counters.event('listenerReloadFailed')
      this.logger.error({ error: briefError(err) }, `listener files not reloaded, the ones in use stay: ${err.message}`)
    }
  }

  // The metrics endpoint's web config (metricsWebConfig) likewise: one that
  // does not check out leaves the one in use (events.metricsReloadFailed).
  async _reloadMetricsServer () {
    if (!this.metricsServer) return
    try {
      await this.metricsServer.reload()
    } catch (err) {
      this.counters.event('metricsReloadFailed')
      const outcome = err.endpointDown ? 'the endpoint is down until the next restart' : 'the one in use stays'
      this.logger.error({ error: briefError(err) }, `metrics web config not reloaded, ${outcome}: ${err.message}`)
    }
  }

  /** Stop receiving, deliver and process everything received, then stop the workers. Idempotent. */
  stop (cb) {
    if (!this.stopping) this.stopping = this.doStop()
    return withCallback(this.stopping, cb)
  }

  _checkStall () {
    const { oldestUnackedMs, inFlight } = this.pool.snapshot().totals
    if (oldestUnackedMs < STALL_WARN_MS) return
    this.logger.warn({ oldestUnackedMs, inFlight, maxInFlight: this.options.maxInFlight },
      `workers have not acknowledged messages for ${Math.round(oldestUnackedMs / 1000)} s (database stalled or slower than input); the master holds them`)
  }

  async doStop () {
    this.stopRequested = true
    clearInterval(this.stallTimer)
    this._cancelRetry()
    if (this.starting) await this.starting.catch(() => {})
    this.state = 'stopping'
    if (this.restarting) await this.restarting
    await this._closeListener()
    for (const fn of this.capacityWaiters.splice(0)) fn()
    if (this.pool) await this.pool.stop()
    this._closeBuffer()
    await this._stopMetricsServer()
    this.state = 'stopped'
    this.logger.info(this.summary(), 'collector stopped')
    this.emit('stopped')
  }

  /** The UDP receive path in use ('native' or 'dgram'); null for other protocols or when not listening. */
  receiver () {
    return (this.listener && this.listener.receiver) || null
  }

  /** The bound (or connected) address, or null. */
  address () {
    return this.listener ? this.listener.address() : null
  }

  /** Counters, including per-worker ones and each worker's own stats(). */
  /**
   * summary() and every worker's counters, all read at one moment (the
   * parts add up to the totals: Σ workers + retired = processed, failed,
   * dispatched; Σ workers + orphaned = inFlight), with each worker's own
   * stats (`custom`), asked for first and `customAgeMs` old.
   */
  async stats () {
    const customs = this.pool ? await this.pool.collectCustom() : null
    const snapshot = this.pool ? this.pool.snapshot(customs) : null
    const parts = snapshot ? { workers: snapshot.workers, retired: snapshot.retired, orphaned: snapshot.orphaned } : { workers: [], retired: { processed: 0, failed: 0, dispatched: 0 }, orphaned: 0 }
    return { ...this.summary(snapshot), ...parts }
  }

  // The disk buffer's part of the summary; null when it is off.
  _bufferSummary (totals, c) {
    if (!this.options.buffer) return null
    const disk = this.journal ? this.journal.stats() : { dir: this.options.bufferDir, bytes: 0, maxBytes: this.options.bufferMaxBytes, segments: 0, records: 0, messages: 0, sync: this.options.bufferSync, syncs: 0, writeErrors: 0 }
    return { ...disk, full: this.journal ? this.journal.full : false, waiting: totals.buffered, oldestMs: totals.oldestBufferedMs, kept: c.kept, damagedRecords: c.damagedRecords, damagedBytes: c.damagedBytes }
  }

  /** The counters now (no worker stats); `snapshot`: a pool snapshot to take the totals from. */
  summary (snapshot = this.pool ? this.pool.snapshot() : null) {
    const c = this.counters.read()
    const dropped = { ...c.dropped, kernel: this._kernelDrops() }
    const pool = this.pool
    const totals = snapshot ? snapshot.totals : { processed: 0, failed: 0, inFlight: 0, buffered: 0, oldestUnackedMs: 0, oldestBufferedMs: 0 }
    return {
      name: this.options.name,
      protocol: this.options.protocol,
      receiver: this.receiver(),
      state: this.state,
      address: this.address(),
      metrics: this.metricsAddress(),
      uptime: this.startedAt ? Date.now() - this.startedAt : 0,
      instances: this.options.instances,
      received: c.received,
      bytes: c.bytes,
      dispatched: c.dispatched,
      processed: totals.processed,
      failed: totals.failed,
      inFlight: totals.inFlight,
      oldestUnackedMs: totals.oldestUnackedMs,
      replayed: c.replayed,
      buffered: totals.buffered + c.buffer.kept,
      buffer: this._bufferSummary(totals, c.buffer),
      lost: c.dropped.workerLost,
      dropped: { ...dropped, total: totalDropped(dropped) },
      events: c.events,
      eventReasons: c.eventReasons,
      restarts: {
        listener: c.restarts.listener,
        workers: pool ? pool.respawns : 0,
        rolling: pool ? pool.rollingRestarts : 0
      }
    }
  }
}

// A protocol's listener may count kernel drops (UDP does); others have none.
function kernelDropsOf (listener) {
  return typeof listener.kernelDrops === 'function' ? listener.kernelDrops() : 0
}

function withCallback (promise, cb) {
  if (typeof cb === 'function') promise.then((value) => cb(null, value), cb)
  return promise
}

LoadBalancer.protocols = protocols
LoadBalancer.strategies = strategies

module.exports = LoadBalancer
