'use strict'

const { workerStats, storageOf } = require('../shared/worker-stats')
const http = require('node:http')
const https = require('node:https')
const client = require('prom-client')
const { loadWebConfig, CLIENT_AUTH } = require('./web-config')
const { BasicAuth } = require('./basic-auth')
const { createNoopLogger } = require('../shared/logger')
const LogLimiter = require('../shared/log-limiter')
const { isLoopback } = require('../shared/loopback')
const ListenError = require('../../exceptions/listen-error')

// Refusals are counted each, and logged at most once per interval and reason.
const REJECT_REASONS = Object.freeze({
  noCredentials: 'no basic auth credentials',
  wrongCredentials: 'wrong user name or password',
  authBusy: 'too many password checks pending',
  tls: 'TLS handshake failed',
  clientCertificate: 'client certificate missing or not valid'
})

// What every response (each path and status, a refusal too) lets a
// browser do with it: run no script, load and submit nothing, sit in no
// frame, guess no other type, send no referrer. An endpoint that serves a
// page adds what its page needs (contentSecurity: the calls view's style).
const CSP_BASE = Object.freeze({ 'default-src': "'none'", 'base-uri': "'none'", 'form-action': "'none'", 'frame-ancestors': "'none'" })

/** The security headers of every response, with `contentSecurity`'s CSP directives added. */
function securityHeaders (contentSecurity = {}) {
  const policy = { ...CSP_BASE, ...contentSecurity }
  return Object.freeze({
    'content-security-policy': Object.entries(policy).map(([directive, value]) => `${directive} ${value}`).join('; '),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY' // frame-ancestors for browsers without CSP 2
  })
}

/**
 * The master's HTTP endpoints for operations (off unless `metricsPort` is
 * set): `/metrics` in the Prometheus text format (prom-client; the
 * balancer's counters, per-worker series labelled by slot, the workers' own
 * database counters, and the master's Node process metrics), `/healthz`
 * (200 while the process runs) and `/readyz` (200 while the listener is
 * bound and every worker slot is online, else 503 with a JSON reason).
 * Everything is read from the balancer when scraped: no second set of
 * counters to drift.
 *
 * With a web config (`metricsWebConfig`, the Prometheus exporter toolkit's
 * format: web-config.js) it serves HTTPS and asks for basic auth, on every
 * path as the toolkit does; `reload()` re-reads the file.
 */
class MetricsServer {
  /**
   * @param {object|null} balancer a LoadBalancer (summary(), stats(), readiness()); null for an endpoint of another kind (`route`)
   * @param {{ host: string, port: number, name: string, webConfig?: string, logger?: object, contentSecurity?: Object<string, string>, route?: Function }} options
   *   webConfig: path of the web config file (TLS, basic auth), or none;
   *   contentSecurity: CSP directives a page needs beyond none (securityHeaders);
   *   route: `(path, req, res)` serves an authorized GET or HEAD instead of
   *   /metrics, /healthz and /readyz (`collector calls --serve`: the same
   *   binding, TLS, basic auth, refusal counting and headers, its own pages;
   *   reply() writes a response)
   */
  constructor (balancer, { host, port, name, webConfig, logger, contentSecurity, route = null }) {
    this.balancer = balancer
    this.route = route
    this.headers = securityHeaders(contentSecurity)
    this.host = host
    this.port = port
    this.name = name
    this.webConfigFile = webConfig || null
    this.web = null
    this.auth = null
    this.logger = logger || createNoopLogger()
    this.rejectLog = new LogLimiter()
    this.registry = new client.Registry()
    this.registry.setDefaultLabels({ collector: name })
    if (balancer) {
      client.collectDefaultMetrics({ register: this.registry })
      this._defineMetrics()
    }
    this.rejected = new client.Counter({
      name: 'collector_metrics_requests_rejected_total',
      help: 'Requests and connections the metrics endpoint refused (web config: TLS, basic auth), by reason.',
      labelNames: ['reason'],
      registers: [this.registry]
    })
    this.server = null // null while stopped, or down after a failed rebind (reload)
    this.started = false
  }

  async start () {
    this.web = this.webConfigFile ? loadWebConfig(this.webConfigFile) : null
    this._applyUsers()
    await this._bind(this.web && this.web.tls)
    this.port = this.server.address().port // a rebind (reload) comes back here
    this.started = true
    this._warnIfExposed()
    return this.address()
  }

