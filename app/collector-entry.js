'use strict'

// The process entry of one collector, run under PM2 by the launcher and in
// the foreground by `collector run`:
//   node app/collector-entry.js <collector name|path> [flags]
// It owns the process: signals (SIGINT/SIGTERM drain and exit 0, or 1 if
// messages were dropped at shutdown; a second signal forces exit 1, the same
// signal again within SAME_SIGNAL_MS being the same one; SIGUSR2 rolls the
// workers), the stats file `status` and `top` read, PM2 metrics, and
// uncaught errors (one log line each, never a stack).

const os = require('node:os')
const { performance } = require('node:perf_hooks')
const pino = require('pino')
const { loadCollector } = require('./collector-registry')
const { createMetrics } = require('./metrics')
const stats = require('./stats-file')
const { briefError } = require('../lib/shared/logger')

const STATS_INTERVAL_MS = 1000
const EXIT = require('./exit-codes')
// One signal sent to a process and to its process group (`timeout -s INT`,
// a terminal's Ctrl-C reaching a wrapper too) arrives twice within
// milliseconds: the same signal again within this window is the same one.
// Short enough that a person's deliberate second Ctrl-C still forces exit.
const SAME_SIGNAL_MS = 500

/**
 * Parses argv, starts the collector and keeps it running until a signal.
 * Resolves once started (or with the exit code already set on failure).
 * @param {string[]} argv `[collector, ...flags]`
 * @param {object} [io] `{ env, stdout, stderr, exit }`, for embedding (the CLI)
 * @returns {Promise<object|null>} the running entry `{ collector, shutdown(signal) }`, or null
 */
async function main (argv, io = {}) {
  const ctx = { env: process.env, stdout: process.stdout, stderr: process.stderr, exit: (code) => process.exit(code), ...io }
  const parsed = parseArgs(argv, ctx)
  if (!parsed) return null
  const { mod, config, target } = parsed
  const logger = createLogger(config)
  const entry = new Entry({ mod, config, target, logger, ctx })
  await entry.start()
  return entry
}

function parseArgs (argv, ctx) {
  const [target, ...flags] = argv
  if (!target || target === '--help' || target === '-h') {
    ctx.stderr.write('usage: collector-entry <rtcp|syslog|path of a collector module> [flags]\n')
    ctx.exit(target ? 0 : EXIT.BAD_USAGE)
    return null
  }
  try {
    const mod = loadCollector(target)
    const config = new mod.Config(flags, ctx.env).getConfig()
    if (config.help) {
      ctx.stdout.write(new mod.Config(flags, ctx.env).help())
      ctx.exit(0)
      return null
    }
    return { mod, config, target: mod.target }
  } catch (err) {
    if (!err || !err.code) throw err
    ctx.stderr.write(`collector: ${err.message}\n`)
    ctx.exit(EXIT.BAD_USAGE)
    return null
  }
}

/**
 * JSON lines for machines (PM2's log files, a pipe), readable lines for a
 * person at a terminal: --log-format auto (the default) picks by whether
 * stdout is a TTY.
 */
function createLogger (config, stdout = process.stdout) {
  const base = { pid: process.pid, hostname: os.hostname(), collector: config.name }
  const pretty = config.logFormat === 'pretty' || (config.logFormat !== 'json' && Boolean(stdout.isTTY))
  // pino-pretty is loaded only for a person's terminal (or --log-format pretty).
  const destination = pretty ? require('./pretty-log').prettyStream(stdout) : pino.destination({ dest: 1, sync: true })
  return pino({ level: config.logLevel, base }, destination)
}

class Entry {
  constructor ({ mod, config, target, logger, ctx }) {
    this.config = config
    this.target = target
    this.logger = logger
    this.ctx = ctx
    this.collector = new mod.Collector({ ...config, logger })
    this.dir = stats.statsDir({ env: ctx.env })
    this.previous = null
    this.previousAt = 0
    this.timer = null
    this.publishing = null
    this.signals = 0
    this.lastSignal = null
    this.lastSignalAt = 0
    this.rolling = null
    this.metrics = createMetrics({ restartWorkers: () => this.restartWorkers(), env: ctx.env })
  }

