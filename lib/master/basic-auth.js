'use strict'

// Runs in the master: HTTP basic auth of the metrics endpoint against the
// bcrypt hashes of the web config's basic_auth_users. bcrypt itself runs in
// a worker thread (bcrypt-thread.js), so that a password checked never
// stalls the receive path.

const crypto = require('node:crypto')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { parseAddress } = require('../shared/allow-list')

// A verified password is trusted this long: Prometheus scrapes every few
// seconds, and each bcrypt costs ~70 ms (cost 10) by design.
const CACHE_TTL_MS = 60000
const CACHE_MAX = 64
// Checks waiting for the thread beyond which a request is answered 429 at
// once: a stream of wrong guesses cannot queue unbounded work. The bound per
// client address comes first, so that one address's guesses cannot fill the
// queue and lock everyone else out (Prometheus once its success expires);
// only guesses from many addresses at once reach the overall bound.
const MAX_PENDING = 8
const MAX_PENDING_PER_ADDRESS = 2

class BasicAuth {
  /** @param {Map<string, string>} users user name → bcrypt hash (at least one) */
  constructor (users) {
    this.secret = crypto.randomBytes(32)
    this.cache = new Map() // HMAC of (user, hash, password) → expiry, successes only
    this.pendingBy = new Map() // peerKey → checks pending; at most MAX_PENDING entries
    this.verifier = new BcryptVerifier()
    this.setUsers(users)
  }

  /** New users (a reloaded web config); what was verified before is forgotten. */
  setUsers (users) {
    this.users = users
    // An unknown user costs a bcrypt against a real hash too, so that the
    // time taken does not tell which user names exist: the costliest one,
    // or an unknown name would answer faster than the slowest real user.
    this.decoy = [...users.values()].reduce((a, b) => bcryptCost(b) > bcryptCost(a) ? b : a)
    this.cache.clear()
  }

  /**
   * Checks an Authorization header: 'ok'; 'missing' (none, or not Basic);
   * 'wrong' (unknown user or wrong password); 'busy' (too many checks
   * pending, from `peer` or in all).
   * @param {string | undefined} header
   * @param {string | undefined} peer the client's address (socket.remoteAddress)
   */
  async check (header, peer) {
    const credentials = parseBasic(header)
    if (!credentials) return 'missing'
    const { user, password } = credentials
    const stored = this.users.get(user)
    const hash = stored || this.decoy
    // Keyed by an HMAC under a per-process secret: the cache holds no
    // password, and how long a lookup takes tells nothing about one.
    const key = crypto.createHmac('sha256', this.secret).update(JSON.stringify([user, hash, password])).digest('base64')
    const expires = this.cache.get(key)
    if (stored && expires > Date.now()) return 'ok'
    if (expires !== undefined) this.cache.delete(key)
    const ok = await this._verify(password, hash, peerKey(peer))
    if (ok === null) return 'busy'
    // Failures are not cached: every guess costs a full bcrypt.
    if (!ok || !stored) return 'wrong'
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value)
    this.cache.set(key, Date.now() + CACHE_TTL_MS)
    return 'ok'
  }

  // true or false; null when the bound per address or in all is reached.
  async _verify (password, hash, key) {
    const mine = this.pendingBy.get(key) || 0
    if (mine >= MAX_PENDING_PER_ADDRESS || this.verifier.pending >= MAX_PENDING) return null
    this.pendingBy.set(key, mine + 1)
    try {
      return await this.verifier.verify(password, hash)
    } finally {
      const left = this.pendingBy.get(key) - 1
      if (left > 0) this.pendingBy.set(key, left)
      else this.pendingBy.delete(key)
    }
  }

  close () {
    return this.verifier.close()
  }
}

// $2y$10$...: the cost is the two digits after the second $ (web-config.js checked the format).
function bcryptCost (hash) {
  return Number(hash.slice(4, 6))
}

// Whom the bound per address applies to: an IPv4 address (mapped ones
// too), or an IPv6 address's /64, since one host usually holds a whole /64.
// Parsed as the allow-list parses sources.
function peerKey (address) {
  const text = String(address || '').split('%')[0]
  const bytes = Buffer.from(text, 'latin1')
  const words = new Uint32Array(4)
  const family = parseAddress(bytes, 0, bytes.length, words) // a mapped address parses as IPv4
  if (family === 4) return `${words[0] >>> 24}.${(words[0] >>> 16) & 255}.${(words[0] >>> 8) & 255}.${words[0] & 255}`
  if (family === 6) return `${words[0].toString(16)}:${words[1].toString(16)}::/64`
  return text
}

// RFC 7617: "Basic" base64(user ":" password); the user name ends at the first colon.
function parseBasic (header) {
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header || '')
  if (!match) return null
  const text = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = text.indexOf(':')
  return colon < 0 ? null : { user: text.slice(0, colon), password: text.slice(colon + 1) }
}

/** One worker thread, started at the first check, that answers whether a password matches a hash. */
class BcryptVerifier {
  constructor () {
    this.thread = null
    this.waiting = new Map()
    this.nextId = 0
  }

  get pending () {
    return this.waiting.size
  }

  verify (password, hash) {
    const thread = this.thread || this._start()
    const id = ++this.nextId
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, thread })
      thread.postMessage({ id, password, hash })
    })
  }

  _start () {
    // No execArgv: the test runner's or a debugger's flags are not for this thread.
    const thread = new Worker(path.join(__dirname, 'bcrypt-thread.js'), { execArgv: [] })
    thread.unref()
    thread.on('message', ({ id, ok }) => {
      const waiter = this.waiting.get(id)
      this.waiting.delete(id)
      if (waiter) waiter.resolve(ok === true)
    })
    const fail = (err) => {
      if (this.thread === thread) this.thread = null // the next check starts a new one
      for (const [id, waiter] of this.waiting) {
        if (waiter.thread !== thread) continue
        this.waiting.delete(id)
        waiter.reject(err)
      }
    }
    thread.on('error', fail)
    thread.on('exit', (code) => fail(new Error(`the bcrypt thread exited (code ${code})`)))
    this.thread = thread
    return thread
  }

  async close () {
    const thread = this.thread
    this.thread = null
    if (thread) await thread.terminate()
  }
}

module.exports = { BasicAuth }
