'use strict'

const crypto = require('node:crypto')
const http = require('node:http')
const https = require('node:https')
const client = require('prom-client')
const { loadWebConfig, CLIENT_AUTH } = require('./web-config')
const { BasicAuth } = require('./basic-auth')
const { createNoopLogger } = require('../shared/logger')
const LogLimiter = require('../shared/log-limiter')
const { printable } = require('../shared/printable-text')
const { isLoopback } = require('../shared/loopback')
const ListenError = require('../../exceptions/listen-error')
const { defineMetrics } = require('./metrics-series')

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
  constructor (balancer, { host, port, name, webConfig, logger, contentSecurity, route = null, what = 'metrics endpoint', webConfigFlag = '--metrics-web-config, option metricsWebConfig' }) {
    this.balancer = balancer
    this.what = what // what the warnings call it, and the flag that gives it TLS and basic auth
    this.webConfigFlag = webConfigFlag
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
      defineMetrics(this.registry, balancer)
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
    this.logger.warn({ metrics: this.address(), webConfig: this.webConfigFile }, `${this.what} on ${this.host} has no ${missing.join(' and ')}: anyone who reaches port ${this.port} can read it${this.auth ? ', and passwords cross the network in the clear' : ''} (see ${this.webConfigFlag})`)
  }

  _reject (reason, peer, detail) {
    this.rejected.inc({ reason })
    const said = detail && printable(detail) // a TLS error's text
    this.rejectLog.log(this.logger, 'warn', reason, { reason, peer, detail: said }, `metrics endpoint refused ${peer}: ${REJECT_REASONS[reason]}${said ? ` (${said})` : ''}`)
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
      // What failed inside (a database error, a path, a host) is the log's
      // to say, not a page anyone who reaches the port can read.
      // The path is the client's text, the error may quote it: escaped (printable-text.js) in the log.
      const id = crypto.randomBytes(4).toString('hex')
      const [shown, error] = [printable(path), printable(err.message)]
      this.logger.error({ id, path: shown, error }, `${this.name} endpoint: ${shown} failed (${error}); answered 500 ${id}`)
      return reply(res, 500, 'text/plain', `internal error ${id}: the server's log says why\n`)
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

function reply (res, status, type, body, headers = null) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers })
  res.end(body)
}

MetricsServer.reply = reply

module.exports = MetricsServer