  /**
   * Re-reads the web config (LoadBalancer.restart()). A file that does not
   * check out throws WebConfigError and changes nothing. New certificates
   * and users apply at once (to new connections); TLS turned on or off, or
   * another client_auth_type, rebinds the port (see _rebind).
   */
  async reload () {
    if (!this.webConfigFile || !this.started) return
    const web = loadWebConfig(this.webConfigFile)
    const before = this.web.tls
    if (this.server && (before ? web.tls && before.clientAuth === web.tls.clientAuth : !web.tls)) {
      if (web.tls) this.server.setSecureContext(contextOptions(web.tls))
    } else {
      await this._rebind(web)
    }
    this.web = web
    this._applyUsers()
    this.logger.info({ webConfig: web.file, tls: Boolean(web.tls), users: web.users.size }, 'metrics endpoint: web config reloaded')
    this._warnIfExposed()
  }

  // A new server on the same port. Should the port be taken between the
  // close and the bind, the config in use is bound again and ListenError
  // thrown; if that fails too, the endpoint is down (address() null) until
  // a reload binds it, and says so. Also the way back up once down.
  async _rebind (web) {
    await this._closeServer()
    try {
      await this._bind(web.tls)
    } catch (err) {
      const failed = new ListenError(web.tls ? 'https' : 'http', this.host, this.port, err)
      const again = await this._bind(this.web.tls).then(() => null, (e) => e)
      if (!again) throw failed
      failed.endpointDown = true
      this.logger.error({ error: failed.message, previous: again.code || again.message }, `metrics endpoint is down: ${failed.message}, and the web config in use could not be bound again either (${again.code || again.message}); /metrics, /healthz and /readyz are not served until a restart binds the port`)
      throw failed
    }
  }

  // this.server is set only once bound: while it is null, address() is null.
  async _bind (tls) {
    const server = this._createServer(tls)
    await listen(server, this.port, this.host)
    this.server = server
  }

  _createServer (tls) {
    const handler = (req, res) => this._handle(req, res)
    if (!tls) return http.createServer(handler)
    const policy = CLIENT_AUTH[tls.clientAuth]
    const server = https.createServer({ ...contextOptions(tls), requestCert: policy.requestCert, rejectUnauthorized: policy.rejectUnauthorized }, handler)
    server.on('secureConnection', (socket) => {
      if (clientCertificateAccepted(policy.check, socket)) return
      this._reject('clientCertificate', socket.remoteAddress, socket.authorizationError && String(socket.authorizationError))
      socket.destroy()
    })
    // A plaintext client, an unknown or expired client certificate, an old protocol version.
    server.on('tlsClientError', (err, socket) => {
      this._reject('tls', socket.remoteAddress, err.code || err.message)
      socket.destroy()
    })
    return server
  }

  _applyUsers () {
    const users = this.web ? this.web.users : new Map()
    if (users.size === 0) {
      if (this.auth) this.auth.close()
      this.auth = null
    } else if (this.auth) {
      this.auth.setUsers(users)
    } else {
      this.auth = new BasicAuth(users)
    }
  }

  // Bound beyond loopback without TLS and passwords: said at start and after each reload.
  _warnIfExposed () {
    if (!this.server || isLoopback(this.host)) return
    const missing = [!(this.web && this.web.tls) && 'TLS', !this.auth && 'basic auth'].filter(Boolean)
    if (missing.length === 0) return
    this.logger.warn({ metrics: this.address(), webConfig: this.webConfigFile }, `metrics endpoint on ${this.host} has no ${missing.join(' and ')}: anyone who reaches port ${this.port} can read it${this.auth ? ', and passwords cross the network in the clear' : ''} (see metricsWebConfig)`)
  }

  _reject (reason, peer, detail) {
    this.rejected.inc({ reason })
    this.rejectLog.log(this.logger, 'warn', reason, { reason, peer, detail }, `metrics endpoint refused ${peer}: ${REJECT_REASONS[reason]}${detail ? ` (${detail})` : ''}`)
  }