  async start () {
    try {
      const release = stats.claimName(this.dir, this.config.name)
      process.once('exit', release)
    } catch (err) {
      if (!err || err.code !== 'ERR_NAME_IN_USE') throw err
      this.ctx.stderr.write(`collector: ${err.message}\n`)
      await stats.writeFailure(this.dir, this.config.name, err).catch(() => {}) // for `collector start`'s report
      return this.ctx.exit(EXIT.startFailedCode(this.ctx.env))
    }
    this.installHandlers()
    try {
      await this.collector.start()
    } catch (err) {
      if (err && err.workerCode === 'ERR_INVALID_OPTION') return this.refused(err)
      this.logger.fatal({ error: briefError(err) }, `collector failed to start: ${err.message}`)
      await stats.writeFailure(this.dir, this.config.name, err).catch(() => {})
      // Under PM2, a first start that failed is not retried (the launcher
      // reports it and removes the app), a restart's is (app/exit-codes.js);
      // in a terminal it is exit 1 like any failure.
      return this.ctx.exit(EXIT.startFailedCode(this.ctx.env))
    }
    await stats.removeFailure(this.config.name, this.dir).catch(() => {})
    await this.publish()
    this.schedule()
    if (typeof process.send === 'function' && process.connected) process.send('ready')
  }

  // An option a worker refused at start (--retention-for naming a
  // collection the collector does not write): a configuration mistake, one
  // line and exit 2 like those the flags' own checks find.
  async refused (err) {
    await this.collector.stop().catch(() => {})
    const message = `invalid configuration: ${err.message.replace(/^worker failed to start: /, '')}`
    this.ctx.stderr.write(`collector: ${message}\n`)
    // Recorded as the flags' own mistakes are, so that `collector start` exits 2 as `run` does.
    await stats.writeFailure(this.dir, this.config.name, { code: 'ERR_INVALID_CONFIG', message }).catch(() => {})
    return this.ctx.exit(this.ctx.env.pm_id !== undefined ? EXIT.START_FAILED : EXIT.BAD_USAGE)
  }

  installHandlers () {
    this.onSignal = (signal) => this.shutdown(signal)
    this.onRestart = () => this.restartWorkers().catch(() => {})
    this.onMessage = (message) => { if (message === 'shutdown') this.shutdown('shutdown message') }
    this.onUncaught = (err) => this.crash(err, 'uncaught exception')
    this.onRejection = (err) => this.crash(err, 'unhandled rejection')
    process.on('SIGINT', this.onSignal)
    process.on('SIGTERM', this.onSignal)
    process.on('SIGUSR2', this.onRestart)
    process.on('message', this.onMessage)
    process.on('uncaughtException', this.onUncaught)
    process.on('unhandledRejection', this.onRejection)
  }

  /**
   * First signal: drain and exit (0, or 1 if anything was dropped at
   * shutdown). A second one exits 1 at once, unless it is the same signal
   * within SAME_SIGNAL_MS (one signal delivered to the process and its group).
   */
  async shutdown (signal) {
    const now = performance.now() // monotonic: a clock step cannot swallow a second Ctrl-C
    if (this.signals > 0 && signal === this.lastSignal && now - this.lastSignalAt < SAME_SIGNAL_MS) return
    this.lastSignal = signal
    this.lastSignalAt = now
    if (++this.signals > 1) {
      this.logger.warn({ signal }, 'second signal: exiting without draining')
      return this.ctx.exit(1)
    }
    this.logger.info({ signal }, 'stopping: draining workers')
    const code = await this.stop()
    this.ctx.exit(code)
  }

