'use strict'

const { probeWire } = require('../../lib/mongo/not-mongo')
const { redactMessage } = require('../../lib/mongo/redact-uri')

// The driver's monitor can wait for good on a check it sent over a
// connection that was closing. Seen with mongodb 7.8 in polling mode: when
// every connection to the server drops at once (a server restart, a proxy
// or a network cut), a pool connection's close marks the server Unknown and
// asks the monitor for a check at once; the monitor writes its `hello` to
// its own socket, already destroyed but whose 'close' has not been handled
// yet, and waits for a 'drain' that never comes (its socket timeout cannot
// fire on a destroyed socket). The server then stays Unknown to that
// client: every write fails server selection, for as long as the process
// lives, while the database answers any other connection. Polling is the
// driver's mode for servers without streaming checks (the embedded Java
// server, MongoDB before 4.4, several compatible servers).
//
// Told from the client's public heartbeat events: a polling check
// unanswered for longer than STUCK_AFTER_MS (a server answers `hello` in
// milliseconds; a streaming check waits by design and is not counted).
// Then the server is asked directly (lib/mongo/not-mongo.js); if it
// answers, the client is closed and connected again: its databases and
// collections stay valid. See docs/storage.md.

const STUCK_AFTER_MS = 5000
// A client is not reconnected again sooner than this.
const RECONNECT_INTERVAL_MS = 30000

class HeartbeatWatch {
  /**
   * @param {{ logger: object, uri: string }} host the worker's logger and its redacted URI
   */
  constructor ({ logger, uri }) {
    this.logger = logger
    this.uri = uri
    this.client = null
    this.started = new Map() // address → when its polling check began
    this.reconnecting = null // the reconnect under way, if any
    this.reconnectedAt = 0
    this.reconnects = 0
    this.stopped = false
  }

  /** Watches the checks of `client` (the connection's current one). */
  watch (client) {
    if (this.client === client) return
    this.client = client
    this.started.clear()
    client.on('serverHeartbeatStarted', (event) => {
      if (this.client !== client) return
      if (event.awaited) this.started.delete(event.connectionId)
      else this.started.set(event.connectionId, Date.now())
    })
    const done = (event) => this.client === client && this.started.delete(event.connectionId)
    client.on('serverHeartbeatSucceeded', done)
    client.on('serverHeartbeatFailed', done)
  }

  /** The addresses (host:port) whose polling check has waited longer than `afterMs`. */
  stuck (now = Date.now(), afterMs = STUCK_AFTER_MS) {
    const out = []
    for (const [address, at] of this.started) if (now - at > afterMs) out.push(address)
    return out
  }

  /**
   * A write failed server selection: if a check has waited past the limit
   * and the server answers a connection of our own, the client is
   * reconnected (at most every 30 s), counted and said in one line.
   */
  selectionFailed () {
    if (!this.client || this.reconnecting || this.stopped || Date.now() - this.reconnectedAt < RECONNECT_INTERVAL_MS) return
    const stuck = this.stuck().map((address) => ({ address, at: splitAddress(address) })).filter((s) => s.at)
    if (stuck.length === 0) return
    this.reconnecting = this._reconnectIfAnswering(this.client, stuck)
      .catch((err) => this.logger.warn({ uri: this.uri, error: redactMessage(err) }, `database client reconnect failed (${redactMessage(err)}); the next write tries again`))
      .finally(() => { this.reconnecting = null })
  }

  async _reconnectIfAnswering (client, stuck) {
    const verdicts = await Promise.all(stuck.map(({ at }) => probeWire({ ...at, tls: Boolean(client.options.tls) })))
    const answering = stuck.filter((_, i) => verdicts[i] === 'mongodb').map((s) => s.address)
    if (answering.length === 0 || this.stopped) return
    this.reconnectedAt = Date.now()
    this.reconnects++
    this.logger.warn({ uri: this.uri, servers: answering },
      `database answers at ${answering.join(', ')}, but the driver's check of it has had no reply for over 5 s (a connection stuck in the driver): reconnecting its client`)
    this.started.clear()
    await client.close().catch(() => {})
    if (!this.stopped) await client.connect()
  }

  /** No reconnect from now on; resolves once one under way is over. */
  async stop () {
    this.stopped = true
    if (this.reconnecting) await this.reconnecting
  }
}

/** host and port of a driver address, 'host:port' or '[v6]:port'. */
function splitAddress (address) {
  const at = /^\[([^\]]+)\]:(\d+)$/.exec(address) || /^([^:]+):(\d+)$/.exec(address)
  return at ? { host: at[1], port: Number(at[2]) } : null
}

module.exports = { HeartbeatWatch, splitAddress, STUCK_AFTER_MS }