  // true to serve the request; otherwise it is answered 401 (or 429) here.
  async _authorized (req, res) {
    const verdict = await this.auth.check(req.headers.authorization, req.socket.remoteAddress)
    if (verdict === 'ok') return true
    if (verdict === 'busy') {
      this._reject('authBusy', req.socket.remoteAddress)
      res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '1', 'cache-control': 'no-store' })
      res.end('too many password checks pending; retry\n')
      return false
    }
    this._reject(verdict === 'missing' ? 'noCredentials' : 'wrongCredentials', req.socket.remoteAddress)
    res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': `Basic realm="collector ${this.name}", charset="UTF-8"`, 'cache-control': 'no-store' })
    res.end('unauthorized\n')
    return false
  }

  address () {
    return this.server ? this.server.address() : null
  }

  async stop () {
    this.started = false
    await this._closeServer()
    if (this.auth) await this.auth.close()
    this.auth = null
  }

  async _closeServer () {
    const server = this.server
    this.server = null
    if (!server) return
    server.closeAllConnections()
    await new Promise((resolve) => server.close(() => resolve()))
  }

  async _handle (req, res) {
    const path = (req.url || '/').split('?')[0]
    for (const [name, value] of Object.entries(this.headers)) res.setHeader(name, value)
    try {
      if (this.auth && !(await this._authorized(req, res))) return
      if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, 'text/plain', 'method not allowed\n')
      return await (this.route ? this.route(path, req, res) : this._route(path, req, res))
    } catch (err) {
      return reply(res, 500, 'text/plain', `${err.message}\n`)
    }
  }

  // An authorized GET or HEAD of `path` (or the `route` given).
  async _route (path, req, res) {
    if (path === '/metrics') return reply(res, 200, this.registry.contentType, await this.registry.metrics())
    if (path === '/healthz') return reply(res, 200, 'application/json', JSON.stringify({ status: 'ok' }) + '\n')
    if (path === '/readyz') {
      const ready = this.balancer.readiness()
      return reply(res, ready.ready ? 200 : 503, 'application/json', JSON.stringify(ready) + '\n')
    }
    return reply(res, 404, 'text/plain', 'not found: try /metrics, /healthz or /readyz\n')
  }

  _defineMetrics () {
    const register = [this.registry]
    const lb = this.balancer
    const total = (name, help, read, labelNames = []) => new client.Counter({
      name, help, labelNames, registers: register,
      async collect () { this.reset(); for (const [labels, value] of await read()) this.inc(labels, value) }
    })
    const gauge = (name, help, read, labelNames = []) => new client.Gauge({
      name, help, labelNames, registers: register,
      async collect () { this.reset(); for (const [labels, value] of await read()) this.set(labels, value) }
    })
    // One stats() per scrape, shared by every series: the totals and the
    // per-worker series of one scrape are one moment's (they add up).
    let scrape = null
    const stats = () => {
      if (!scrape) scrape = lb.stats().finally(() => setImmediate(() => { scrape = null }))
      return scrape
    }
    defineBalancerSeries({ total, gauge }, stats, lb)
    // The buffer is on or off for the balancer's life: when off, no series
    // at all (an unlabelled series would read 0, as if it were on and empty).
    if (lb.summary().buffer !== null) defineBufferSeries({ total, gauge }, stats)
    defineWorkerSeries({ total, gauge }, stats)
    defineStorageSeries({ total, gauge }, stats)
  }
}

// The balancer's own series: what the master received, handed out and lost.
function defineBalancerSeries ({ total, gauge }, stats, lb) {
  const one = (read) => async () => [[{}, read(await stats())]]
  total('collector_messages_received_total', 'Messages received by the master (datagrams, TCP frames).', one((s) => s.received))
  total('collector_bytes_received_total', 'Bytes of the messages received.', one((s) => s.bytes))
  total('collector_messages_processed_total', 'Messages acknowledged by the workers (stored, for the MongoDB workers).', one((s) => s.processed))
  total('collector_messages_failed_total', 'Messages whose doWork failed.', one((s) => s.failed))
  total('collector_messages_dropped_total', 'Messages dropped, by reason (kernel: lost in the receive buffer).',
    async () => Object.entries((await stats()).dropped).filter(([reason]) => reason !== 'total').map(([reason, n]) => [{ reason }, n]), ['reason'])
  total('collector_events_total', 'Listener events (connections, connectionsRejected, connectionsEvicted, tlsRejected, idleTimeouts, frameTimeouts, …), by reason where they have one.',
    async () => eventSeries(await stats()), ['event', 'reason'])
  gauge('collector_messages_in_flight', 'Messages handed to workers and not yet acknowledged.', one((s) => s.inFlight))
  gauge('collector_oldest_unacknowledged_seconds', 'Age of the oldest unacknowledged batch (a stalled database shows here).', one((s) => s.oldestUnackedMs / 1000))
  total('collector_worker_restarts_total', 'Workers respawned after they died.', one((s) => s.restarts.workers))
  total('collector_listener_restarts_total', 'Listener restarts after socket errors.', one((s) => s.restarts.listener))
  gauge('collector_ready', '1 while the listener is bound and every worker slot is online.', async () => [[{}, lb.readiness().ready ? 1 : 0]])
}

