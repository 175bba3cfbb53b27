'use strict'

const { strategies, keyHash, entryStrategy, entryKeyHash } = require('./distribution')
const { entryEnd, entryDataStart, entryDataLength, entryAddressStart, entryAddressLength, datagramAt } = require('../shared/batch-codec')
const { AllowList } = require('../shared/allow-list')
const LogLimiter = require('../shared/log-limiter')
const { splitterOf, partMessages } = require('./split')
const { fillingBytes } = require('./pool-counters')

// Sources refused by `allow` are logged at most once per LogLimiter interval, per kind.
const NOT_ALLOWED_LINES = {
  datagram: 'datagrams from a source not in allow are dropped (dropped.notAllowed)',
  connection: 'connections from a source not in allow are closed at accept (eventReasons.connectionsRejected.notAllowed)'
}

/**
 * How a batch entry of the native UDP receiver finds its worker, decided
 * once per start from what the balancer declares (LoadBalancer#_declared:
 * whether it has a distribute(), a key() or an entryKey() of its own), and the one place that decides it:
 *
 *   declared                                          entry path
 *   built-in distribution, LoadBalancer's key()       the strategy on the entry's bytes
 *   round-robin or least-loaded, a key() of its own   the strategy (neither reads a key)
 *   hash, a key() of its own with entryKey()          hash of entryKey(buf, offset)
 *   hash, a key() of its own without entryKey()       a message per datagram, then key()
 *   distribution: a function of the user's            a message per datagram, then the function
 *   a distribute() of its own                         a message per datagram, then distribute()
 *
 * The per-message path (dgram, tcp, and the rows that build a message)
 * always goes through distribute(). `describe` says which was chosen and
 * why; the balancer logs it at start.
 */
function entryPlan (host, { distribute, key, entryKey }) {
  const name = host.name
  if (distribute) return { strategy: null, describe: `per message: ${name} has a distribute() of its own` }
  let hashOf = entryKeyHash
  if (key) hashOf = entryKey ? (buf, offset) => keyHash(host.entryKey(buf, offset)) : null
  const strategy = entryStrategy(host.strategy, host.balancer, hashOf)
  if (strategy !== null) return { strategy, describe: key && entryKey && host.strategy === strategies.hash ? 'per entry: hash of entryKey()' : 'per entry' }
  return { strategy, describe: key ? `per message: ${name} has a key() without entryKey()` : 'per message: distribution is a function of its own' }
}

/**
 * The master's hot path: picks a worker for each message (or batch entry),
 * appends it to that worker's batch and counts it; refuses what no worker
 * (nor the disk buffer) can take, and wakes the receive paths waiting for
 * room. Given what it uses of the balancer (`host`): `options`, `counters`,
 * `logger`, `strategy`, `name`, `distribute(workers, message)` and
 * `entryKey(buf, offset)` (the balancer's, maybe a subclass's), `pool()` and
 * `journal()` (read as they stand: both come and go with start and stop),
 * and `balancer`, the `this` a distribution strategy is called with
 * (DistributeFn's, public: round-robin keeps its place there).
 */
class Dispatcher {
  constructor (host) {
    this.host = host
    this.options = host.options
    this.counters = host.counters
    this.logger = host.logger
    this.allowList = host.options.allow ? new AllowList(host.options.allow) : null
    this.notAllowedLog = new LogLimiter()
    this.capacityWaiters = []
    this.plan = { strategy: null, describe: 'per message (not started)' }
    this.split = splitterOf(host.options.split, host.parts && ((buf, start, end) => this.partsOf(buf, start, end)))
    this.strict = host.options.affinity === 'strict' && host.strategy === strategies.hash
  }