  async stop () {
    clearTimeout(this.timer)
    this.timer = null
    try {
      await this.collector.stop()
      if (this.publishing) await this.publishing
      await this.publish()
      const { dropped, kept } = leftAtShutdown(this.collector)
      if (dropped === 0 && kept === 0) return 0
      if (kept > 0) this.logger.error({ deadLettered: kept }, `${kept} messages not stored before the workers' flushTimeout at stop were kept as dead letters; collector replay stores them (what of them was stored already, once)`)
      if (dropped > 0) this.logger.error({ droppedShutdown: dropped }, `${dropped} messages dropped at shutdown: not stored before the workers' flushTimeout, and not kept`)
      return 1
    } catch (err) {
      this.logger.error({ error: briefError(err) }, `stop failed: ${err.message}`)
      return 1
    }
  }

  crash (err, what) {
    this.logger.fatal({ error: briefError(err) }, `${what}: ${err && err.message}`)
    if (this.signals++ > 0) return this.ctx.exit(1)
    this.stop().then(() => this.ctx.exit(1))
  }

  /** Rolling restart of the workers (SIGUSR2, the PM2 action); one at a time. */
  restartWorkers () {
    if (this.rolling) return this.rolling
    this.logger.info('rolling restart requested')
    this.rolling = this.collector.restart()
      .then(() => this.logger.info('rolling restart done'))
      .then(() => this.publish())
      .catch(async (err) => {
        this.logger.error({ error: briefError(err) }, `rolling restart failed: ${err.message}`)
        // In the stats file, for `collector restart` waiting on it (launcher.js waitRolled).
        this.restartFailed = { message: err.message, at: Date.now() }
        await this.publish()
        throw err
      })
      .finally(() => { this.rolling = null })
    return this.rolling
  }

  schedule () {
    this.timer = setTimeout(async () => {
      await this.publish()
      if (this.timer) this.schedule()
    }, STATS_INTERVAL_MS)
    this.timer.unref()
  }

  /** Samples stats(), writes the stats file, updates PM2 metrics. Never throws. */
  publish () {
    if (!this.publishing) {
      this.publishing = this.publishOnce()
        .catch((err) => this.logger.warn({ error: briefError(err) }, `could not publish stats: ${err.message}`))
        .finally(() => { this.publishing = null })
    }
    return this.publishing
  }

  async publishOnce () {
    const current = await this.collector.stats()
    const now = Date.now()
    const rates = stats.computeRates(current, this.previous, now - this.previousAt)
    this.retiredWrites = (this.retiredWrites || 0) + stats.retiredWritesOf(current, this.previous)
    this.previous = current
    this.previousAt = now
    const meta = { name: this.config.name, collector: this.target, pid: process.pid, interval: STATS_INTERVAL_MS, restartFailed: this.restartFailed || null, retiredWrites: this.retiredWrites }
    const snapshot = stats.buildSnapshot(meta, current, rates)
    await stats.writeStats(this.dir, snapshot)
    this.metrics.update(snapshot)
  }
}

// What the final summary says of the messages the workers could not store
// before their flushTimeout at stop: kept as dead letters, or dropped (a
// dead letter that could not be written; a worker's own socket's, receive
// 'reuseport'); 0 where a collector has no such counter.
function leftAtShutdown (collector) {
  const summary = typeof collector.summary === 'function' ? collector.summary() : null
  const count = (n) => Number.isFinite(n) ? n : 0
  return {
    dropped: count(summary && summary.dropped ? summary.dropped.shutdown : 0),
    kept: count(summary && summary.deadLetteredBy ? summary.deadLetteredBy.shutdown : 0)
  }
}

// Under PM2 the script is loaded by PM2's container; show our flags in `ps`.
function runAsScript () {
  const argv = process.argv.slice(2)
  if (process.env.pm_exec_path === __filename) process.title = `node ${__filename} ${argv.join(' ')}`
  main(argv).catch((err) => {
    process.stderr.write(`collector: ${err && err.message ? err.message : err}\n`)
    process.exit(1)
  })
}

if (require.main === module || process.env.pm_exec_path === __filename) runAsScript()

module.exports = { main }
