'use strict'

const { probeWire } = require('./not-mongo')
const { redactMessage } = require('./redact-uri')

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
// Told from the client's public events: a polling check unanswered for
// longer than STUCK_AFTER_MS (a server answers `hello` in milliseconds; a
// streaming check waits by design and is not counted) of a server the
// client holds Unknown.
// Then the server is asked directly (lib/mongo/not-mongo.js); if it
// answers, the client is closed and connected again: its databases and
// collections stay valid. See docs/storage.md. Used by the workers, on
// every failed write.

const STUCK_AFTER_MS = 5000
// A client is not reconnected again sooner than this.
const RECONNECT_INTERVAL_MS = 30000
// A connect that failed after the close (the server restarting, an
// election) is tried again, waiting this ×2 each time up to 30 s.
const CONNECT_RETRY_MS = 500

class HeartbeatWatch {
  /**
   * @param {{ logger: object, uri: string }} host a logger and the redacted URI, for the one line said
   */
  constructor ({ logger, uri }) {
    this.logger = logger
    this.uri = uri
    this.client = null
    this.started = new Map() // address → when its polling check began
    this.unknown = new Set() // addresses the client describes as Unknown now
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
    this.unknown.clear()
    client.on('serverDescriptionChanged', (event) => {
      if (this.client !== client) return
      if (event.newDescription.type === 'Unknown') this.unknown.add(event.address)
      else this.unknown.delete(event.address)
    })
    client.on('serverHeartbeatStarted', (event) => {
      if (this.client !== client) return
      if (event.awaited) this.started.delete(event.connectionId)
      else this.started.set(event.connectionId, Date.now())
    })
    const done = (event) => this.client === client && this.started.delete(event.connectionId)
    client.on('serverHeartbeatSucceeded', done)
    client.on('serverHeartbeatFailed', done)
  }

  /** The addresses (host:port) held Unknown whose polling check has waited longer than `afterMs`. */
  stuck (now = Date.now(), afterMs = STUCK_AFTER_MS) {
    const out = []
    for (const [address, at] of this.started) if (now - at > afterMs && this.unknown.has(address)) out.push(address)
    return out
  }

  /**
   * If a check has waited past the limit and the server answers a
   * connection of our own, the client is reconnected (at most every 30 s),
   * counted and said in one line. Called on every failed write: only the
   * stuck check and the server's answer decide.
   */
  check () {
    if (!this.client || this.reconnecting || this.stopped || Date.now() - this.reconnectedAt < RECONNECT_INTERVAL_MS) return
    const stuck = this.stuck().map((address) => ({ address, at: splitAddress(address) })).filter((s) => s.at)
    if (stuck.length === 0) return
    this.reconnecting = this._reconnectIfAnswering(this.client, stuck)
      .catch((err) => this.logger.warn({ uri: this.uri, error: redactMessage(err) }, `database client reconnect failed (${redactMessage(err)})`))
      .finally(() => { this.reconnecting = null; this.wake = null })
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
    this.unknown.clear()
    await client.close().catch(() => {})
    // A closed client stays closed until a connect succeeds: tried until then.
    for (let wait = CONNECT_RETRY_MS; !this.stopped; wait = Math.min(wait * 2, RECONNECT_INTERVAL_MS)) {
      try {
        await client.connect()
        return
      } catch (err) {
        if (this.stopped) return
        this.logger.warn({ uri: this.uri, error: redactMessage(err), retryInMs: wait }, `database client reconnect failed (${redactMessage(err)}); trying again in ${wait} ms`)
        await new Promise((resolve) => { this.wake = resolve; setTimeout(resolve, wait) })
      }
    }
  }

  /** No reconnect from now on; one under way ends (its client closed), then this resolves. */
  async stop () {
    this.stopped = true
    if (!this.reconnecting) return
    if (this.wake) this.wake()
    await this.client.close().catch(() => {})
    await this.reconnecting
  }
}

/** host and port of a driver address, 'host:port' or '[v6]:port'. */
function splitAddress (address) {
  const at = /^\[([^\]]+)\]:(\d+)$/.exec(address) || /^([^:]+):(\d+)$/.exec(address)
  return at ? { host: at[1], port: Number(at[2]) } : null
}

module.exports = { HeartbeatWatch, splitAddress, STUCK_AFTER_MS }
