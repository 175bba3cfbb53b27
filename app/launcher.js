'use strict'

const path = require('node:path')
const async = require('async')
const CollectorError = require('../exceptions/collector-error')
const { toKebab } = require('../configs/flag-definitions')
const { loadCollector } = require('./collector-registry')
const stats = require('./stats-file')
const { APP_DEFAULTS, killTimeout, withPm2, call, findApp, removeApp, killDaemon, errorLogMark, startFailure } = require('./pm2-api')
const { isCollectorApp, installOf, movedApp } = require('./installs')
const database = require('./database-app')
const { startWaiterEnv } = require('./exit-codes')

/** The script PM2 runs for every collector. */
const ENTRY = path.join(__dirname, 'collector-entry.js')
/** The install of this package the CLI runs from. */
const INSTALL = installOf(ENTRY)

/**
 * Starts a collector under PM2 and resolves once it is online (the entry
 * sends 'ready' when its socket is bound and every worker is up).
 * Flags are checked here first, so a typo fails now, not in a PM2 log.
 * Secret flags (e.g. --mongodb-uri) are moved into the environment: the
 * process arguments, visible in `ps`, never carry credentials.
 *
 * @param {string} collector built-in name or path of a collector module
 * @param {string[]} [argv] the collector's flags
 * @param {object} [options]
 * @param {string} [options.name] PM2 app name (default: the config's --name)
 * @param {string} [options.pm2Home] PM2 home (default $PM2_HOME, ~/.pm2)
 * @param {string} [options.cwd] working directory of the collector (default process.cwd())
 * @param {object} [options.env] extra environment for the collector
 * @returns {Promise<CollectorProcess>}
 * @throws {InvalidConfigError|CollectorError}
 */
async function start (collector, argv = [], options = {}) {
  const cwd = path.resolve(options.cwd || process.cwd())
  const mod = loadCollector(collector, cwd)
  const config = new mod.Config(argv, { ...process.env, ...options.env }).getConfig()
  const name = options.name || config.name
  const { args, env: secretEnv } = splitSecrets(mod.Config.flags, argv)
  if (name !== config.name) args.push('--name', name)
  const app = {
    ...APP_DEFAULTS,
    // PM2 waits out the collector's own drain before it kills it.
    kill_timeout: killTimeout(config.drainTimeout),
    name,
    script: ENTRY,
    args: [mod.target, ...args],
    cwd,
    env: { ...options.env, ...secretEnv, COLLECTOR_STATS_DIR: statsDirOf(options), ...startWaiterEnv() }
  }
  return withPm2(options, async (api) => {
    await mustBeFree(api, name)
    const dir = statsDirOf(options)
    await stats.removeFailure(name, dir)
    try {
      return await waitOnline(api, app.name, dir, call(api, 'start', app), errorLogMark(options, name))
    } catch (err) {
      // A collector that cannot start is not left behind in a restart loop.
      await removeApp(api, name)
      await stats.removeStats(name, dir).catch(() => {})
      throw err
    }
  })
}

// PM2's start of a name it has restarts that app, whatever its script: a
// name taken by another install's collector or by another app is refused.
async function mustBeFree (api, name) {
  const taken = await findApp(api, name)
  if (!taken) return
  if (!isCollectorApp(taken)) throw new CollectorError(`PM2 already has an app named ${name} that is not a collector (${taken.pm2_env.pm_exec_path}); choose another --name`, 'ERR_COLLECTOR_EXISTS', { name })
  const proc = describe(taken)
  const from = proc.install ? `, from the install at ${proc.install}` : ''
  const next = proc.status === 'online'
    ? `use \`collector restart ${name}\``
    : `\`collector start ${name}\` (no flags) starts it again with its flags${from ? ' from this install' : ''}`
  throw new CollectorError(`a collector named ${name} already exists (${proc.status}${from}); ${next}, or delete it first (\`collector delete ${name}\`)`, 'ERR_COLLECTOR_EXISTS', { name })
}

const FAILURE_POLL_MS = 100

