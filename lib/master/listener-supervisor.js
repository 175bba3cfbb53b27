'use strict'

const Backoff = require('../shared/backoff')
const ListenError = require('../../exceptions/listen-error')
const { briefError } = require('../shared/logger')

/**
 * The balancer's receiving end: opens the listener (`open()` gives one: a
 * protocol's, or the workers' under reuseport), reopens it after a socket
 * error with backoff (`retryDelay` ×1.5 per failure, reset on success),
 * keeps its port, reloads its files, closes it, and counts the kernel drops
 * of every listener it had. `isRunning()` says whether the balancer still
 * wants one; `emit` raises the balancer's 'listening', 'listenerError' and
 * 'error' events.
 */
class ListenerSupervisor {
  constructor ({ ctx, options, logger, counters, open, isRunning, emit }) {
    this.ctx = ctx
    this.options = options
    this.logger = logger
    this.counters = counters
    this.openOne = open
    this.isRunning = isRunning
    this.emit = emit
    this.backoff = new Backoff({ initial: options.retryDelay })
    this.listener = null
    // Kernel drops of listeners closed before the current one (each socket counts from 0).
    this.kernelDropsBefore = 0
    this.restartTimer = null
    this.wakeRetry = null
    this.restarting = null
    this.stopRequested = false
  }

  // The first bind fails the start on an error a retry cannot fix (port in
  // use, no permission, no such address: ListenError, ERR_LISTEN). Otherwise,
  // with retry on, it is retried with backoff until it works (a reopen after
  // the collector ran, a tcp_client whose server is not up yet).
  async open ({ first = false } = {}) {
    for (;;) {
      try {
        this.listener = await this.openOne()
        this.keepPort()
        this.backoff.reset()
        this.emit('listening', this.address())
        return
      } catch (err) {
        if (first && ListenError.isBindError(err)) throw new ListenError(this.options.protocol, this.ctx.host, this.ctx.port, err)
        if (!this.options.retry) throw err
        if (this.stopRequested) throw stoppedWhileOpening(err)
        await this.waitRetry(err)
        if (this.stopRequested) throw stoppedWhileOpening(err)
      }
    }
  }

  waitRetry (err) {
    const delay = this.backoff.next()
    this.counters.listenerRestarted()
    this.logger.warn({ error: briefError(err), delay }, `listener failed (${err.message}); retrying in ${delay} ms`)
    this.emit('listenerError', err, delay)
    return new Promise((resolve) => {
      this.wakeRetry = resolve
      this.restartTimer = setTimeout(resolve, delay)
    })
  }

  // Port 0 means "any port" only the first time: a listener reopened after
  // an error must come back where senders already send.
  keepPort () {
    const address = this.ctx.port === 0 && this.address()
    if (address && address.port) this.ctx.port = address.port
  }

  // A running listener broke: close it and open a new one after backoff.
  fail (err) {
    if (!this.isRunning() || this.restarting) return
    if (!this.options.retry) {
      this.logger.error({ error: briefError(err) }, `listener failed: ${err.message}`)
      return this.emit('error', err)
    }
    this.restarting = this.reopen(err).finally(() => { this.restarting = null })
  }

  async reopen (err) {
    await this.close()
    await this.waitRetry(err)
    if (!this.isRunning() || this.stopRequested) return
    await this.open().catch((e) => this.logger.error({ error: briefError(e) }, `listener could not be reopened: ${e.message}`))
  }

  // A renewed file that cannot be used (unreadable, not PEM, key and
  // certificate apart) leaves the one in use in place: logged and counted
  // (events.listenerReloadFailed), the collector keeps running.
  reload () {
    if (!this.listener || typeof this.listener.reload !== 'function') return
    try {
      this.listener.reload()
    } catch (err) {
      this.counters.event('listenerReloadFailed')
      this.logger.error({ error: briefError(err) }, `listener files not reloaded, the ones in use stay: ${err.message}`)
    }
  }

  // stop() must not wait out (or forever repeat) a retry delay.
  requestStop () {
    this.stopRequested = true
    clearTimeout(this.restartTimer)
    if (this.wakeRetry) this.wakeRetry()
    this.wakeRetry = null
  }

  // After requestStop(): a reopen under way ends, then the listener closes.
  async shutdown () {
    if (this.restarting) await this.restarting
    await this.close()
  }

  async close () {
    const listener = this.listener
    this.listener = null
    if (!listener) return
    await listener.close().catch(() => {})
    this.kernelDropsBefore += kernelDropsOf(listener)
  }

  /** dropped.kernel as it stands: what closed listeners counted plus the current one's. */
  kernelDrops () {
    return this.kernelDropsBefore + (this.listener ? kernelDropsOf(this.listener) : 0)
  }

  address () {
    return this.listener ? this.listener.address() : null
  }

  /** The UDP receive path in use ('native' or 'dgram'); null for other protocols or when not listening. */
  receiver () {
    return (this.listener && this.listener.receiver) || null
  }
}

// stop() during a start that was still retrying (a tcp_client whose server is not up): the start fails as stopped, the last attempt's error its cause.
function stoppedWhileOpening (err) {
  return new Error(`stopped before the listener opened (last attempt: ${err.message})`, { cause: err })
}

// A protocol's listener may count kernel drops (UDP does); others have none.
function kernelDropsOf (listener) {
  return typeof listener.kernelDrops === 'function' ? listener.kernelDrops() : 0
}

module.exports = ListenerSupervisor