// The disk buffer (summary.buffer): what waits in it, its size against its
// bound, and what a start found there. Its drops are dropped{reason="bufferFull"}.
function defineBufferSeries ({ total, gauge }, stats) {
  const one = (read) => async () => [[{}, read(await stats())]]
  gauge('collector_messages_buffered', 'Messages waiting in the disk buffer for room at a worker, plus after a stop those left there for the next start.', one((s) => s.buffered))
  gauge('collector_oldest_buffered_seconds', 'Age of the oldest message waiting in the disk buffer (0 when none waits).', one((s) => s.buffer.oldestMs / 1000))
  total('collector_messages_replayed_total', 'Messages a previous run left in the disk buffer, delivered by this one.', one((s) => s.replayed))
  gauge('collector_buffer_bytes', 'Bytes of the disk buffer\'s segment files.', one((s) => s.buffer.bytes))
  gauge('collector_buffer_max_bytes', 'The disk buffer\'s bound (bufferMaxBytes): at it, new messages are dropped (reason bufferFull).', one((s) => s.buffer.maxBytes))
  gauge('collector_buffer_segments', 'Segment files in the disk buffer.', one((s) => s.buffer.segments))
  gauge('collector_buffer_full', '1 while the disk buffer is at its bound (new messages dropped, TCP senders paused).', one((s) => Number(s.buffer.full)))
  total('collector_buffer_damaged_records_total', 'Damaged records (cut short by a crash, or corrupted) skipped when the disk buffer was opened.', one((s) => s.buffer.damagedRecords))
  total('collector_buffer_damaged_bytes_total', 'Bytes of the damaged records skipped when the disk buffer was opened.', one((s) => s.buffer.damagedBytes))
  total('collector_buffer_kept_messages_total', 'Messages left in the disk buffer for the next start by a stop (the database was away).', one((s) => s.buffer.kept))
  total('collector_buffer_syncs_total', 'fdatasync calls on the disk buffer (bufferSync interval or batch).', one((s) => s.buffer.syncs))
  total('collector_buffer_write_errors_total', 'Disk buffer writes and syncs that failed (batches then held in memory only; events.bufferWriteFailed by errno).', one((s) => s.buffer.writeErrors))
}

// Per worker slot: the workers' acknowledgements and what they report of
// themselves (database counters, per-sender state); a slot without a
// figure has no series.
function defineWorkerSeries ({ total, gauge }, stats) {
  const perWorker = (read) => async () => (await stats()).workers.map((w) => [{ slot: String(w.slot) }, read(w)]).filter(([, v]) => Number.isFinite(v))
  const perWorkerMap = (field) => async () => (await stats()).workers.flatMap((w) => Object.entries(workerStats(w.custom)[field] || {})
    .filter(([, v]) => Number.isFinite(v)).map(([map, v]) => [{ slot: String(w.slot), map }, v]))
  total('collector_worker_messages_processed_total', 'Messages acknowledged, per worker slot (resets when a slot\'s worker is replaced).', perWorker((w) => w.processed), ['slot'])
  gauge('collector_worker_messages_in_flight', 'Messages in flight, per worker slot.', perWorker((w) => w.inFlight), ['slot'])
  total('collector_worker_db_writes_total', 'Database write operations, per worker slot (workers that report dbWrites).', perWorker((w) => workerStats(w.custom).dbWrites), ['slot'])
  total('collector_worker_db_errors_total', 'Database errors, per worker slot.', perWorker((w) => workerStats(w.custom).dbErrors), ['slot'])
  gauge('collector_worker_db_down', '1 while a worker cannot reach its database.', perWorker((w) => { const { dbDown } = workerStats(w.custom); return dbDown === undefined ? undefined : Number(dbDown) }), ['slot'])
  total('collector_worker_state_evicted_total', 'Per-sender state forgotten over its bound, per worker slot and map (workers that report evicted).', perWorkerMap('evicted'), ['slot', 'map'])
  gauge('collector_worker_state_held', 'Per-sender state held, per worker slot and map (keys; bounded, see docs/call-quality.md, Memory).', perWorkerMap('held'), ['slot', 'map'])
}