  /**
   * What the protocols see of the balancer (ProtocolContext, index.d.ts):
   * where to listen, the dispatcher's entry points, the counters they
   * count into, and `fail(err)`, the listener supervisor's.
   */
  protocolContext (fail) {
    const { options, logger, counters } = this
    return {
      host: options.host,
      port: options.port,
      options,
      logger,
      dispatch: (message, force) => this.dispatch(message, force),
      dispatchEntries: (buf, end) => this.dispatchEntries(buf, end),
      drop: (reason) => counters.dropped(reason),
      dropRefused: () => this.dropRefused(),
      count: (event, reason) => { counters.event(event, reason) },
      allowList: this.allowList,
      logNotAllowed: (kind, address) => this.logNotAllowed(kind, address),
      log: (level, fields, msg) => this.logger[level](fields, msg),
      onCapacity: (fn) => this.onCapacity(fn),
      fail
    }
  }

  /** Chooses the entry path once, before any traffic: see entryPlan. */
  prepare (declared) {
    // A parts() the constructor did not see (a class field, one set in a subclass's constructor) is the balancer's too.
    if (declared.parts && !this.host.parts) {
      this.host.parts = (buf, start, end) => this.host.balancer.parts(buf, start, end)
      this.split = splitterOf(this.options.split, (buf, start, end) => this.partsOf(buf, start, end))
    }
    this.plan = entryPlan(this.host, declared)
    if (this.options.split === 'lines') this.plan = { strategy: null, describe: `per line (split lines), then ${this.plan.strategy === null ? this.plan.describe : 'the distribution'}` }
    else if (this.split !== null) this.plan = { ...this.plan, describe: `${this.plan.describe}; a message ${this.host.name}'s parts() splits, per part` }
  }

  /**
   * The per-message hot path: pick a worker, append to its batch, count.
   * Returns false when no worker can take the message, counting nothing:
   * the caller waits (onCapacity) or gives it up with `dropRefused()`.
   * `force` goes past maxInFlight rather than refuse (data already accepted).
   */
  dispatch (message, force) {
    if (this.split !== null) {
      const datas = this.split(message.data, 0, message.data.length)
      if (datas !== null) return this.dispatchParts(partMessages(message, datas), force, message.data.length)
    }
    return this.dispatchOne(message, force)
  }

  dispatchOne (message, force) {
    const worker = this.pick(message, force)
    if (worker === null) return false
    worker.push(message)
    this.counters.accepted(message.data.length)
    return true
  }

  /**
   * The parts of a split message (option `split`), each distributed on its
   * own: all of them or, when a part finds no worker, none (the caller
   * waits, or counts the whole as one message refused). A message with no
   * part (only line ends) is `dropped.empty`. Each part counts as a
   * message received; `bytes`, the whole's as it came, count once (parts
   * may repeat some of it, HEP's its chunks, or leave some out, line ends).
   */
  dispatchParts (parts, force, bytes) {
    if (parts.length === 0) {
      this.counters.dropped('empty')
      return true
    }
    const workers = parts.map((part) => this.pick(part, force))
    if (workers.includes(null)) return false
    for (let i = 0; i < parts.length; i++) {
      workers[i].push(parts[i])
      this.counters.accepted(i === 0 ? bytes : 0)
    }
    return true
  }

  /**
   * The hot path of the native UDP receiver: `buf[0, end)` holds datagrams
   * in batch format. Each goes to its worker as bytes; a message object is
   * built only when the plan says so.
   */
  dispatchEntries (buf, end) {
    if (this.allowList === null) this.runEntries(buf, 0, end)
    else this.dispatchAllowedEntries(buf, end)
  }

  // With `allow`: one lookup per datagram on the address bytes of its entry;
  // runs of allowed entries go on as without, refused ones are counted.
  dispatchAllowedEntries (buf, end) {
    const allowList = this.allowList
    let run = 0
    let offset = 0
    let refused = -1 // the first refused entry: logged once per batch
    while (offset < end) {
      const next = entryEnd(buf, offset)
      if (!allowList.allowsBytes(buf, entryAddressStart(offset), entryAddressLength(buf, offset))) {
        if (run < offset) this.runEntries(buf, run, offset)
        this.counters.dropped('notAllowed')
        if (refused < 0) refused = offset
        run = next
      }
      offset = next
    }
    if (run < end) this.runEntries(buf, run, end)
    if (refused >= 0) this.logNotAllowed('datagram', () => buf.latin1Slice(entryAddressStart(refused), entryAddressStart(refused) + entryAddressLength(buf, refused)))
  }

