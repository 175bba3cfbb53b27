'use strict'

const http = require('node:http')
const client = require('prom-client')

/**
 * The master's HTTP endpoints for operations (off unless `metricsPort` is
 * set): `/metrics` in the Prometheus text format (prom-client; the
 * balancer's counters, per-worker series labelled by slot, the workers' own
 * database counters, and the master's Node process metrics), `/healthz`
 * (200 while the process runs) and `/readyz` (200 while the listener is
 * bound and every worker slot is online, else 503 with a JSON reason).
 * Everything is read from the balancer when scraped: no second set of
 * counters to drift.
 */
class MetricsServer {
  /**
   * @param {object} balancer a LoadBalancer (summary(), stats(), readiness())
   * @param {{ host: string, port: number, name: string }} options
   */
  constructor (balancer, { host, port, name }) {
    this.balancer = balancer
    this.host = host
    this.port = port
    this.registry = new client.Registry()
    this.registry.setDefaultLabels({ collector: name })
    client.collectDefaultMetrics({ register: this.registry })
    this._defineMetrics()
    this.server = null
  }

  async start () {
    this.server = http.createServer((req, res) => this._handle(req, res))
    await new Promise((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(this.port, this.host, () => {
        this.server.off('error', reject)
        resolve()
      })
    })
    return this.address()
  }

  address () {
    return this.server ? this.server.address() : null
  }

  async stop () {
    const server = this.server
    this.server = null
    if (!server) return
    server.closeAllConnections()
    await new Promise((resolve) => server.close(() => resolve()))
  }

  async _handle (req, res) {
    const path = (req.url || '/').split('?')[0]
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, 'text/plain', 'method not allowed\n')
      if (path === '/metrics') return reply(res, 200, this.registry.contentType, await this.registry.metrics())
      if (path === '/healthz') return reply(res, 200, 'application/json', JSON.stringify({ status: 'ok' }) + '\n')
      if (path === '/readyz') {
        const ready = this.balancer.readiness()
        return reply(res, ready.ready ? 200 : 503, 'application/json', JSON.stringify(ready) + '\n')
      }
      return reply(res, 404, 'text/plain', 'not found: try /metrics, /healthz or /readyz\n')
    } catch (err) {
      return reply(res, 500, 'text/plain', `${err.message}\n`)
    }
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
    const one = (read) => async () => [[{}, read(await stats())]]
    const perWorker = (read) => async () => (await stats()).workers.map((w) => [{ slot: String(w.slot) }, read(w)]).filter(([, v]) => Number.isFinite(v))
    total('collector_messages_received_total', 'Messages received by the master (datagrams, TCP frames).', one((s) => s.received))
    total('collector_bytes_received_total', 'Bytes of the messages received.', one((s) => s.bytes))
    total('collector_messages_processed_total', 'Messages acknowledged by the workers (stored, for the MongoDB workers).', one((s) => s.processed))
    total('collector_messages_failed_total', 'Messages whose doWork failed.', one((s) => s.failed))
    total('collector_messages_dropped_total', 'Messages dropped, by reason (kernel: lost in the receive buffer).',
      async () => Object.entries((await stats()).dropped).filter(([reason]) => reason !== 'total').map(([reason, n]) => [{ reason }, n]), ['reason'])
    total('collector_events_total', 'Listener events (connections, connectionsRejected, tlsRejected, idleTimeouts, …), by reason where they have one.',
      async () => eventSeries(await stats()), ['event', 'reason'])
    gauge('collector_messages_in_flight', 'Messages handed to workers and not yet acknowledged.', one((s) => s.inFlight))
    gauge('collector_oldest_unacknowledged_seconds', 'Age of the oldest unacknowledged batch (a stalled database shows here).', one((s) => s.oldestUnackedMs / 1000))
    total('collector_worker_restarts_total', 'Workers respawned after they died.', one((s) => s.restarts.workers))
    total('collector_listener_restarts_total', 'Listener restarts after socket errors.', one((s) => s.restarts.listener))
    gauge('collector_ready', '1 while the listener is bound and every worker slot is online.', async () => [[{}, lb.readiness().ready ? 1 : 0]])
    total('collector_worker_messages_processed_total', 'Messages acknowledged, per worker slot (resets when a slot\'s worker is replaced).', perWorker((w) => w.processed), ['slot'])
    gauge('collector_worker_messages_in_flight', 'Messages in flight, per worker slot.', perWorker((w) => w.inFlight), ['slot'])
    total('collector_worker_db_writes_total', 'Database write operations, per worker slot (workers that report dbWrites).', perWorker((w) => w.custom && w.custom.dbWrites), ['slot'])
    total('collector_worker_db_errors_total', 'Database errors, per worker slot.', perWorker((w) => w.custom && w.custom.dbErrors), ['slot'])
    gauge('collector_worker_db_down', '1 while a worker cannot reach its database.', perWorker((w) => w.custom && typeof w.custom.dbDown === 'boolean' ? Number(w.custom.dbDown) : undefined), ['slot'])
  }
}

// An event with reasons is one series per reason (they add up to its
// count); one without has reason="".
function eventSeries ({ events, eventReasons }) {
  return Object.entries(events).flatMap(([event, n]) => eventReasons[event]
    ? Object.entries(eventReasons[event]).map(([reason, r]) => [{ event, reason }, r])
    : [[{ event, reason: '' }, n]])
}

function reply (res, status, type, body) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' })
  res.end(body)
}

module.exports = MetricsServer