// Resolves once `starting` (PM2's start or restart) is done and the
// collector says it is running, or rejects with the collector's own reason
// as soon as its entry writes one (ERR_LISTEN: port in use, …), without
// waiting out PM2's listen_timeout.
async function waitOnline (api, name, dir, starting, errLogFrom = null) {
  let watching = true
  const failed = (async () => {
    while (watching) {
      const failure = await stats.readFailure(name, dir)
      if (failure) return failure
      await new Promise((resolve) => setTimeout(resolve, FAILURE_POLL_MS))
    }
  })()
  try {
    const outcome = await Promise.race([starting.then(() => null), failed])
    const failure = outcome || await stats.readFailure(name, dir)
    if (failure) throw new CollectorError(failure.message, failure.code || 'ERR_COLLECTOR_START', { name })
  } finally {
    watching = false
  }
  const proc = await find(api, name)
  const snapshot = proc && await stats.readStats(name, dir)
  if (!proc || proc.status !== 'online' || !snapshot || snapshot.pid !== proc.pid || snapshot.state !== 'running') throw notOnline(name, proc, errLogFrom)
  return proc
}

// Its entry is removed next (no restart loop left behind), and `collector
// logs` with it: the reason comes from its error log now, and the log's path.
// Only what this start wrote: PM2 appends to the log of an earlier run of the name.
function notOnline (name, proc, errLogFrom) {
  const status = proc ? proc.status : 'missing'
  const log = proc && proc.logs ? proc.logs.err : null
  const reason = startFailure(log, errLogFrom)
  return new CollectorError(`collector ${name} did not come online (status: ${status})${reason ? `: ${reason}` : ''}${log ? `; its log: ${log}` : ''}`, 'ERR_COLLECTOR_START', { name, status })
}

/**
 * Stops a collector: PM2 sends SIGINT, the collector drains and exits.
 * `left`: what its final summary (the stats file it wrote as it stopped)
 * says it could not store before its flushTimeout, `{ dropped, kept }`
 * (dropped.shutdown, deadLetteredBy.shutdown), or null when this stop
 * wrote none (it was not running).
 * @param {string} name
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<CollectorProcess & { left: { dropped: number, kept: number, buffered: number } | null }>}
 */
function stop (name, options = {}) {
  return withPm2(options, async (api) => {
    const before = await mustFind(api, name)
    const since = Date.now()
    await call(api, 'stop', name)
    const proc = await find(api, name)
    const final = await stats.readStats(name, before.statsDir || statsDirOf(options))
    const count = (n) => Number.isFinite(n) ? n : 0
    const left = final && final.state === 'stopped' && final.timestamp >= since && final.stats
      ? { dropped: count(final.stats.dropped && final.stats.dropped.shutdown), kept: count(final.stats.deadLetteredBy && final.stats.deadLetteredBy.shutdown), buffered: count(final.stats.buffer && final.stats.buffered) }
      : null
    return proc ? { ...proc, left } : proc
  })
}

/**
 * Rolling restart inside the collector (SIGUSR2: one worker at a time,
 * nothing lost); the PM2 process itself keeps running. With `wait`, resolves
 * once the stats file shows the restart finished.
 * @param {string} name
 * @param {{ pm2Home?: string, wait?: boolean, timeout?: number }} [options]
 * @returns {Promise<CollectorProcess>}
 */
function restart (name, options = {}) {
  const { wait = true, timeout = 120000 } = options
  const dir = statsDirOf(options)
  return withPm2(options, async (api) => {
    const proc = await mustFind(api, name)
    if (proc.status !== 'online') throw new CollectorError(`collector ${name} is ${proc.status}, not online; use \`collector start ${name}\``, 'ERR_COLLECTOR_NOT_RUNNING', { name })
    const before = await stats.readStats(name, dir)
    const asked = Date.now()
    await call(api, 'sendSignalToProcessName', 'SIGUSR2', name)
    if (wait && before) await waitRolled(name, dir, before, timeout, asked)
    return proc
  })
}

const ROLL_POLL_MS = 200