  // Entries buf[offset, end) to their workers: chosen from the entry's
  // bytes, or from a message built for each when the plan has no strategy.
  runEntries (buf, offset, end) {
    const counters = this.counters
    const strategy = this.plan.strategy
    while (offset < end) {
      const next = entryEnd(buf, offset)
      const datas = this.split === null ? null : this.split(buf, entryDataStart(buf, offset), next)
      if (datas !== null) {
        if (!this.dispatchParts(this.entryParts(buf, offset, datas), false, entryDataLength(buf, offset))) this.dropRefused()
        offset = next
        continue
      }
      const worker = strategy === null ? this.pick(datagramAt(buf, offset), false) : this.pickEntry(strategy, buf, offset)
      if (worker === null) {
        this.dropRefused()
      } else {
        worker.pushEntry(buf, offset, next)
        counters.accepted(entryDataLength(buf, offset))
      }
      offset = next
    }
  }

  // The parts of the entry at `offset` as messages: those that view the
  // receiver's buffer (reused once this returns) view the message's own
  // copy, as a message built from an entry has (a distribute() may keep it).
  entryParts (buf, offset, datas) {
    const message = datagramAt(buf, offset)
    const base = buf.byteOffset + entryDataStart(buf, offset)
    return partMessages(message, datas.map((d) => d.buffer === buf.buffer ? message.data.subarray(d.byteOffset - base, d.byteOffset - base + d.length) : d))
  }

  pickEntry (strategy, buf, offset) {
    const workers = this.candidates()
    if (workers.length === 0) return null
    const worker = this.entryWorker(strategy, workers, buf, offset)
    if (worker.state === 'gone') return this.canHold(worker) ? worker : null
    if (worker.state === 'ready' && !worker.saturated) return worker
    // Strict: a key waits for its own worker while it is saturated too (on
    // disk with the buffer), as while it is down; sent to another, a
    // template its worker had learned and not yet written was not there.
    if (this.strict) return this.canBuffer() ? worker : null
    const open = workers.filter((w) => !w.saturated)
    if (open.length > 0) return this.entryWorker(strategy, open, buf, offset)
    return this.canBuffer() ? worker : null
  }

  // An entryKey() of a balancer's may throw on a sender's bytes: round-robin then, as for distribute().
  entryWorker (strategy, workers, buf, offset) {
    try {
      return strategy(workers, buf, offset)
    } catch (err) {
      return this.distributeFailed(workers, err)
    }
  }

  pick (message, force) {
    const workers = this.candidates()
    if (workers.length === 0) return null
    const worker = this.choose(workers, message)
    if (worker.state === 'gone') return force || this.canHold(worker) ? worker : null
    if (worker.state === 'ready' && (force || !worker.saturated)) return worker
    if (this.strict) return this.canBuffer() ? worker : null
    const open = workers.filter((w) => !w.saturated)
    if (open.length > 0) return this.choose(open, message)
    if (this.canBuffer()) return worker
    return force ? workers[0] : null
  }

  // The workers a message may go to: those in rotation; with none up and
  // room in the disk buffer, the gone workers that stand for their slots'
  // next ones (WorkerPool#holders), so that the message waits on disk for
  // the slot distribute() picks, as it would with every worker up.
  // With affinity 'strict' (hash distribution), the gone ones stand for
  // their slots whenever a slot's worker is down, not only when all are: a
  // key's messages wait for its own slot's next worker.
  candidates () {
    const pool = this.host.pool()
    if (this.strict) return pool.rotation.length === this.options.instances ? pool.rotation : pool.rotation.concat(pool.holders())
    if (pool.rotation.length > 0 || !this.canBuffer()) return pool.rotation
    return pool.holders()
  }