// What the collector's collections hold, keep and deleted, as the leader
// worker measured them (docs/storage.md, Capacity); no series before it
// measured, nor for a figure it does not know (no budget: no days left).
function defineStorageSeries ({ total, gauge }, stats) {
  const perCollection = (read) => async () => {
    const storage = storageOf(await stats())
    if (!storage) return []
    return Object.entries(storage.collections).map(([collection, c]) => [{ collection }, read(c)]).filter(([, v]) => Number.isFinite(v))
  }
  const one = (read) => async () => {
    const storage = storageOf(await stats())
    const value = storage ? read(storage) : undefined
    return Number.isFinite(value) ? [[{}, value]] : []
  }
  gauge('collector_storage_documents', 'Documents per collection the collector writes.', perCollection((c) => c.documents), ['collection'])
  gauge('collector_storage_data_bytes', 'Data bytes per collection: on disk where the server reports it (MongoDB, compressed), else the documents\' BSON size.', perCollection((c) => c.dataBytes), ['collection'])
  gauge('collector_storage_index_bytes', 'Index bytes per collection (estimated where the server does not report them).', perCollection((c) => c.indexBytes), ['collection'])
  gauge('collector_storage_oldest_timestamp_seconds', 'Age field of the oldest document per collection (Unix time).', perCollection((c) => c.oldest === null ? undefined : c.oldest / 1000), ['collection'])
  gauge('collector_storage_newest_timestamp_seconds', 'Age field of the newest document per collection (Unix time).', perCollection((c) => c.newest === null ? undefined : c.newest / 1000), ['collection'])
  gauge('collector_storage_growth_bytes_per_day', 'Net growth per collection over the last hour, in bytes a day (0 when retention deletes as fast as data comes).', perCollection((c) => c.growthPerDay ? c.growthPerDay.bytes : undefined), ['collection'])
  gauge('collector_storage_retention_seconds', 'Retention per collection (0: kept forever).', perCollection((c) => c.retentionMs / 1000), ['collection'])
  total('collector_storage_deleted_total', 'Documents deleted per collection, by reason (retention by the leader worker\'s sweeper, budget); resets when the leader worker is replaced. TTL deletions by the server are not counted per collection.',
    async () => {
      const storage = storageOf(await stats())
      if (!storage) return []
      return Object.entries(storage.collections).flatMap(([collection, c]) => Object.entries(c.deleted).filter(([, n]) => Number.isFinite(n)).map(([reason, n]) => [{ collection, reason }, n]))
    }, ['collection', 'reason'])
  gauge('collector_storage_used_bytes', 'Bytes the collector\'s collections use, data and indexes (what --max-storage is held to).', one((s) => s.usedBytes))
  gauge('collector_storage_max_bytes', 'The storage budget (--max-storage); no series without one.', one((s) => s.maxStorage || undefined))
  gauge('collector_storage_days_left', 'Days until the budget is reached at the current growth; no series without a budget or growth.', one((s) => s.daysLeft ?? undefined))
}

// An event with reasons is one series per reason (they add up to its
// count); one without has reason="".
// An event counted both with and without a reason (count() allows both)
// keeps the reasonless part as reason="", so the series add up to it.
function eventSeries ({ events, eventReasons }) {
  return Object.entries(events).flatMap(([event, n]) => {
    const reasons = Object.entries(eventReasons[event] || {})
    const withReason = reasons.reduce((sum, [, r]) => sum + r, 0)
    const series = reasons.map(([reason, r]) => [{ event, reason }, r])
    return n > withReason ? [...series, [{ event, reason: '' }, n - withReason]] : series
  })
}

function listen (server, port, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

function contextOptions ({ cert, key, ca, minVersion, maxVersion }) {
  return { cert, key, ...(ca ? { ca } : {}), minVersion, maxVersion }
}

// The two client_auth_type policies Node's server options cannot enforce alone.
function clientCertificateAccepted (check, socket) {
  if (!check) return true
  const cert = socket.getPeerCertificate()
  const present = Boolean(cert && Object.keys(cert).length > 0)
  return check === 'present' ? present : !present || socket.authorized
}

function reply (res, status, type, body) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' })
  res.end(body)
}

MetricsServer.reply = reply

module.exports = MetricsServer