// Each slot replaced adds one to restarts.rolling (or the process itself was
// replaced); a restart that failed since it was asked for (a worker that no
// longer starts: a broken deploy) is said at once, with its reason. Polled
// with async.retry: one read of the stats file per try.
async function waitRolled (name, dir, before, timeout, asked) {
  const target = before.stats.restarts.rolling + before.stats.instances
  const rolled = async () => {
    const current = await stats.readStats(name, dir)
    if (current && (current.pid !== before.pid || current.stats.restarts.rolling >= target)) return
    if (current && current.restartFailed && current.restartFailed.at >= asked) {
      throw new CollectorError(`collector ${name}: rolling restart failed: ${current.restartFailed.message} (see its log)`, 'ERR_RESTART_FAILED', { name })
    }
    throw new CollectorError(`collector ${name}: rolling restart not finished after ${timeout} ms`, 'ERR_RESTART_TIMEOUT', { name })
  }
  await async.retry({
    times: Math.max(1, Math.ceil(timeout / ROLL_POLL_MS)),
    interval: ROLL_POLL_MS,
    errorFilter: (err) => err.code !== 'ERR_RESTART_FAILED'
  }, rolled)
}

/**
 * Stops (draining) and removes a collector from PM2, and its stats file.
 * @param {string} name
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<void>}
 */
function remove (name, options = {}) {
  return withPm2(options, async (api) => {
    const proc = await mustFind(api, name)
    await call(api, 'delete', name)
    await stats.removeStats(name, proc.statsDir || statsDirOf(options))
  })
}

/**
 * The collectors PM2 runs (apps whose script is the collector entry of
 * this install or of another: app/installs.js).
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<CollectorProcess[]>}
 */
function list (options = {}) {
  return withPm2(options, (api) => listCollectors(api))
}

/**
 * Starts a collector PM2 knows but that is not running (stopped, errored)
 * again, with the flags and environment it was started with; resolves once
 * it is online, or rejects with its own reason (it is then stopped, not
 * left restarting). One that runs from another install of this package
 * (an upgrade into a new directory) and is not running is moved to this
 * install: same flags, environment and working directory, this install's
 * entry; `movedFrom` then names the install it ran from.
 * @param {string} name
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<CollectorProcess & { movedFrom: string|null }>}
 * @throws {CollectorError} ERR_NO_SUCH_COLLECTOR, ERR_COLLECTOR_RUNNING, or the start's own
 */
function resume (name, options = {}) {
  return withPm2(options, async (api) => {
    const proc = await mustFind(api, name)
    if (proc.status === 'online' && proc.install) throw new CollectorError(`collector ${name} is running from the install at ${proc.install}; \`collector stop ${name}\`, then \`collector start ${name}\` moves it to this install`, 'ERR_COLLECTOR_RUNNING', { name })
    if (proc.status === 'online') throw new CollectorError(`collector ${name} is already running (pid ${proc.pid}); use restart`, 'ERR_COLLECTOR_RUNNING', { name })
    const dir = proc.statsDir || statsDirOf(options)
    await stats.removeFailure(name, dir)
    const starting = proc.install ? moveHere(api, proc) : call(api, 'restart', name)
    try {
      return { ...await waitOnline(api, name, dir, starting), movedFrom: proc.install }
    } catch (err) {
      // Stopped, not deleted: `collector ls` still shows it, with its flags.
      await call(api, 'stop', name).catch(() => {})
      throw err
    }
  })
}

// Another install's stopped collector, run from this install's entry with the
// same flags and environment: its flags are checked against this install's
// collector first (a flag this version refuses keeps the old entry as it
// was); then PM2's entry is replaced, since PM2 cannot change an app's script.
async function moveHere (api, proc) {
  const raw = await findApp(api, proc.name)
  try {
    const mod = loadCollector(proc.collector, raw.pm2_env.pm_cwd)
    new mod.Config(proc.args, { ...process.env, ...raw.pm2_env.env }).getConfig()
  } catch (err) {
    throw new CollectorError(`cannot move ${proc.name} from the install at ${proc.install} to this one: ${err.message}; it is left as it was`, err.code || 'ERR_COLLECTOR_START', { name: proc.name })
  }
  const app = movedApp(raw, ENTRY, APP_DEFAULTS)
  Object.assign(app.env, startWaiterEnv())
  await call(api, 'delete', proc.name)
  return call(api, 'start', app)
}