  // A gone worker's slot takes more while the disk buffer has room, or,
  // without one, while what it holds in memory is under maxInFlight.
  canHold (worker) {
    return this.canBuffer() || (this.host.journal() === null && this.host.pool().heldFor(worker.slot) < this.options.maxInFlight)
  }

  // Every worker is full: with room in the disk buffer, the message goes to
  // the worker chosen for it all the same, and waits in the buffer.
  canBuffer () {
    return this.host.journal() !== null && !this.bufferFull()
  }

  // The disk buffer at its bound, counting the batches being filled for it.
  bufferFull () {
    const journal = this.host.journal()
    return journal !== null && journal.fullWith(fillingBytes(this.host.pool()))
  }

  // distribute() may be the user's: one that throws or answers with
  // something other than one of the workers it was given must not take the
  // master down or lose the message. It is counted and logged (once), and
  // the message goes round-robin.
  choose (workers, message) {
    let worker
    try {
      worker = this.host.distribute(workers, message)
    } catch (err) {
      return this.distributeFailed(workers, err)
    }
    if (workers.includes(worker)) return worker
    return this.distributeFailed(workers, new TypeError(`distribute() returned ${worker === null ? 'null' : typeof worker}, not one of the workers it was given`))
  }

  // A parts() of the balancer's may throw, or give what is not an array
  // of Buffers: the message stays whole, counted (events.partsErrors) and
  // logged once, the master up. Null or undefined keeps it whole.
  partsOf (buf, start, end) {
    let parts
    try {
      parts = this.host.parts(buf, start, end)
    } catch (err) {
      return this.partsFailed(err)
    }
    if (parts === null || parts === undefined) return null
    if (!Array.isArray(parts) || !parts.every(Buffer.isBuffer)) return this.partsFailed(new TypeError(`parts() returned ${Array.isArray(parts) ? 'an array with something other than a Buffer' : typeof parts}, not null or an array of Buffers`))
    return parts
  }

  partsFailed (err) {
    if (this.counters.event('partsErrors') === 1) this.logger.error({ err }, 'parts() failed; a message it fails on stays whole (counted in events.partsErrors)')
    return null
  }

  distributeFailed (workers, err) {
    if (this.counters.event('distributeErrors') === 1) this.logger.error({ err }, 'distribute() failed; messages go round-robin when it does (counted in events.distributeErrors)')
    return strategies['round-robin'].call(this.host.balancer, workers)
  }

  // `address`: the source's text, or a function giving it (built only when the line is written).
  logNotAllowed (kind, address) {
    const fields = () => ({ remote: typeof address === 'function' ? address() : address })
    this.notAllowedLog.log(this.logger, 'warn', kind, fields, NOT_ALLOWED_LINES[kind])
  }

  /**
   * Counts a message pick or pickEntry refused; the one place that says
   * why. With the disk buffer on, a refusal means the buffer is full
   * (bufferFull), or that no slot has a worker to come (queueFull: every
   * slot given up); without it, every worker is saturated or none is up
   * (queueFull).
   */
  dropRefused () {
    this.counters.dropped(this.bufferFull() ? 'bufferFull' : 'queueFull')
  }

  /** `fn` runs once, when a worker (or the disk buffer) has room again, or at stop. */
  onCapacity (fn) {
    this.capacityWaiters.push(fn)
  }

  notifyCapacity () {
    if (this.capacityWaiters.length === 0) return
    if (this.candidates().length === 0 || (!this.canBuffer() && !this.host.pool().rotation.some((w) => !w.saturated))) return
    this.releaseWaiters()
  }

  releaseWaiters () {
    for (const fn of this.capacityWaiters.splice(0)) fn()
  }
}

module.exports = { Dispatcher, entryPlan }