/**
 * A collector PM2 knows by that name, or null.
 * @param {string} name
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<CollectorProcess|null>}
 */
function findCollector (name, options = {}) {
  return withPm2(options, (api) => find(api, name))
}

/**
 * One collector PM2 knows, running or not.
 * @param {string} name
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<CollectorProcess>}
 * @throws {CollectorError} ERR_NO_SUCH_COLLECTOR
 */
function describeCollector (name, options = {}) {
  return withPm2(options, (api) => mustFind(api, name))
}

/**
 * @typedef {object} CollectorProcess
 * @property {string} name
 * @property {number} pmId
 * @property {number} pid 0 when not running
 * @property {string} status PM2 status: online, stopped, errored, launching…
 * @property {number} uptime ms since (re)started, 0 when not running
 * @property {number} restarts PM2 restarts (crashes), not rolling restarts
 * @property {string} collector built-in name or module path
 * @property {string[]} args the collector's flags
 * @property {string} statsDir where its stats file is written
 * @property {{ out: string, err: string }} logs PM2's log files of its stdout and stderr
 * @property {string|null} install the install of this package it runs from, when not this one (null)
 */

async function listCollectors (api) {
  const all = await call(api, 'list')
  return all.filter(isCollectorApp).map(describe)
}

function describe (p) {
  const env = p.pm2_env
  const args = [].concat(env.args || [])
  const online = env.status === 'online'
  return {
    name: p.name,
    pmId: p.pm_id,
    pid: online ? p.pid : 0,
    status: env.status,
    uptime: online ? Date.now() - env.pm_uptime : 0,
    restarts: env.restart_time || 0,
    collector: args[0],
    args: args.slice(1),
    statsDir: (env.env && env.env.COLLECTOR_STATS_DIR) || env.COLLECTOR_STATS_DIR,
    logs: { out: env.pm_out_log_path, err: env.pm_err_log_path },
    install: env.pm_exec_path === ENTRY ? null : installOf(env.pm_exec_path)
  }
}

async function find (api, name) {
  const all = await listCollectors(api)
  return all.find((p) => p.name === name) || null
}

async function mustFind (api, name) {
  const proc = await find(api, name)
  if (!proc) throw new CollectorError(`no collector named ${name} (see \`collector ls\`)`, 'ERR_NO_SUCH_COLLECTOR', { name })
  return proc
}

/**
 * Flags the Config marks `secret` go to the environment variable the flag
 * reads (`env`), never into args. A secret flag without one is refused.
 */
function splitSecrets (flags, argv) {
  const secrets = secretNames(flags)
  const args = []
  const env = {}
  for (let i = 0; i < argv.length; i++) {
    const token = String(argv[i])
    const match = /^--?([^=]+)(?:=(.*))?$/s.exec(token)
    const def = match && secrets.get(match[1])
    if (!def) {
      args.push(token)
      continue
    }
    if (!def.env) throw new CollectorError(`--${match[1]} is secret; it cannot be passed to a PM2 process on the command line`, 'ERR_SECRET_IN_ARGS')
    env[def.env] = match[2] !== undefined ? match[2] : String(argv[++i])
  }
  return { args, env }
}

function secretNames (flags) {
  const names = new Map()
  for (const [name, def] of Object.entries(flags)) {
    if (!def.secret) continue
    for (const alias of [name, toKebab(name), ...[].concat(def.alias || [])]) names.set(alias, def)
  }
  return names
}

function statsDirOf (options) {
  return stats.statsDir({ pm2Home: options.pm2Home })
}

module.exports = { ENTRY, INSTALL, APP_DEFAULTS, start, resume, stop, restart, delete: remove, list, find: findCollector, describe: describeCollector, killDaemon, ...database }
